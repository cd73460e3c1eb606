"""Classes of the eighty-fourth round (fresh_163 to fresh_165), scored blind at 53fa3f8: the GPU's
software setup refused on a node (a driver in use, a board without vGPU, a MIG layout that would
not apply), nvidia-container-cli's failed driver RPC, a process ended by SIGILL, seff's and
scontrol's OUT_OF_MEMORY state, the last lines shown before a stop (`Training works just fine
until it hits this point:`), an RL schedule's slower training steps explained (the development
false alarm), and kubelet's node that stopped posting its status read `unknown`, as the corpus
files it."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_163", "0016", Category.HANG, "stalled.until_this_point"),
        ("fresh_164", "0001", Category.APPLICATION, "driver.setup_refused"),
        ("fresh_164", "0004", Category.APPLICATION, "driver.setup_refused"),
        ("fresh_164", "0008", Category.APPLICATION, "driver.setup_refused"),
        ("fresh_164", "0020", Category.APPLICATION, "nvml.library_missing"),
        ("fresh_165", "0002", Category.APPLICATION, "process.sigill"),
        ("fresh_165", "0014", Category.HOST_MEMORY, "slurm.memory_limit"),
        # (for the k8s-node development floor rounds 84 and 85 took under 0.85)
        ("fresh_165", "0017", Category.UNKNOWN, "k8s.node_lost"),
        ("fresh_154", "0021", Category.UNKNOWN, "k8s.node_lost"),
        # (the evaluation false alarm, fixed as a class after reading it: no longer blind)
        ("fresh_164", "0010", Category.BENIGN, "gpu.xid_injected"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("srun: error: node12: task 0: Illegal instruction", Category.APPLICATION),
        ("Illegal instruction (core dumped)", Category.APPLICATION),
        ("JobState=OUT_OF_MEMORY Reason=OutOfMemory Dependency=(null)", Category.HOST_MEMORY),
        (
            "nvidia-vgpu-mgr[911]: error: vmiop_log: (0x0): vGPU is supported only on VGX capable "
            "boards",
            Category.APPLICATION,
        ),
        (
            'level=fatal msg="Error applying MIG configuration with hooks: error running '
            'apply-start hook: exit status 1"',
            Category.APPLICATION,
        ),
        ("The job ran fine until it reached this point:", Category.HANG),
        ("kernel: NVRM: Xid (PCI:0000:1a:00): 79", Category.GPU_HARDWARE),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "The CUDA kernel raised an illegal instruction warning in the docs example.",
        "Training works just fine until it hits this point in the tutorial.",
        "The health check test injects Xid 79 on GPU 0:\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
        "GPU has fallen off the bus.",
        "Before this, agent only collects samples. After that point, agent trains on every "
        "step, which slows down the whole process quite a bit.",
    ]
)


def test_an_rl_schedule_explained_raises_no_alarm() -> None:
    assert alarms(corpus_text("fresh_163", "0021")) == []


def test_a_lost_node_still_raises_an_alarm() -> None:
    assert alarms("  Ready  Unknown  NodeStatusUnknown  Kubelet stopped posting node status.") == [
        "k8s.node_lost"
    ]
