"""Classes added in the sixteenth corpus round (issue 21), and two families read from their
sources' message catalogues.

- From the round's development records (tests/fixtures/explain/corpus/fresh_26.jsonl, read by
  id; the comment names the source): a pronoun for a rate that falls (``It decreases
  gradually``), step rates in words (``5 iteration per seconds``), a slowdown said in Chinese,
  libata's failed commands, and the NFS client that cannot create its RPC client.
- From the Linux NVMe host driver's and NFS client's own format strings (drivers/nvme/host,
  net/sunrpc, fs/lockd, nfs-utils' mount.nfs): the lines below are those formats filled in, the
  way the kernel prints them; the driver's start-up lines stay silent.
- From glibc's backtrace_symbols and glog's failure handler: frames inside libnccl.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.quantities import figures, quoted_rates
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_26")

PRONOUN = _real("0000")  # pytorch forums-style report (400 images/s, it decreases to 130)
CHINESE_STEPS = _real("0002")  # LLaMA-Factory (1~2s/step, then 逐渐减慢 to 10s/step)
NFS_RPC = _real("0011")  # nfs_create_rpc_client: cannot create RPC client. Error = -110
ATA = _real("0013")  # libata: failed command: READ FPDMA QUEUED, error: { UNC }
DEGRADING = _real("0015")  # speed degrading; 5 iteration per seconds, then 3 s per iteration
CHINESE_RANKS = _real("0020")  # DeepSpeed: 各个rank ... 前向时间差异很大

STRAGGLER, STORAGE, APP = Category.STRAGGLER, Category.HOST_STORAGE, Category.APPLICATION


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (PRONOUN, STRAGGLER, "straggler.slowness_in_words"),
        (CHINESE_STEPS, STRAGGLER, "straggler.slowness_in_chinese"),
        (NFS_RPC, STORAGE, "storage.nfs"),
        (ATA, STORAGE, "storage.ata"),
        (DEGRADING, STRAGGLER, "straggler.slowness_in_words"),
        (CHINESE_RANKS, STRAGGLER, "straggler.slowness_in_chinese"),
        # the NVMe host driver's formats (6.x and 5.x timeouts, nvme_log_error, fabrics)
        (
            "nvme nvme0: I/O tag 12 (000c) opcode 0x2 (Read) QID 3 timeout, reset controller",
            STORAGE,
            "storage.nvme",
        ),
        ("nvme nvme0: I/O 812 QID 5 timeout, aborting", STORAGE, "storage.nvme"),
        (
            "nvme0n1: Read(0x2) @ LBA 123456, 8 blocks, Unrecovered Read Error "
            "(sct 0x2 / sc 0x81) DNR",
            STORAGE,
            "storage.nvme",
        ),
        ("nvme nvme1: IO queues lost", STORAGE, "storage.nvme"),
        ("nvme nvme0: frozen state error detected, reset controller", STORAGE, "storage.nvme"),
        ("nvme nvme3: failed to connect socket: -111", STORAGE, "storage.nvme"),
        ("nvme nvme3: Failed reconnect attempt 4/60", STORAGE, "storage.nvme"),
        ("nvme nvme3: no available path - failing I/O", STORAGE, "storage.nvme"),
        # the NFS client's, lockd's, statd's and mount.nfs's
        ("statd: server rpc.statd not responding, timed out", STORAGE, "storage.nfs"),
        (
            "NFS: state manager: lease expired failed on NFSv4 server 10.1.2.3 with error 5",
            STORAGE,
            "storage.nfs",
        ),
        ("mount.nfs: Connection timed out", STORAGE, "storage.nfs"),
        ("ls: cannot access 'ckpt': Stale NFS file handle", STORAGE, "storage.nfs"),
        # frames inside libnccl: glibc's backtrace_symbols, glog's failure handler
        (
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2(ncclCommInitRank+0x1a2) [0x7f3a9c1d2e4b]",
            APP,
            "process.nccl_segfault",
        ),
        ("    @     0x7f3a9c1d2e4b  ncclGroupEnd", APP, "process.nccl_segfault"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_step_rates_and_rates_in_words_are_read() -> None:
    assert figures("I have speed 5 iteration per seconds, then 3 seconds per iteration") == [
        0.2,
        3.0,
    ]
    assert quoted_rates("about 400 images/second, then about 130 images/second") == [400.0, 130.0]


@pytest.mark.parametrize(
    "text",
    [
        PRONOUN.replace("400images/secod", "400 images/second").replace(
            "130 images/second", "390 images/second"
        ),  # within its jitter
        "The loss was 2.3. It decreases gradually to about 1.1 after an hour.",  # not a rate
        CHINESE_STEPS.replace("随后逐渐减慢到10s/step以上", "随后一直保持在1~2s/step"),  # steady
        "训练没有变慢，速度一直很稳定",  # denied
        "训练速度有点慢 怎么快速训练",  # slow, but not slower than before
        "损失下降很快",  # the loss falls: good news
        ATA.replace("error: { UNC }", "status: { DRDY }").replace(
            "failed command", "command"
        ),  # no failed command
        "ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
        # the NVMe driver's start-up and recovery lines
        "nvme nvme0: pci function 0000:01:00.0",
        "nvme nvme0: 32/0/0 default/read/poll queues",
        "nvme nvme0: allocated 64 MiB host memory buffer.",
        "nvme nvme2: Successfully reconnected (attempt 2/60)",
        "nvme nvme0: Identify(0x6), Invalid Field in Command (sct 0x0 / sc 0x2) DNR",  # admin
        "nfs: server 10.0.0.5 OK",
        "/usr/lib/x86_64-linux-gnu/libcudart.so.12(cudaMalloc+0x1a2) [0x7f3a9c1d2e4b]",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
