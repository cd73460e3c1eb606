"""The in-job reporter never blocks or crashes training: bounded queue, drop and count."""

from __future__ import annotations

import pickle
import time

from ingest.bus import BusError, InProcessBus, Topics
from ingest.schema import CollectiveState, decode_event
from ingest.torch_integration import RankInfo, Reporter, build_topology
from tests.readers_fixtures import FIXTURES


class DownProducer:
    """A producer whose bus is unreachable (what KafkaBusProducer raises then)."""

    def send(self, event):
        raise BusError("Kafka at 127.0.0.1:1 unreachable")

    def send_raw(self, topic, key, value):
        raise BusError("Kafka at 127.0.0.1:1 unreachable")

    def flush(self, timeout_s=30.0):
        raise BusError("Kafka at 127.0.0.1:1 unreachable")

    def close(self):
        return None


def _wait(cond, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


def test_a_down_bus_drops_and_counts_and_step_never_raises():
    rep = Reporter("j1", DownProducer(), rank=0, node="n1")
    for i in range(100):
        rep.step(i, loss=1.0)
    assert _wait(lambda: rep.stats.dropped == 100)
    rep.close(timeout_s=1)
    assert rep.stats.sent == 0 and rep.stats.errors >= 100 and "unreachable" in rep.stats.last_error


def test_a_full_queue_drops_instead_of_blocking():
    rep = Reporter("j1", DownProducer(), rank=0, node="n1", queue_size=1)
    rep._stop.set()  # publisher gone: nothing drains the queue
    start = time.monotonic()
    for i in range(1000):
        rep.step(i)
    assert time.monotonic() - start < 1.0 and rep.stats.dropped >= 998


def test_steps_and_flight_recorder_changes_reach_the_bus():
    bus = InProcessBus(Topics("t."), partitions=1)
    dump = (FIXTURES / "fr_gloo_hang" / "nccl_trace_rank_2").read_bytes()
    rep = Reporter("j1", bus.producer(), 2, "n1", fr_source=lambda: dump, sample_interval_s=0.05)
    rep.step(1, loss=2.0, grad_norm=0.5)
    time.sleep(0.3)  # several samples of the same dump: each change is sent once
    rep.close()
    consumer = bus.consumer("r", bus.topics.telemetry())
    events = [decode_event(r.value) for r in consumer.poll(1000, 0.1)]
    steps = [e for e in events if e.kind == "train_step"]
    assert [(s.step, s.rank, s.loss) for s in steps] == [(1, 2, 2.0)]  # rank 2: per-rank step
    coll = sorted((e.comm, e.seq, e.state) for e in events if e.kind == "collective")
    assert coll == [
        ("2", 2, CollectiveState.COMPLETED),  # the last completed per communicator
        ("2", 3, CollectiveState.SCHEDULED),  # the pending one
        ("3", 2, CollectiveState.COMPLETED),
    ]
    assert rep.stats.errors == 0 and rep.stats.samples >= 2


def test_an_empty_or_broken_recorder_is_counted_not_raised():
    rep = Reporter("j1", DownProducer(), 0, "n1", fr_source=lambda: b"not a pickle")
    rep._sample_once()
    empty = pickle.dumps({"version": "2.10", "entries": []})
    rep2 = Reporter("j1", DownProducer(), 0, "n1", fr_source=lambda: empty)
    rep2._sample_once()
    assert rep.stats.errors == 1 and "flight recorder" in rep.stats.last_error
    assert "TORCH_FR_BUFFER_SIZE" in rep2.stats.fr_unavailable


def test_topology_merges_every_ranks_groups():
    infos = [
        RankInfo(
            r,
            f"n{r // 2}",
            r % 2,
            None,
            (("0", "world", (0, 1, 2, 3)), (str(1 + r // 2), "tp", (r // 2 * 2, r // 2 * 2 + 1))),
        )
        for r in range(4)
    ]
    topo = build_topology("j1", 4, infos, "slurm", "77")
    assert sorted(c.comm for c in topo.communicators) == ["0", "1", "2"]
    assert (topo.layout.tp, topo.scheduler_job_id) == (2, "77")
    assert [(p.rank, p.node, p.gpu) for p in topo.ranks][3] == (3, "n1", 1)
