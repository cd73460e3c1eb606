"""`trainguard sim run` as a user runs it: files per family, truth.json, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

from ingest.schema import GpuMetrics, JobTopology, LogLine
from sim.output import read_events
from tests.integration.conftest import REPO

SCENARIO = """
seed: 4
cluster: {nodes: 4, gpus_per_node: 8, nodes_per_rack: 2}
jobs:
  - {id: small, tp: 8, pp: 2, dp: 2, step_time_s: 2.0}
duration_s: 60
faults:
  - {kind: ecc_dbe, node: 1, gpu: 4, at_s: 30}
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainguard", "sim", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sim_run_writes_each_family_and_the_truth(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    done = _run("run", str(scenario), "--out", str(out))
    assert done.returncode == 0, done.stderr
    names = {p.name for p in out.iterdir()}
    assert names == {
        "gpu_metrics.jsonl.gz",
        "host_metrics.jsonl.gz",
        "logs.jsonl.gz",
        "train_steps.jsonl.gz",
        "collectives.jsonl.gz",
        "job_topology.jsonl.gz",
        "truth.json",
        "inventory.json",
    }
    from diagnosis.fabric import Fabric

    fabric = Fabric.from_json((out / "inventory.json").read_text())
    assert fabric.leaf_of("node-0003", 5) == "leaf-r001-rail5"
    gpus = read_events(out / "gpu_metrics.jsonl.gz")
    assert len(gpus) == 61 * 4 and all(isinstance(e, GpuMetrics) for e in gpus)
    assert isinstance(read_events(out / "job_topology.jsonl.gz")[0], JobTopology)
    logs = [e for e in read_events(out / "logs.jsonl.gz") if isinstance(e, LogLine)]
    assert any("): 48," in e.line and e.node == "node-0001" for e in logs)
    truth = json.loads((out / "truth.json").read_text())
    assert truth["faults"][0]["kind"] == "ecc_dbe"
    assert truth["faults"][0]["component"]["node"] == "node-0001"
    assert truth["scenario"]["cluster"]["nodes"] == 4


def test_sim_run_rejects_unknown_keys_naming_them(tmp_path):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(SCENARIO.replace("step_time_s: 2.0", "step_time_s: 2.0, speed: 3"))
    done = _run("run", str(scenario), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "jobs.0.speed: unknown key" in done.stderr
    assert not (tmp_path / "out").exists()


def test_sim_stream_publishes_to_kafka_as_fast_as_it_can(tmp_path, services, kafka_bus):
    import os

    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.split("faults:")[0].replace("duration_s: 60", "duration_s: 20"))
    env = {
        **os.environ,
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": services.kafka,
        "TG_KAFKA_TOPIC_PREFIX": kafka_bus.topics.prefix,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainguard",
            "sim",
            "stream",
            str(scenario),
            "--speed",
            "0",
            "--truth",
            str(tmp_path / "truth.json"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    sent = int(done.stdout.split("published ")[1].split(" events")[0].replace(",", ""))
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}check", kafka_bus.topics.telemetry())
    got = 0
    for _ in range(60):
        got += len(consumer.poll(100_000, 0.5))
        if got >= sent:
            break
    consumer.close()
    assert got == sent and sent > 21 * 4
    assert json.loads((tmp_path / "truth.json").read_text())["faults"] == []
