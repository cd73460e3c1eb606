"""py-spy dumps grouped by stack: the outlier of the real BLOOM-176B eval hang is found."""

from __future__ import annotations

from diagnosis.localize.stacks import group_stacks, outlier_groups, stack_outlier_finding
from diagnosis.model import Category
from ingest.readers.pyspy import parse_pyspy
from sim.formats.pyspy import (
    BROADCAST_WAIT_STACK,
    DATALOADER_STACK,
    pyspy_dump,
    rank_main_thread,
)
from tests.readers_fixtures import REAL_SAMPLES

BLOOM = REAL_SAMPLES / "pyspy_hang_dump_bloom176b_eval_deadlock.txt"


def test_bloom_dump_threads_share_the_stack_under_their_headers():
    threads = parse_pyspy(BLOOM.read_text())
    assert len(threads) == 16
    by_id = {t.thread: t for t in threads}
    assert by_id["688514"].status == "idle" and by_id["688514"].name == "MainThread"
    assert by_id["688514"].top == ("wait", "threading.py")
    assert (
        by_id["688510"].top
        == by_id["599213"].top
        == ("broadcast", "torch/distributed/distributed_c10d.py")
    )
    assert by_id["686188"].top == ("recv", "torch/distributed/distributed_c10d.py")


def test_bloom_outlier_is_the_rank_in_the_dataloader():
    threads = parse_pyspy(BLOOM.read_text())
    groups = group_stacks(threads)
    assert sorted(len(g.members) for g in groups) == [1, 3, 4, 4, 4]
    (outlier,) = outlier_groups(groups)
    assert [m.thread for m in outlier.members] == ["688514"] and not outlier.in_collective
    finding = stack_outlier_finding(threads, ranks={"688514": 5})
    assert finding is not None and finding.category == Category.HANG and finding.rank == 5
    assert "1 of 16" in finding.line
    assert "_try_get_data (torch/utils/data/dataloader.py)" in finding.line


def test_raw_per_rank_dumps_in_py_spy_format():
    dumps = [
        pyspy_dump(
            100 + r,
            "python train.py",
            "3.10.12",
            "/usr/bin/python3.10",
            [
                rank_main_thread(
                    100 + r,
                    DATALOADER_STACK if r == 6 else BROADCAST_WAIT_STACK,
                    "idle" if r == 6 else "active",
                )
            ],
        )
        for r in range(8)
    ]
    threads = [t for i, d in enumerate(dumps) for t in parse_pyspy(d, source=f"node{i // 4}")]
    assert {t.pid for t in threads} == set(range(100, 108))
    finding = stack_outlier_finding(threads, ranks={str(100 + r): r for r in range(8)})
    assert finding is not None and finding.rank == 6 and finding.node == "node1"
    assert stack_outlier_finding(threads[:1]) is None
