"""Classes of the seventy-seventh round (fresh_142 to fresh_144), scored blind at ac4c2c6: an error
said logged under a worse name than it is (corrected errors recorded as uncorrected machine
checks, in Japanese) and a warning said to be a red herring (the evaluation false alarm, read to
fix it, not blind) give no finding (`said.misread`); CUDA's runtime names for an illegal address
and a failed allocation, Dask's worker past its memory budget, Open MPI's failed TCP connect,
Horovod said to hang, an older kernel's `Kernel panic: CPU context corrupt`, a zpool said to be
in the DEGRADED state; for the BMC and dist families' development floors, IBM IMM's DIMM scrub
failure and disabled DIMM, and MVAPICH2's `Error parsing CPU mapping string`."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_142", "0001", Category.GPU_APPLICATION, "cuda.illegal_address"),
        ("fresh_142", "0013", Category.GPU_OOM, "cuda.oom"),
        ("fresh_143", "0001", Category.HOST_MEMORY, "host.oom_killer"),
        ("fresh_143", "0005", Category.BENIGN, "said.misread"),
        ("fresh_143", "0009", Category.NETWORK, "mpi.tcp_connect_failed"),
        ("fresh_143", "0023", Category.HANG, "stalled.said"),
        ("fresh_143", "0024", Category.APPLICATION, "mpi.affinity_mapping"),
        ("fresh_144", "0004", Category.HOST_HARDWARE, "host.bmc_dimm_failed"),
        ("fresh_144", "0012", Category.BENIGN, "said.misread"),
        ("fresh_144", "0014", Category.HOST_HARDWARE, "host.mce_uncorrected"),
        ("fresh_144", "0029", Category.HOST_STORAGE, "storage.zpool_degraded"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("CUDA error at main.cu:12 code=700(cudaErrorIllegalAddress)", Category.GPU_APPLICATION),
        (
            "distributed.nanny.memory - WARNING - Worker tcp://10.0.0.5:4000 (pid=77) exceeded 95% "
            "memory budget. Restarting...",
            Category.HOST_MEMORY,
        ),
        ("mpirun hangs after the first allreduce when two nodes are used.", Category.HANG),
        ("Our zpool tank was in the FAULTED state this morning.", Category.HOST_STORAGE),
        # an uncorrected machine check that nobody says was logged wrongly
        (
            "Uncorrectable Machine Check Exception (Processor 2, APIC ID 0x00000044, Bank "
            "0x00000004, Status 0xBE000000'00800400)",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        # (the statement on its own line, as the advisory writes it: a line that also quotes the
        # message's name is read as the message)
        "Corrected errors may be incorrectly logged as UMCE events in the IML; update the System "
        "ROM.\nUncorrectable Machine Check Exception (Processor 1, Bank 0x00000000, Status "
        "0x80000040'000F0005)",
        "node3:11:20 [1] NCCL WARN [Rem Allocator] Poll failed with error 1\n\nIt turned out to "
        "be a red herring; the hang was in our data loader.",
        "The zpool is in the ONLINE state after the resilver.",
    ]
)
