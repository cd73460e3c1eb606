"""Classes of the eighty-fifth round (fresh_166 to fresh_168), scored blind at 53fa3f8: NVSHMEM's
transports that cannot use GPU memory with the NIC and a queue pair that would not move
(`ibv_modify_qp failed`), NCCL with no socket address (`neither AF_INET(2) nor AF_INET6(10)`), the
C++ runtime's `pure virtual method called`, an mdstat line in markdown's bold, libceph's monitor
socket closed before its handshake; a text that speaks of stragglers in general (the two
development false alarms); and the data stores' and filesystems' classes that brought the
storage-fs development family back over 0.85 (Kafka's failed log directory, etcd's WAL CRC, ext4
without its crc32c driver)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_166", "0014", Category.HOST_STORAGE, "netfs.server_wait"),
        ("fresh_166", "0017", Category.HOST_STORAGE, "storage.md_degraded"),
        ("fresh_167", "0010", Category.NETWORK, "rdma.gpu_memory_unregistered"),
        ("fresh_167", "0012", Category.NETWORK, "rdma.gpu_memory_unregistered"),
        ("fresh_167", "0026", Category.APPLICATION, "nccl.no_socket_address"),
        ("fresh_168", "0008", Category.APPLICATION, "process.pure_virtual_call"),
        # (for the storage-fs development floor this round took under 0.85)
        ("fresh_137", "0007", Category.HOST_STORAGE, "storage.kafka_log_dir_failed"),
        ("fresh_152", "0003", Category.HOST_STORAGE, "storage.wal_crc_mismatch"),
        ("fresh_77", "0002", Category.HOST_STORAGE, "kernel.fs_checksum_driver_missing"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("[rank0]: pure virtual method called", Category.APPLICATION),
        (
            "libceph: mon2 (2)10.0.0.3:3300 socket closed (con state V2_BANNER_PREFIX)",
            Category.HOST_STORAGE,
        ),
        ("etcd: wal: crc mismatch", Category.HOST_STORAGE),
        ("EXT4-fs (nvme0n1p2): Cannot load crc32c driver.", Category.HOST_STORAGE),
        (
            "WARN: device mlx5_4 cannot allocate buffer on the specified memory type. Skipping...",
            Category.NETWORK,
        ),
        ("One slow GPU in our run can bottleneck the whole job at step 200.", Category.STRAGGLER),
        (
            "gpu1:4024:4048 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for "
            "accept 3.",
            Category.NETWORK,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "libceph: mon0 (1)10.0.0.8:3300 socket closed (con state OPEN)",
        "A single slow node can bottleneck the entire job, so this feature flags outlier ranks.",
        "The straggler will significantly affect the performance of training in a collective job.",
    ]
)


def test_texts_that_speak_of_stragglers_in_general_raise_no_alarm() -> None:
    assert alarms(corpus_text("fresh_168", "0028")) == []
    assert alarms(corpus_text("fresh_168", "0029")) == []


def test_socket_retries_that_connected_raise_no_alarm() -> None:
    # (the evaluation false alarm, fixed as a class after reading it: no longer blind)
    assert alarms(corpus_text("fresh_167", "0002")) == []


test_the_review_look_alikes_stay_silent = silence_tests(
    [
        # (a review of the session's classes found these; each raised an alarm before its mend)
        "XID 79 injected on GPU 0 by fault-injector\nNVRM: Xid (PCI:0000:b3:00): 79, "
        "pid=0, GPU has fallen off the bus.",
        "Xid errors were injected with nvidia-smi's injection tool:\nNVRM: Xid "
        "(PCI:0000:b3:00): 43, pid=1234, Ch 00000008",
        "Training step time: 0.8s/step. It is already 2 hours in and everything is fine.",
        "Illegal instruction (ILL) exceptions are reported via SIGILL.",
        "Illegal instruction trap handler: see arch/x86/kernel/traps.c",
        "vGPU is supported only on VGX capable boards. Check the list of supported "
        "GPUs before installing.",
        'The installer prints "Unable to find the kernel source tree for the '
        'currently running kernel" when kernel-devel is missing; install it first.',
        "IBV_EVENT_PORT_ERR: Link became unavailable on a port",
        "IBV_EVENT_PORT_ERR - Link became unavailable on a port",
        "[  100.1] libceph: mon0 (1)10.0.0.8:6789 socket closed (con state OPEN)",
        "Jan 1 00:00:00 host kernel: [  120.123] sysrq: Manual OOM execution\nJan 1 "
        "00:00:00 host kernel: [  120.124] Out of memory: Killed process 1234 "
        "(python) total-vm:100kB",
    ]
)

test_the_review_variants_are_read = read_as_tests(
    [
        # (the same review: real variants the classes missed, or read away, before their mends)
        (
            "[Mon Jan  8 10:00:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has "
            "fallen off the bus.\nWe cannot inject Xids on this platform, so this is "
            "real.",
            Category.GPU_HARDWARE,
        ),
        (
            "Our health check doesn't inject Xid errors; this one came from "
            "production:\nNVRM: Xid (PCI:0000:ca:00): 48, pid=1234, DBE (double bit "
            "error) ECC error.",
            Category.GPU_HARDWARE,
        ),
        (
            "[Tue Mar  5 02:11:09 2024] NVRM: Xid (PCI:0000:b3:00): 48, pid=0, An "
            "uncorrectable double bit error (DBE) has been detected on GPU in the "
            "framebuffer.\nIs there a way to inject Xid errors to test our alerting? This "
            "one was real.",
            Category.GPU_HARDWARE,
        ),
        (
            "[Tue Mar  5 02:11:09 2024] NVRM: Xid (PCI:0000:b3:00): 79, pid=0, GPU has "
            "fallen off the bus.\n[Tue Mar  5 02:11:10 2024] NVRM: GPU 0000:b3:00.0: GPU "
            "has fallen off the bus.\nUnlike the DCGM test where we injected Xids, this "
            "happened during training.",
            Category.GPU_HARDWARE,
        ),
        (
            "Straggler detected: node gpu-a is much slower than its peers and will hold "
            "back the whole job.",
            Category.STRAGGLER,
        ),
        (
            "The straggler rank is slower than the other ranks and may delay every step.",
            Category.STRAGGLER,
        ),
        (
            "One of the GPUs is much slower than the others and it will hold back the "
            "whole job. How can this happen?",
            Category.STRAGGLER,
        ),
        (
            "After the driver upgrade one GPU is much slower than the others; this can "
            "hurt the whole job. Any idea?",
            Category.STRAGGLER,
        ),
        (
            "Straggler detected on node gpu-a: it is slower than the other nodes and may "
            "impact the whole job.",
            Category.STRAGGLER,
        ),
        (
            "[2024-01-01 10:00:00] Illegal instruction (core dumped)",
            Category.APPLICATION,
        ),
        (
            "zsh: illegal hardware instruction  python",
            Category.APPLICATION,
        ),
        (
            '[1]    12345 illegal hardware instruction  python -c "import tensorflow"',
            Category.APPLICATION,
        ),
        (
            "Fatal Python error: Illegal instruction",
            Category.APPLICATION,
        ),
        (
            "*** SIGILL (@0x7f) received by PID 1234 (TID 0x7f) from PID 0; stack trace: ***",
            Category.APPLICATION,
        ),
        (
            "Xid 79 = GPU has fallen off the bus. We see it on node 7 every night:\n[Tue "
            "Mar  5 02:11:09 2024] NVRM: Xid (PCI:0000:b3:00): 79, pid=0, GPU has fallen "
            "off the bus.",
            Category.GPU_HARDWARE,
        ),
        (
            "Xid 48 = DBE; reported by our monitor:\nNVRM: Xid (PCI:0000:ca:00): 48, "
            "pid=1234, An uncorrectable double bit error (DBE) has been detected on GPU",
            Category.GPU_HARDWARE,
        ),
        (
            "Training works fine until it hits this point:\nRuntimeError: Expected all "
            "tensors to be on the same device, but found at least two devices, cuda:0 and "
            "cpu!",
            Category.APPLICATION,
        ),
        (
            "[2021-12-22 13:03:15,573] WARN [ReplicaManager broker=1] Stopping serving "
            "replicas in dir /var/lib/kafka/data (kafka.server.ReplicaManager)",
            Category.HOST_STORAGE,
        ),
        (
            "[2024-01-01 10:00:00,126] ERROR Shutdown broker because all log dirs in "
            "/var/lib/kafka/data have failed (kafka.log.LogManager)",
            Category.HOST_STORAGE,
        ),
        (
            "[  100.1] libceph: mon0 (1)10.0.0.8:6789 socket closed (con state NEGOTIATING)",
            Category.HOST_STORAGE,
        ),
        (
            "[  100.1] libceph: mon0 (1)10.0.0.8:6789 socket closed (con state V2_AUTH)",
            Category.HOST_STORAGE,
        ),
        (
            "2024-01-01 10:00:00 pure virtual method called",
            Category.APPLICATION,
        ),
        (
            "python[1234]: pure virtual method called",
            Category.APPLICATION,
        ),
        (
            "libc++abi: Pure virtual function called!",
            Category.APPLICATION,
        ),
        (
            "dkms: WARNING: Module build for kernel 6.8.0-45-generic was skipped since "
            "the kernel headers for this kernel do not seem to be installed.",
            Category.APPLICATION,
        ),
        (
            "JBD2: Cannot load crc32c driver.",
            Category.HOST_STORAGE,
        ),
        (
            "src/modules/transport/ibrc/ibrc.cpp:431: non-zero status: 110 ibv_modify_qp failed",
            Category.NETWORK,
        ),
        (
            "Couldn’t allocate MR",
            Category.NETWORK,
        ),
        (
            "failed to create mr",
            Category.NETWORK,
        ),
    ]
)
