"""Routing and keying of diagnosis scale-out (diagnosis/routing.py): pure functions."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from diagnosis.routing import (
    Membership,
    NodeJobs,
    RouteProgress,
    SourceMark,
    decode_mark,
    encode_mark,
    in_process_partition,
    kafka_partition,
    owner_key,
    partition_keys,
    route_key,
    source_names,
)
from ingest.bus import TopicPartition, partition_for
from ingest.schema import decode_event
from tests.builders import at, make_gpu_metrics, make_host, make_log, make_step, make_topology

EVIDENCE = "tg.diagnosis.evidence"


def _timeline(*topologies):
    jobs = NodeJobs()
    for topology in topologies:
        jobs.add(topology)
    return jobs


def test_node_evidence_goes_to_the_job_on_the_node_at_its_time():
    topo = make_topology("job-1").model_copy(update={"ts": at(10)})  # ranks on n1
    jobs = _timeline(topo)
    assert route_key(make_gpu_metrics("n1", 11), jobs) == "job-1"
    assert route_key(make_host("n1", 10), jobs) == "job-1"
    assert route_key(make_log("n1", 12), jobs) == "job-1"


def test_node_evidence_before_any_job_or_on_a_free_node_keeps_the_node():
    jobs = _timeline(make_topology("job-1").model_copy(update={"ts": at(10)}))
    assert route_key(make_gpu_metrics("n1", 9), jobs) == "n1"
    assert route_key(make_log("n7", 20), jobs) == "n7"


def test_a_later_job_on_the_node_takes_its_evidence_from_its_start():
    first = make_topology("job-1").model_copy(update={"ts": at(10)})
    second = make_topology("job-2").model_copy(update={"ts": at(100)})
    jobs = _timeline(second, first)  # learned out of order: event time decides
    assert route_key(make_gpu_metrics("n1", 99), jobs) == "job-1"
    assert route_key(make_gpu_metrics("n1", 100), jobs) == "job-2"


def test_a_log_line_naming_its_job_goes_to_that_job():
    line = make_log("n7", 20).model_copy(update={"job_id": "job-9"})
    assert route_key(line, NodeJobs()) == "job-9"


def test_job_telemetry_keeps_its_bus_key():
    assert route_key(make_step("job-3", 1), NodeJobs()) == "job-3"


def test_clusters_keep_their_own_nodes():
    topo = make_topology("job-1").model_copy(update={"ts": at(10), "cluster": "east"})
    jobs = _timeline(topo)
    assert route_key(make_gpu_metrics("n1", 11), jobs) == "n1"
    east = make_gpu_metrics("n1", 11).model_copy(update={"cluster": "east"})
    assert route_key(east, jobs) == "job-1"


def test_a_topology_read_twice_is_learned_once():
    topo = make_topology("job-1")
    jobs = _timeline(topo, topo)
    assert len(jobs) == 1
    assert jobs.job_at(topo.cluster, "n1", topo.ts + timedelta(seconds=1)) == "job-1"


def test_in_process_partitions_match_the_in_process_bus():
    for key in (b"job-1", b"n17", b"x" * 40):
        assert in_process_partition(key, 7) == partition_for(key, 7, 0)


def test_kafka_partitions_match_the_java_client():
    # values of org.apache.kafka.common.utils.Utils.murmur2 (toPositive, mod 10)
    assert kafka_partition(b"21", 1000) == (-973932308 & 0x7FFFFFFF) % 1000
    assert kafka_partition(b"foobar", 1000) == (-790332482 & 0x7FFFFFFF) % 1000


@pytest.mark.parametrize("partitioner", [kafka_partition, in_process_partition])
def test_partition_keys_reach_every_partition(partitioner):
    keys = partition_keys(24, partitioner)
    assert [partitioner(k, 24) for k in keys] == list(range(24))


def test_marks_round_trip_and_are_not_events():
    marks = {"tg.metrics:3": SourceMark(at(5), False), "tg.logs:0": SourceMark(None, True)}
    value = encode_mark(marks, at(7))
    assert decode_mark(value) == {n: replace(m, sent=at(7)) for n, m in marks.items()}
    assert decode_mark(make_log().model_dump_json().encode()) is None
    with pytest.raises(ValueError):
        decode_event(value)


def test_progress_waits_for_every_source_then_holds_at_the_slowest_busy_one():
    sources = source_names({"tg.metrics": 2, "tg.logs": 1})
    progress = RouteProgress(sources)
    q0, q1 = TopicPartition(EVIDENCE, 0), TopicPartition(EVIDENCE, 1)
    live = (at(61), {q0, q1})  # the member's clock; both partitions read to their end

    def hold(*partitions: TopicPartition) -> tuple[bool, datetime | None]:
        return progress.hold(partitions, *live)

    progress.observe(q0, {"tg.metrics:0": SourceMark(at(50), False)})
    assert hold(q0) == (False, None)  # two sources have said nothing yet
    progress.observe(q0, {"tg.metrics:1": SourceMark(at(20), False)})
    progress.observe(q0, {"tg.logs:0": SourceMark(None, True)})
    assert hold(q0) == (True, at(20))
    assert hold(q0, q1) == (False, None)  # q1 has no marks yet
    progress.observe(q0, {"tg.metrics:1": SourceMark(at(30), True)})
    assert hold(q0) == (True, at(50))  # the caught-up source holds nothing
    progress.observe(q0, {"tg.metrics:0": SourceMark(at(60), True)})
    assert hold(q0) == (True, None)
    progress.forget()
    assert hold(q0) == (False, None)


def test_a_busy_source_that_routed_nothing_yet_holds_everything():
    progress = RouteProgress({"tg.metrics:0"})
    q0 = TopicPartition(EVIDENCE, 0)
    progress.observe(q0, {"tg.metrics:0": SourceMark(None, False)})
    assert progress.hold([q0], at(1), {q0}) == (False, None)


def test_an_idle_source_whose_router_fell_silent_holds_at_its_last_time():
    # routers A (tg.metrics:0) and B (tg.metrics:1) mark every 0.5 s; B is killed while
    # idle: records keep arriving in tg.metrics:1 that no one routes until it is taken over
    progress = RouteProgress({"tg.metrics:0", "tg.metrics:1"}, stale_s=5.0)
    q0 = TopicPartition(EVIDENCE, 0)
    progress.observe(q0, {"tg.metrics:1": SourceMark(at(200), True, sent=at(1000))})
    progress.observe(q0, {"tg.metrics:0": SourceMark(at(210), True, sent=at(1004))})
    assert progress.hold([q0], at(1004), {q0}) == (True, None)  # both speak: both idle
    progress.observe(q0, {"tg.metrics:0": SourceMark(at(300), False, sent=at(1006))})
    # B's idle claim is 6 s older than A's newest mark: void
    assert progress.hold([q0], at(1006), {q0}) == (True, at(200))
    # another router takes tg.metrics:1 over and marks it: routed up to 260 s, busy
    progress.observe(q0, {"tg.metrics:1": SourceMark(at(260), False, sent=at(1007))})
    assert progress.hold([q0], at(1007), {q0}) == (True, at(260))
    # a silent router's source that never routed anything: nothing is known
    empty = RouteProgress({"tg.logs:0", "tg.metrics:0"}, stale_s=5.0)
    empty.observe(q0, {"tg.logs:0": SourceMark(None, True, sent=at(1000))})
    empty.observe(q0, {"tg.metrics:0": SourceMark(at(300), True, sent=at(1010))})
    assert empty.hold([q0], at(1010), {q0}) == (False, None)
    # every router fell silent (the only one was killed): no newer mark will come, so in a
    # partition read to its end an idle claim is judged against the member's own clock
    alone = RouteProgress({"tg.metrics:0"}, stale_s=5.0)
    alone.observe(q0, {"tg.metrics:0": SourceMark(at(200), True, sent=at(1000))})
    assert alone.hold([q0], at(1004), {q0}) == (True, None)  # 4 s: it may still speak
    assert alone.hold([q0], at(1013), {q0}) == (True, at(200))
    # marks from routers that do not date them are taken as they say, in a partition read
    # to its end
    undated = RouteProgress({"tg.logs:0"}, stale_s=5.0)
    undated.observe(q0, {"tg.logs:0": SourceMark(at(1), True)})
    assert undated.hold([q0], at(2), {q0}) == (True, None)


def test_idle_claims_read_from_a_backlog_hold_at_their_time():
    # a member that took a job over reads its evidence partition again from the committed
    # offset: the marks it reads first are old, and the routers' later batches (records dated
    # before other sources' marks) are still to read. Router D was killed idle; routers R
    # marked 4.5 s after it: within the staleness allowance, so D's claim is not void by age,
    # yet the partition is not read to its end, so no idle claim counts: each source holds
    # at its mark's time (ci10: a port-down scrape fed after a later NCCL line of its node)
    progress = RouteProgress({"tg.metrics:4", "tg.metrics:3", "tg.logs:3"}, stale_s=5.0)
    q1 = TopicPartition(EVIDENCE, 1)
    progress.observe(q1, {"tg.metrics:4": SourceMark(at(68), True, sent=at(1000))})
    progress.observe(
        q1,
        {
            "tg.metrics:3": SourceMark(at(158), True, sent=at(1004.5)),
            "tg.logs:3": SourceMark(at(158), True, sent=at(1004.5)),
        },
    )
    assert progress.hold([q1], at(1020), set()) == (True, at(68))
    # read to its end, D's claim is judged against the member's clock: 20 s old, void
    assert progress.hold([q1], at(1020), {q1}) == (True, at(68))
    # R took D's source over and marked everything up to 240 s: nothing held
    progress.observe(q1, {"tg.metrics:4": SourceMark(at(240), True, sent=at(1018))})
    progress.observe(
        q1, {n: SourceMark(at(240), True, sent=at(1018)) for n in ("tg.metrics:3", "tg.logs:3")}
    )
    assert progress.hold([q1], at(1019), {q1}) == (True, None)
    # without the member's clock (no live reading) nothing is taken as idle
    assert progress.hold([q1]) == (True, at(240))


def test_a_routers_idle_claims_are_void_from_its_next_record_to_its_next_mark():
    # router R routes tg.metrics:3 and tg.logs:3. Its mark says the metrics source is idle;
    # then a log line of R's next batch is read: a port-down scrape appended to the metrics
    # source after R's claim, and older than that line, may still come (in this batch, after
    # the line, or in the next), so the claim holds at its time until R marks again
    progress = RouteProgress({"tg.metrics:3", "tg.logs:3", "tg.metrics:0"}, stale_s=5.0)
    q1 = TopicPartition(EVIDENCE, 1)
    live = (at(1001), {q1})
    progress.observe(
        q1,
        {
            "tg.metrics:3": SourceMark(at(195), True, sent=at(1000)),
            "tg.logs:3": SourceMark(at(190), True, sent=at(1000)),
        },
    )
    progress.observe(q1, {"tg.metrics:0": SourceMark(at(300), True, sent=at(1000))})
    assert progress.hold([q1], *live) == (True, None)
    progress.routed(q1, "tg.logs:3")
    assert progress.hold([q1], *live) == (True, at(190))  # R's sources hold; the other not
    progress.observe(
        q1,
        {
            "tg.metrics:3": SourceMark(at(195), False, sent=at(1000.5)),
            "tg.logs:3": SourceMark(at(209), True, sent=at(1000.5)),
        },
    )
    assert progress.hold([q1], *live) == (True, at(195))  # the new mark: metrics busy
    progress.observe(
        q1,
        {
            "tg.metrics:3": SourceMark(at(200), True, sent=at(1001)),
            "tg.logs:3": SourceMark(at(209), True, sent=at(1001)),
        },
    )
    assert progress.hold([q1], *live) == (True, None)
    # a source no mark has named yet voids only itself
    progress.routed(q1, "tg.metrics:0")
    assert progress.hold([q1], *live) == (True, at(300))
    progress.forget()
    assert progress.hold([q1], *live) == (False, None)


def test_membership_names_the_source_partition_a_routed_event_was_read_from():
    progress = RouteProgress(source_names({"tg.metrics": 6, "tg.logs": 4}))
    member = Membership(EVIDENCE, "tg.jobs", 6, in_process_partition, progress)
    assert progress.counts == {"tg.metrics": 6, "tg.logs": 4}
    assert member.source_of("tg.logs", "node-0006") == (
        f"tg.logs:{in_process_partition(b'node-0006', 4)}"
    )
    assert member.source_of("tg.metrics", "node-0006") == (
        f"tg.metrics:{in_process_partition(b'node-0006', 6)}"
    )
    assert member.source_of("tg.train", "job-1") is None  # job telemetry is not routed


def test_membership_owns_the_keys_that_hash_to_its_partitions():
    member = Membership(EVIDENCE, "tg.jobs", 6, in_process_partition, RouteProgress(()))
    assignment = {TopicPartition("tg.jobs", 1), TopicPartition(EVIDENCE, 1)}
    owned = member.owned(assignment)
    assert owned == {1}
    keys = [f"job-{i}" for i in range(40)]
    mine = [k for k in keys if member.owns(k, owned)]
    assert mine == [k for k in keys if in_process_partition(k.encode(), 6) == 1]
    assert mine and len(mine) < len(keys)
    assert member.routed(assignment) == [TopicPartition(EVIDENCE, 1)]


def test_owner_key_is_the_job_else_the_node():
    assert owner_key("job-1", "n1") == "job-1"
    assert owner_key(None, "n1") == "n1"
