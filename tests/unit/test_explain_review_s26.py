"""A reviewer's probes of the classes of rounds 60 to 63 (session 26): look-alikes the new rules
must leave alone (advice, conditions, questions, denials, a rate said per device, a time far
below a published one, a document naming an exception) and variants they must read."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, silence_tests

test_look_alikes_stay_silent = silence_tests(
    [
        # container.gpus_lost_over_time: no failure, a question, advice, a condition
        "After a few hours of training in the container, GPU utilization stays at 100% and "
        "nvidia-smi looks healthy.",
        "Q: does nvidia-smi in a docker container keep working after a while?",
        "Run sudo systemctl daemon-reload on the host, then restart the pod so it sees the GPUs.",
        "The container uses 8 GPUs and works fine on the host too.",
        "If nvidia-smi fails in the container after a few hours, restart the pod.",
        # scaling: a rate per device is not a total
        "1 GPU: 100 samples/sec\n2 GPUs: 190 samples/sec\n4 GPUs: 95 samples/sec per GPU",
        # said.multinode_only: no failure across nodes
        "Works fine on one node, but on 2 nodes we see a different loss curve, probably due to "
        "the larger global batch.",
        "The job works on a single node but we have not tried multiple nodes yet.",
        # said.killed_by_system: another reason, or over
        "The job was killed by the system because it exceeded the time limit.",
        "We ran out of host memory, so we added swap; it is fine now.",
        # said.nonfinite: a step the scaler or the code skipped
        "The grad norm is inf for the first few steps while the loss scaler backs off.",
        # said.network_setting_fixes: advice, and an interface pinned
        "Tip: set NCCL_IB_DISABLE=1 and the job runs over TCP, useful for debugging.",
        "It worked after I set NCCL_SOCKET_IFNAME=eth0.",
        # a time far below a published one is faster
        "Step time is far lower than mentioned in the README (0.8s vs 1.2s).",
        # documents naming a state or an exception
        "The docs say a GPU shows [GPU requires reset] in nvidia-smi when it needs a reset.",
        "cuda-gdb docs: CUDA_EXCEPTION_14 is a Warp Illegal Address exception.",
    ]
)

test_variants_are_read = read_as_tests(
    [
        (
            "nvidia-smi inside the pod started failing 2 days later with Failed to initialize "
            "NVML: Unknown Error",
            Category.APPLICATION,
        ),
        (
            "Inside the container, nvidia-smi fails with Failed to initialize NVML: Unknown "
            "Error, on the host it works.",
            Category.APPLICATION,
        ),
        # a consequence said of a measured straggler is no explanation
        (
            "GPU 3 runs at 1.9 s/it while the others run at 1.0 s/it, so training will be slower "
            "until we replace it.",
            Category.STRAGGLER,
        ),
        # a denial or a question is no `normal`, a node scheduled is no planned work
        ("The /scratch NFS mount hangs on gpu-12, this is not normal", Category.HOST_STORAGE),
        (
            "The /scratch NFS mount hangs on the nodes scheduled for the training job.",
            Category.HOST_STORAGE,
        ),
        # a warning of something else beside a hang leaves the hang
        (
            "The job hangs forever at step 5000 after NCCL WARN Ignoring unknown env var NCCL_FOO",
            Category.HANG,
        ),
        # a crash command denied, and a real panic
        (
            "We did NOT run echo c > /proc/sysrq-trigger; the node panicked on its own.\n"
            "Kernel panic - not syncing: Fatal exception",
            Category.HOST_HARDWARE,
        ),
    ]
)
