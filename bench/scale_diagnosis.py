"""The diagnosis half of bench.scale: a twin job's full-rate telemetry and N diagnose members.

`job_workload` runs the twin for one job at full telemetry rate (1 s GPU scrapes, every
collective of every rank) and measures its emission model: events per second by kind, with
collectives counted per step and divided by the healthy step time (a window of a few seconds
would cut steps in half). `run_members` starts N `trainguard diagnose` processes in one
consumer group on topics already holding the workload and measures each one's records and
CPU time (/proc/PID/stat, all threads) from the moment the records are sent (all members
joined and idle) to the last event it fed (its counts read from its /metrics, which a busy
process may answer late, hence not its first record); process start-up (imports,
migrations, group join) is not counted. The records are sent only once all members joined,
so no partition is read twice.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaAdminClient

from bench.ingest import process_cpu_s
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import CollectiveProgress, EventBase, TrainStep, encode_event
from sim.scenario import Scenario, parse_scenario
from sim.twin import Twin

REPO = Path(__file__).resolve().parents[1]
Log = Callable[[str], None]


def job_scenario(gpus: int, seconds: int, step_time_s: float) -> Scenario:
    """Return one job on `gpus` GPUs (tp 8, pp 16 from 2,048 GPUs, else 4) at full rate."""
    tp = 8
    pp = 16 if gpus >= 2048 else 4
    if gpus % (tp * pp):
        raise ValueError(f"--gpus must be a multiple of {tp * pp}")
    return parse_scenario(
        {
            "seed": 18,
            "cluster": {"nodes": gpus // 8, "gpus_per_node": 8},
            "jobs": [
                {"id": "scale", "tp": tp, "pp": pp, "dp": gpus // (tp * pp)}
                | {"step_time_s": step_time_s}
            ],
            "duration_s": seconds,
            "metrics_interval_s": 1.0,
            "host_interval_s": 10.0,
        }
    )


@dataclass
class Workload:
    """A twin run's records (topic, key, JSON) and its measured emission model."""

    scenario: Scenario
    records: list[tuple[str, bytes, bytes]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    collectives_per_step: Counter[int] = field(default_factory=Counter)
    step_times: list[float] = field(default_factory=list)
    twin_cpu_s: float = 0.0

    def healthy_step_s(self) -> float | None:
        """Return the median step time after the warm-up steps (None: no such step ran)."""
        healthy = self.step_times[self.scenario.jobs[0].warmup_steps :]
        return statistics.median(healthy) if healthy else None

    def rates(self, step_s: float | None = None) -> dict[str, float]:
        """Return events/s by kind in steady state, and their total ("all").

        `step_s`: the healthy step time where this run was too short to have one.
        """
        s = self.scenario
        nodes = s.cluster.nodes
        step_s = self.healthy_step_s() or step_s or s.jobs[0].step_time_s
        per_step = max(self.collectives_per_step.values(), default=0)
        rates = {
            "gpu_metrics": nodes / s.metrics_interval_s,
            "host_metrics": nodes / s.host_interval_s,
            "collective": per_step / step_s,
            "train_step": 1 / step_s,
            "log": self.kinds["log"] / s.duration_s,
            "job_topology": 0.0,
        }
        rates["all"] = sum(rates.values())
        rates["step_time_s"] = step_s
        rates["collectives_per_step"] = per_step
        return rates


def job_workload(scenario: Scenario, topics: Topics | None) -> Workload:
    """Simulate the scenario, counting the model (and keeping encoded records for `topics`)."""
    work = Workload(scenario)

    def emit(event: EventBase) -> None:
        work.kinds[event.kind] += 1
        if isinstance(event, CollectiveProgress):
            work.collectives_per_step[event.seq] += 1
        elif isinstance(event, TrainStep) and event.rank is None and event.step_time_s:
            work.step_times.append(event.step_time_s)
        if topics is not None:
            work.records.append((topics.for_event(event), event.key.encode(), encode_event(event)))

    began = time.process_time()
    Twin(scenario, emit).run()
    work.twin_cpu_s = time.process_time() - began
    return work


def produce(bus: KafkaBus, records: list[tuple[str, bytes, bytes]]) -> None:
    """Send the records and wait for every acknowledgement."""
    producer = bus.producer()
    for topic, key, value in records:
        producer.send_raw(topic, key, value)
    producer.flush(300)
    producer.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _counters(port: int) -> dict[str, float]:
    """Read the diagnose counters from a member's /metrics ({} until it serves)."""
    out: dict[str, float] = {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("trainguard_diagnose_") and "_total " in line:
                    name, value = line.split()
                    out[name.removeprefix("trainguard_diagnose_").removesuffix("_total")] = float(
                        value
                    )
    except OSError:
        return {}
    return out


@dataclass
class _Member:
    proc: subprocess.Popen[bytes]
    port: int
    stderr: Path
    cpu_first: float | None = None
    cpu_last: float = 0.0
    cpu_end: float = 0.0  # when its fed count last changed
    fed: float = 0.0
    fed_at: float = 0.0
    counters: dict[str, float] = field(default_factory=dict)


def wait_for_group(bootstrap: str, group: str, members: int, timeout_s: float = 300.0) -> None:
    """Wait until `group` is Stable with `members` members (all joined, partitions assigned)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-scale")
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            info = admin.describe_groups([group]).get(group) or {}
            if info.get("group_state") == "Stable" and len(info.get("members", [])) == members:
                return
            time.sleep(0.5)
    finally:
        admin.close()
    raise RuntimeError(f"group {group} did not reach {members} stable member(s)")


def run_members(
    env: Mapping[str, str],
    bus: KafkaBus,
    records: list[tuple[str, bytes, bytes]],
    members: int,
    group: str,
    log: Log,
    timeout_s: float = 1800.0,
) -> dict[str, object]:
    """Run `members` diagnose processes in one group, then send `records`; measure until fed.

    The records are sent once every member has joined: members that join while others read
    would take over partitions half read, and the re-read would count as work.
    """
    total = len(records)
    tmp = Path(tempfile.mkdtemp(prefix="tg-scale-"))
    started = time.perf_counter()
    crowd: list[_Member] = []
    for i in range(members):
        port = _free_port()
        child = {
            **env,
            "TG_KAFKA_TOPIC_PREFIX": bus.topics.prefix,
            "TG_DIAGNOSE_GROUP": group,
            "TG_DIAGNOSE_METRICS_PORT": str(port),
            "TG_DIAGNOSE_METRICS_CACHE_S": "3600",  # fleet series read once, not per scrape
        }
        err = tmp / f"member{i}.err"
        with err.open("wb") as handle:
            proc = subprocess.Popen(
                [sys.executable, "-m", "trainguard", "diagnose"],
                cwd=REPO,
                env=child,
                stdout=subprocess.DEVNULL,
                stderr=handle,
            )
        crowd.append(_Member(proc, port, err))
    first_record: float | None = None
    try:
        wait_for_group(bus.bootstrap, group, members)
        log(f"{members} member(s) joined; sending {total:,} records")
        time.sleep(2.0)  # let a member's restore (which follows its join) finish
        for m in crowd:  # idle now: every CPU second from here on is the records' work
            m.cpu_first = process_cpu_s(m.proc.pid)
            m.fed_at = time.perf_counter()  # "nothing fed for 20 s" counts from the send
        produce(bus, records)
        while True:
            time.sleep(0.25)
            now = time.perf_counter()
            for m in crowd:
                if m.proc.poll() is not None:
                    raise RuntimeError(f"diagnose member exited: {m.stderr.read_text()[-2000:]}")
                m.counters = _counters(m.port) or m.counters
                m.cpu_last = process_cpu_s(m.proc.pid)
                if first_record is None and m.counters.get("records_consumed", 0) > 0:
                    first_record = now
                fed = m.counters.get("events_fed", 0)
                if fed != m.fed:  # the member's work ends with the last event it fed
                    m.fed, m.fed_at, m.cpu_end = fed, now, m.cpu_last
            consumed = sum(m.counters.get("records_consumed", 0) for m in crowd)
            fed = sum(m.fed for m in crowd)
            end = max(m.fed_at for m in crowd)
            # done: all read, and all fed, or nothing more fed for 20 s (the last events of a
            # finite stream may stay buffered); a busy member's /metrics may answer late, and
            # a member waiting on its buffer still spends CPU, so CPU time cannot tell idle
            # (a member that fed nothing yet gets 60 s: after an idle start the worker may hold
            # its buffer until partitions that got no records are judged idle)
            if consumed >= total and (fed >= total or now - end > (20 if fed else 60)):
                break
            if now - started > timeout_s:
                raise RuntimeError(f"members did not finish in {timeout_s:.0f} s ({consumed=})")
    finally:
        for m in crowd:
            m.proc.terminate()
        for m in crowd:
            try:
                m.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                m.proc.kill()
                m.proc.wait()
    assert first_record is not None
    per_member = [
        {
            "records": int(m.counters.get("records_consumed", 0)),
            "fed": int(m.counters.get("events_fed", 0)),
            "cpu_s": round(max(0.0, m.cpu_end - (m.cpu_first or m.cpu_end)), 2),
        }
        for m in crowd
    ]
    cpu = sum(float(p["cpu_s"]) for p in per_member)
    fed = sum(int(p["fed"]) for p in per_member)
    consumed = sum(int(p["records"]) for p in per_member)
    wall = max(end - first_record, 1e-9)
    busiest = max(int(p["fed"]) for p in per_member)
    log(f"{members} member(s): {fed:,} events fed, {cpu:.1f} CPU s, {wall:.1f} s wall")
    return {
        "members": members,
        "records_sent": total,
        "records_consumed": consumed,
        "fed": fed,
        "cpu_s": round(cpu, 2),
        "wall_s_first_record_to_last_fed": round(wall, 2),
        "events_per_cpu_s": round(fed / cpu) if cpu else None,
        "records_per_cpu_s": round(consumed / cpu) if cpu else None,
        "events_per_s_wall": round(fed / wall),
        "busiest_member_share": round(busiest / fed, 3) if fed else None,
        "per_member": per_member,
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
    }
