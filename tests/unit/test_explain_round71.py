"""Classes of the seventy-first and seventy-second rounds (fresh_124 to fresh_129), scored blind
at the same commit and read as classes together: a fault said to be caused on purpose (its
storage errors are a test's), a reply that tells the asker what they should see (no report),
a trainer's own loss field or PyTorch's printed tensor at NaN and a NaN loss before Korean
words, SAS HBAs' task aborts, ext4 mounted with errors and btrfs' error counters, PaddlePaddle's
GPU out-of-memory error, a card said lost in Chinese, the NVLink subnet manager not running,
Compute Engine's and Azure's GPU provisioning refusals, and a Slurm node with less memory than
its definition."""

from __future__ import annotations

from bench.explain import verdict
from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_rounds_is_read = round_tests(
    [
        ("fresh_125", "0000", Category.APPLICATION, "slurm.node_config_mismatch"),
        ("fresh_125", "0021", Category.APPLICATION, "cloud.gpu_live_migration"),
        ("fresh_125", "0022", Category.APPLICATION, "cloud.gpu_driver_extension_failed"),
        ("fresh_126", "0004", Category.NUMERICAL, "training.nan_loss"),
        ("fresh_126", "0015", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_126", "0020", Category.NUMERICAL, "training.nan_loss"),
        ("fresh_127", "0010", Category.APPLICATION, "fabric.nvlsm_missing"),
        ("fresh_128", "0000", Category.HOST_STORAGE, "host.scsi_abort"),
        ("fresh_128", "0001", Category.HOST_STORAGE, "host.scsi_abort"),
        ("fresh_128", "0004", Category.HOST_STORAGE, "host.disk_io"),
        ("fresh_128", "0006", Category.HOST_STORAGE, "host.disk_io"),
        ("fresh_128", "0022", Category.BENIGN, "said.fault_injected"),
        ("fresh_129", "0004", Category.NUMERICAL, "training.nan_loss"),
        ("fresh_129", "0007", Category.GPU_OOM, "cuda.oom"),
    ]
)

_NVME_TIMEOUT = "[  126.053704] nvme nvme0: I/O 0 QID 2 timeout, aborting"

test_the_classes_hold_in_other_words = read_as_tests(
    [
        # the same timeout with no test said is the disk's
        (_NVME_TIMEOUT, Category.HOST_STORAGE),
        ("train iter: 300 loss_total: nan lr: 0.0001", Category.NUMERICAL),
        ("step 12: loss tensor(inf, device='cuda:0', grad_fn=<MeanBackward0>)", Category.NUMERICAL),
        (
            "[ 12.1] sd 2:0:3:0: attempting task abort! scmd(0x0000000012345678)",
            Category.HOST_STORAGE,
        ),
        (
            "[ 9.0] EXT4-fs (nvme0n1p2): warning: mounting fs with errors, running e2fsck is "
            "recommended",
            Category.HOST_STORAGE,
        ),
        ("[/dev/nvme0n1].read_io_errs    12", Category.HOST_STORAGE),
        (
            "Out of memory error on GPU 3. Cannot allocate 2.000000GB memory on GPU 3",
            Category.GPU_OOM,
        ),
        ("训练到一半就掉卡了，nvidia-smi 只剩7张卡", Category.GPU_HARDWARE),
        ("The NVLSM service is not running on this B200 node.", Category.APPLICATION),
        (
            "[2024-01-01T00:00:00.000] error: Node gpu12 has low real_memory size "
            "(515000 < 1031000)",
            Category.APPLICATION,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "I'm deliberately not completing write commands, so after 30 seconds the guest aborts:\n"
        + _NVME_TIMEOUT,
        "We ran a fault-injection test on the array:\n"
        "[ 12.1] sd 2:0:3:0: attempting task abort! scmd(0x0000000012345678)",
        "You should definitely see a drop in performance for the duration of the controller "
        "reset, but it should pick up immediately once the controller is operational again.",
        "[/dev/nvme0n1].read_io_errs    0\n[/dev/nvme0n1].corruption_errs 0",
    ]
)


_NCCL_WARN = (
    "(worker1, rank=1, pid=4888, ip=10.60.0.4) [nccl-0:3]:nccl-0:10479:10520 [3] "
    "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.7<57649> failed : "
    "Software caused connection abort"
)


def test_a_terminal_cut_between_nccl_and_its_level_is_joined() -> None:
    """A window cut right after `NCCL` leaves its level (`WARN`) first on the next line, which
    reads as a message of its own unless the cut is joined back (records._NCCL_LEVEL)."""
    cut = _NCCL_WARN.index("NCCL WARN") + len("NCCL ")
    head = _NCCL_WARN[:cut]
    wrapped = head + "\n" + _NCCL_WARN[cut:]
    assert len(head) == 100  # a usual terminal width (records.TERMINAL_WIDTHS)
    assert verdict(wrapped, hint=False)[0] == verdict(_NCCL_WARN, hint=False)[0] == "network"
