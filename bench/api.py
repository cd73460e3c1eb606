"""REST API latency under load: 50 concurrent clients over a store with >= 10 million GPU
metric rows and >= 10,000 incidents, on the real ClickHouse server.

The API runs as `trainguard api` (a separate process, as in production); the clients are
asyncio connections of this process (plain HTTP/1.1, one keep-alive connection each). The
baseline is `/healthz` measured in the same run (same clients, same machine): the ratio shows
what the data costs over the bare HTTP stack. Prints JSON and writes bench/results/api.json.

    python -m bench.api [--clients 50] [--seconds 20] [--rows 10000000] [--incidents 10000]
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

    The clients are asyncio streams speaking plain HTTP/1.1, so that the load generator,
    which shares the machine with the server, costs as little CPU as possible.
    """
    return asyncio.run(_load(port, token, clients, seconds))


async def _load(port: int, token: str, clients: int, seconds: float) -> dict[str, list[float]]:
    latencies: dict[str, list[float]] = {name: [] for name in ENDPOINTS}
    errors: list[str] = []
    stop = time.monotonic() + seconds
    names = list(ENDPOINTS)

    async def client(i: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        k = i
        while time.monotonic() < stop:
            name = names[k % len(names)]
            k += 1
            request = (
                f"GET {ENDPOINTS[name]} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {token}\r\n\r\n"
            )
            began = time.perf_counter()
            writer.write(request.encode())
            status, length = 0, 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if not status:
                    status = int(line.split()[1])
                elif line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            latencies[name].append((time.perf_counter() - began) * 1000)
            if status != 200:
                errors.append(f"{name}: {status}")
        writer.close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    if errors:
        raise SystemExit(f"{len(errors)} failed request(s), e.g. {errors[:3]}")
    return latencies


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def main() -> None:
    """Fill the store, start the API, load it, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
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
    try:
        load(port, token, 5, 3.0)  # warm-up: caches, connections, query plans
        latencies = load(port, token, args.clients, args.seconds)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    base = statistics.median(latencies["healthz (baseline)"])
    endpoints: dict[str, Any] = {}
    for name, values in latencies.items():
        endpoints[name] = {
            "requests": len(values),
            "p50_ms": _pct(values, 0.50),
            "p99_ms": _pct(values, 0.99),
            "max_ms": round(max(values), 1),
            "p50_vs_healthz": round(statistics.median(values) / base, 2),
        }
    result = {
        "measured": datetime.now(UTC).date().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "store": {"gpu_metric_rows": rows, "incidents": incidents, "fill_s": round(fill_s, 1)},
        "clients": args.clients,
        "api_workers": args.workers,
        "seconds": args.seconds,
        "target_p99_ms": 100,
        "endpoints": endpoints,
        "notes": (
            "fleet snapshots (GPU health) and incident pages are cached for TG_API_CACHE_S "
            "(5 s) and dropped on every write; clients and server share the machine's CPUs"
        ),
    }
    text = json.dumps(result, indent=2)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
