"""REST API latency under load: 50 concurrent clients over a store with >= 10 million GPU
metric rows and >= 10,000 incidents, on the real ClickHouse server.

The API runs as `trainguard api` (a separate process, as in production, TG_API_WORKERS
workers); the clients are asyncio connections of this process (uvloop when installed, plain
HTTP/1.1, one keep-alive connection each, closed loop with no think time, every request
with its bearer token). The baseline is `/healthz` measured in the same run (same clients,
same machine): the ratio shows what the data costs over the bare HTTP stack. Each of
`--runs` loads records the CPU that the clients, the API, ClickHouse and everything else on
the machine used meanwhile (from /proc), and the load average. Prints JSON and writes
bench/results/api.json (headline: the run with the worst class p99).

    python -m bench.api [--clients 50] [--seconds 20] [--runs 3] [--workers 2]
                        [--rows 10000000] [--incidents 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from analytics.migrations import migrate
from analytics.store import ServerStore, query_scalar
from api.auth import Role, TokenBook
from diagnosis.incident_store import record_transition, save_incidents
from diagnosis.incidents import Incident
from diagnosis.lifecycle import Transition
from diagnosis.model import (
    Action,
    Blame,
    Category,
    ComponentKind,
    IncidentStatus,
    Severity,
    Suspect,
)
from trainguard.settings import local_services_env

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "api.json"
DATABASE = "bench_api"
GPUS_PER_NODE = 8
ENDPOINTS = {
    "healthz (baseline)": "/healthz",
    "incidents, first page": "/v1/incidents?limit=50",
    "incidents, open critical": "/v1/incidents?status=open&severity=critical&limit=50",
    "incidents, one node": "/v1/incidents?node=node-00042&limit=50",
    "gpu health, 500 GPUs": "/v1/gpus?limit=500",
    "gpu health, suspects": "/v1/gpus?state=suspect&limit=500",
}


def fill_metrics(store: ServerStore, rows: int, nodes: int) -> int:
    """Insert synthetic GPU samples server-side until the table holds `rows`; return the count."""
    have = int(query_scalar(store, f"SELECT count() FROM `{DATABASE}`.gpu_metrics") or 0)
    if have >= rows:
        return have
    gpus = nodes * GPUS_PER_NODE
    end = int(datetime.now(UTC).timestamp())
    samples = (rows - have + gpus - 1) // gpus
    store.command(
        f"INSERT INTO `{DATABASE}`.gpu_metrics (ts, ts_us, node, gpu, uuid, pci_bus_id, "
        f"nvml_error, DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE, "
        f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, event_id, src_topic, "
        f"src_partition, src_offset) "
        f"SELECT toDateTime({end} - intDiv(number, {gpus}) * 10) AS t, 0, "
        f"concat('node-', substring(toString(100000 + intDiv(number % {gpus}, "
        f"{GPUS_PER_NODE})), 2)), "
        f"number % {GPUS_PER_NODE}, '', '', '', 90 + (number % 10), 60 + (number % 25), "
        f"400 + (number % 300), intDiv(number, 1000000), 0, toString(number), 'bench', 0, "
        f"number FROM system.numbers LIMIT {samples * gpus}"
    )
    return int(query_scalar(store, f"SELECT count() FROM `{DATABASE}`.gpu_metrics") or 0)


def fill_incidents(store: ServerStore, count: int, nodes: int) -> int:
    """Insert synthetic incidents (a tenth resolved) until `count` exist; return the count."""
    have = int(query_scalar(store, f"SELECT uniqExact(id) FROM `{DATABASE}`.incidents") or 0)
    start = datetime.now(UTC) - timedelta(days=30)
    kinds = [
        (Category.GPU_HARDWARE, Severity.CRITICAL, ComponentKind.GPU),
        (Category.HANG, Severity.ERROR, ComponentKind.GPU),
        (Category.NETWORK, Severity.ERROR, ComponentKind.NIC),
        (Category.STRAGGLER, Severity.WARNING, ComponentKind.GPU),
    ]
    batch: list[Incident] = []
    for n in range(have, count):
        category, severity, component = kinds[n % len(kinds)]
        node = f"node-{n % nodes:05d}"
        batch.append(
            Incident(
                id=f"inc-bench{n:07d}",
                category=category,
                blame=Blame.INFRASTRUCTURE,
                job=f"job-{n % 40}",
                detected_at=start + timedelta(seconds=n * 97),
                suspects=[
                    Suspect(
                        component=component,
                        score=0.9,
                        node=node,
                        gpu=n % GPUS_PER_NODE,
                        explanation="synthetic",
                    )
                ],
                summary=f"{category.value} on {node}",
                action=Action.ISOLATE_NODE,
                evidence=[f"evidence line {k}" for k in range(5)],
                severity=severity,
            )
        )
        if len(batch) == 1000:
            save_incidents(store, batch)
            batch = []
    if batch:
        save_incidents(store, batch)
    if have == 0:
        for n in range(0, count, 10):
            record_transition(
                store,
                Transition(
                    incident_id=f"inc-bench{n:07d}",
                    status=IncidentStatus.RESOLVED,
                    reason="bench",
                    actor="bench",
                    at=start + timedelta(seconds=n * 97 + 60),
                ),
            )
    return int(query_scalar(store, f"SELECT uniqExact(id) FROM `{DATABASE}`.incidents") or 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_api(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """Start `trainguard api` on the bench database and wait until it answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainguard", "api"],
        cwd=REPO,
        env={**env, "TG_API_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("trainguard api did not start")


def load(port: int, token: str, clients: int, seconds: float) -> dict[str, list[float]]:
    """Run `clients` keep-alive connections for `seconds`, each cycling through the endpoints.

    The clients are asyncio streams (on uvloop when installed) that send pre-encoded
    HTTP/1.1 requests and read only the status line and Content-Length, so that the load
    generator, which shares the machine with the server, costs as little CPU as possible.
    """
    try:
        import uvloop

        return uvloop.run(_load(port, token, clients, seconds))
    except ImportError:
        return asyncio.run(_load(port, token, clients, seconds))


async def _load(port: int, token: str, clients: int, seconds: float) -> dict[str, list[float]]:
    latencies: dict[str, list[float]] = {name: [] for name in ENDPOINTS}
    errors: list[str] = []
    stop = time.monotonic() + seconds
    names = list(ENDPOINTS)
    requests = [
        (
            f"GET {ENDPOINTS[name]} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
        for name in names
    ]
    series = [latencies[name] for name in names]

    async def client(i: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        k = i
        clock = time.perf_counter
        while time.monotonic() < stop:
            n = k % len(names)
            k += 1
            began = clock()
            writer.write(requests[n])
            head = await reader.readuntil(b"\r\n\r\n")
            at = head.find(b"ontent-length:")  # either case of the C
            length = int(head[at + 14 : head.index(b"\r\n", at)]) if at >= 0 else 0
            await reader.readexactly(length)
            series[n].append((clock() - began) * 1000)
            if head[9:12] != b"200":
                errors.append(f"{names[n]}: {head[9:12].decode()}")
        writer.close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    if errors:
        raise SystemExit(f"{len(errors)} failed request(s), e.g. {errors[:3]}")
    return latencies


def misses(port: int, token: str, count: int) -> list[float]:
    """Time `count` incident pages nobody asked for before (one client, nothing cached).

    Each asks for a different `since`, so each is a ClickHouse read and a render: what a
    request costs when the snapshot cache cannot help (a new filter, a deep cursor page).
    """
    start = int(time.time()) - 40 * 86400
    headers = {"Authorization": f"Bearer {token}"}
    out = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
        for i in range(count):
            began = time.perf_counter()
            response = client.get("/v1/incidents", params={"since": start + i, "limit": 50})
            out.append((time.perf_counter() - began) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"uncached page: {response.status_code} {response.text[:200]}")
    return out


def _cpu_ticks() -> dict[int, tuple[str, int, int]]:
    """Return every process's (name, nice, user+system clock ticks) from /proc."""
    out: dict[int, tuple[str, int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(entry.name)] = (name, int(fields[16]), int(fields[11]) + int(fields[12]))
    return out


def _descendants(root: int) -> set[int]:
    """Return a process and all its children, grandchildren, ..."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(raw[raw.rindex(")") + 2 :].split()[1])
    found = {root}
    while True:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


def measured_load(
    port: int, token: str, clients: int, seconds: float, server: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Run `load` and return its latencies with the CPU that client, server and others used."""
    tick = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    servers = _descendants(server)
    load_before = os.getloadavg()
    before, wall, cpu = _cpu_ticks(), time.monotonic(), time.process_time()
    latencies = load(port, token, clients, seconds)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    after = _cpu_ticks()
    used = {
        pid: (name, nice, (ticks - before[pid][2]) / tick)
        for pid, (name, nice, ticks) in after.items()
        if pid in before
    }
    me = os.getpid()
    server_s = sum(u for pid, (_n, _ni, u) in used.items() if pid in servers)
    clickhouse_s = sum(u for _n, _ni, u in used.values() if _n.startswith("clickhouse"))
    others = sorted(
        (
            (u, name, nice)
            for pid, (name, nice, u) in used.items()
            if pid not in servers | {me} and not name.startswith("clickhouse")
        ),
        reverse=True,
    )
    requests = sum(len(v) for v in latencies.values())

    def share(cpu_s: float) -> float:
        return round(100 * cpu_s / wall, 1)  # percent of one core

    return latencies, {
        "requests_per_s": round(requests / wall),
        "client_cpu_pct_of_one_core": share(cpu),
        "api_cpu_pct_of_one_core": share(server_s),
        "clickhouse_cpu_pct_of_one_core": share(clickhouse_s),
        "other_cpu_pct_of_one_core": share(sum(u for u, _n, _ni in others)),
        "busiest_others": [
            {"process": name, "nice": nice, "cpu_pct_of_one_core": share(u)}
            for u, name, nice in others[:4]
            if share(u) >= 1
        ],
        "machine_cores": cores,
        "loadavg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


CLASSES = {"healthz": "healthz", "incident lists": "incidents", "gpu health": "gpu health"}


def summarize(latencies: dict[str, list[float]]) -> dict[str, Any]:
    """Return p50/p99/max per endpoint and per endpoint class."""
    base = statistics.median(latencies["healthz (baseline)"])

    def stats(values: list[float]) -> dict[str, Any]:
        return {
            "requests": len(values),
            "p50_ms": _pct(values, 0.50),
            "p99_ms": _pct(values, 0.99),
            "max_ms": round(max(values), 1),
            "p50_vs_healthz": round(statistics.median(values) / base, 2),
        }

    classes = {
        label: stats([v for name, vs in latencies.items() if name.startswith(prefix) for v in vs])
        for label, prefix in CLASSES.items()
    }
    return {
        "classes": classes,
        "endpoints": {name: stats(values) for name, values in latencies.items()},
    }


def main() -> None:
    """Fill the store, start the API, load it (`--runs` times), write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3, help="loads in a row (same server)")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1250, help="nodes of 8 GPUs")
    parser.add_argument("--workers", type=int, default=2, help="API server processes")
    args = parser.parse_args()
    services = {**local_services_env(REPO), **os.environ}
    host = services.get("TG_CLICKHOUSE_HOST", "127.0.0.1")
    ch_port = int(services.get("TG_CLICKHOUSE_PORT", "9000"))
    store = ServerStore(host, ch_port, DATABASE)
    migrate(store)
    began = time.monotonic()
    rows = fill_metrics(store, args.rows, args.nodes)
    incidents = fill_incidents(store, args.incidents, args.nodes)
    fill_s = time.monotonic() - began
    token = TokenBook(store).create("bench", Role.VIEWER)
    env = {
        **os.environ,
        "TG_CLICKHOUSE_MODE": "server",
        "TG_CLICKHOUSE_HOST": host,
        "TG_CLICKHOUSE_PORT": str(ch_port),
        "TG_CLICKHOUSE_DATABASE": DATABASE,
        "TG_API_WORKERS": str(args.workers),
    }
    port = _free_port()
    proc = start_api(env, port)
    runs: list[dict[str, Any]] = []
    try:
        # warm-up with every client, so that every worker has its caches and connections
        load(port, token, args.clients, 3.0)
        for _ in range(args.runs):
            latencies, machine = measured_load(port, token, args.clients, args.seconds, proc.pid)
            runs.append({**summarize(latencies), "machine": machine})
        uncached = misses(port, token, 200)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    worst = max(runs, key=lambda r: max(c["p99_ms"] for c in r["classes"].values()))
    result = {
        "measured": datetime.now(UTC).date().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "store": {"gpu_metric_rows": rows, "incidents": incidents, "fill_s": round(fill_s, 1)},
        "clients": args.clients,
        "think_time_ms": 0,
        "api_workers": args.workers,
        "seconds": args.seconds,
        "runs": args.runs,
        "target_p99_ms": 100,
        "client": (
            "this process: one asyncio (uvloop) task per client, one keep-alive HTTP/1.1 "
            "connection each, closed loop with no think time, pre-encoded requests; not "
            "pinned, it shares the cores with the API and ClickHouse"
        ),
        "headline": "the run with the highest class p99 of the runs below",
        "classes": worst["classes"],
        "endpoints": worst["endpoints"],
        "all_runs": runs,
        "uncached_incident_page": {
            "how": "one client after the load, 200 pages each with a new `since` filter",
            "requests": len(uncached),
            "p50_ms": _pct(uncached, 0.50),
            "p99_ms": _pct(uncached, 0.99),
        },
        "notes": (
            "incident pages and GPU health are rendered once per TG_API_CACHE_S (5 s), rebuilt "
            "in the background before they expire, dropped in every worker on any write, and "
            "answered from the rendered bytes after the bearer token is checked (api/hot.py); "
            "/healthz goes through the full FastAPI stack; CPU shares are percent of one core "
            "over each run, from /proc"
        ),
    }
    text = json.dumps(result, indent=2)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
