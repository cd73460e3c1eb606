"""Job discovery: the real Slurm controller (deploy/slurm.sh) and a loopback Kubernetes API.

The Kubernetes fake serves tests/fixtures/readers/k8s_pytorchjob_pods.json, shaped like the
PodList a Kubeflow PyTorchJob's pods return (the official client parses it as it would a
real API server's answer); no API server can run here. The Slurm batch jobs run torchrun with
Megatron-LM's arguments after a sleep; the test cancels them before torchrun would start.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s

from ingest.readers.discovery import discover_kubernetes, discover_slurm, slurm_runner
from ingest.schema import CommKind
from tests.integration.conftest import wait_for
from tests.readers_fixtures import FIXTURES

pytestmark = pytest.mark.integration


def test_a_running_sbatch_job_is_discovered(slurm, tmp_path):
    run = slurm_runner(slurm.conf)
    out = tmp_path / "slurm-%j.out"
    jid = (
        run(
            [
                "sbatch",
                "--parsable",
                "-N1",
                "-n2",
                "-J",
                "tg-discover",
                "-o",
                str(out),
                "--wrap",
                "sleep 120",
            ]
        )
        .strip()
        .split(";")[0]
    )
    try:
        wait_for(
            lambda: "RUNNING" in run(["squeue", "-h", "-j", jid, "-o", "%T"]),
            90,  # the whole node: earlier tests' cancelled jobs may still be ending
            f"Slurm job {jid} running",
        )
        (topo,) = discover_slurm(run, [jid])
        assert (topo.job_id, topo.scheduler, topo.scheduler_job_id) == (
            f"slurm-{jid}",
            "slurm",
            jid,
        )
        node = run(["squeue", "-h", "-j", jid, "-o", "%N"]).strip()
        assert topo.world_size == 2 and [(p.rank, p.node, p.gpu) for p in topo.ranks] == [
            (0, node, 0),
            (1, node, 1),
        ]
        assert [c.ranks for c in topo.communicators] == [[0, 1]]
        assert topo.layout_source is not None
        assert topo.layout_source.startswith("world group only: no Megatron-LM")
        every = {t.scheduler_job_id for t in discover_slurm(run)}
        assert jid in every
    finally:
        run(["scancel", jid])
    time.sleep(0.5)
    assert discover_slurm(run, [jid]) == []  # no longer running


MEGATRON_JOB = """#!/bin/bash
#SBATCH -J tg-megatron
sleep 300
TP={tp}
GPT_ARGS="--tensor-model-parallel-size $TP --pipeline-model-parallel-size 2 --num-layers 4"
torchrun --nproc_per_node=4 --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID \\
    pretrain_gpt.py $GPT_ARGS --micro-batch-size 1
"""


def _discover_batch_job(run, tmp_path, name: str, script: str):
    """Submit a batch script, wait until it runs, discover it and cancel it."""
    path = tmp_path / f"{name}.sh"
    path.write_text(script)
    out = tmp_path / f"{name}-%j.out"
    jid = run(["sbatch", "--parsable", "-N1", "-n1", "-o", str(out), str(path)]).strip()
    try:
        wait_for(
            lambda: "RUNNING" in run(["squeue", "-h", "-j", jid, "-o", "%T"]),
            90,  # the one test node is shared: an earlier job may still be completing
            f"Slurm job {jid} running",
        )
        (topo,) = discover_slurm(run, [jid])
    finally:
        run(["scancel", jid])
    return topo


def test_a_torchrun_megatron_batch_job_gets_its_parallel_groups(slurm, tmp_path):
    run = slurm_runner(slurm.conf)
    topo = _discover_batch_job(run, tmp_path, "good", MEGATRON_JOB.format(tp=2))
    node = topo.ranks[0].node
    assert [(p.rank, p.node, p.gpu) for p in topo.ranks] == [(r, node, r) for r in range(4)]
    assert (topo.layout.tp, topo.layout.pp, topo.layout.dp) == (2, 2, 1)
    groups = {k: [c.ranks for c in topo.communicators if c.kind == k] for k in CommKind}
    assert groups[CommKind.WORLD] == [[0, 1, 2, 3]]
    assert groups[CommKind.TP] == [[0, 1], [2, 3]] and groups[CommKind.PP] == [[0, 2], [1, 3]]
    assert groups[CommKind.DP] == []  # dp = 1: no data-parallel communicator
    assert topo.layout_source is not None and topo.layout_source.startswith("megatron")


def test_a_launch_argument_the_shell_computes_leaves_the_world_group_and_says_why(slurm, tmp_path):
    run = slurm_runner(slurm.conf)
    topo = _discover_batch_job(run, tmp_path, "bad", MEGATRON_JOB.format(tp="$((N / 2))"))
    assert [c.ranks for c in topo.communicators] == [[0, 1, 2, 3]]
    assert topo.layout_source is not None and "not a number" in topo.layout_source


def test_slurm_hostlists_expand_through_scontrol(slurm):
    run = slurm_runner(slurm.conf)
    assert run(["scontrol", "show", "hostnames", "node-[0001-0003]"]).split() == [
        "node-0001",
        "node-0002",
        "node-0003",
    ]


class _FakeApi:
    def __init__(self) -> None:
        body = (FIXTURES / "k8s_pytorchjob_pods.json").read_bytes()
        self.queries: list[dict[str, list[str]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                url = urllib.parse.urlparse(self.path)
                ok = url.path == "/api/v1/namespaces/training/pods"
                api.queries.append(urllib.parse.parse_qs(url.query))
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if ok else 2))
                self.end_headers()
                self.wfile.write(body if ok else b"{}")

            def log_message(self, *_a: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_pytorchjob_pods_become_a_topology_master_first():
    fake = _FakeApi()
    try:
        api = k8s.CoreV1Api(k8s.ApiClient(k8s.Configuration(host=fake.url)))
        selector = "training.kubeflow.org/job-name=llama-pretrain"
        topo = discover_kubernetes(api, "training", selector, "llama-pretrain")
    finally:
        fake.server.shutdown()
    assert fake.queries == [{"labelSelector": [selector]}]
    assert topo is not None and topo.scheduler == "kubernetes" and topo.world_size == 16
    placed = [(p.rank, p.node, p.gpu) for p in topo.ranks]
    assert placed[:8] == [(r, "gpu-node-a03", r) for r in range(8)]  # the master: ranks 0-7
    assert placed[8:] == [(8 + g, "gpu-node-b07", g) for g in range(8)]  # pending pod: none
    # the pods' torchrun command states Megatron's TP=8, PP=2: two TP groups, one per node
    tp = [c.ranks for c in topo.communicators if c.kind == CommKind.TP]
    pp = [c.ranks for c in topo.communicators if c.kind == CommKind.PP]
    assert tp == [list(range(8)), list(range(8, 16))]
    assert pp == [[g, 8 + g] for g in range(8)] and topo.layout.tp == 8
    assert topo.layout_source is not None and topo.layout_source.startswith("megatron")


def test_ingest_fr_names_the_dumps_groups_as_the_running_job_does(
    slurm, tmp_path, monkeypatch, capsys
):
    from ingest.schema import decode_event
    from trainguard.cli import main

    run = slurm_runner(slurm.conf)
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    path = tmp_path / "job.sh"
    path.write_text(MEGATRON_JOB.format(tp=2).replace("--pipeline-model-parallel-size 2", ""))
    jid = run(["sbatch", "--parsable", "-N1", "-n1", "-o", str(tmp_path / "o"), str(path)]).strip()
    try:
        wait_for(
            lambda: "RUNNING" in run(["squeue", "-h", "-j", jid, "-o", "%T"]),
            90,
            f"Slurm job {jid} running",
        )
        dumps = str(FIXTURES / "fr_gloo_hang")
        assert main(["ingest-fr", "--print", "--slurm", jid, dumps]) == 0
    finally:
        run(["scancel", jid])
    topo, *progress = [decode_event(line) for line in capsys.readouterr().out.splitlines()]
    assert topo.kind == "job_topology" and topo.job_id == f"slurm-{jid}"
    assert {p.comm for p in progress} == {"tp-0", "tp-1", "dp-0", "dp-1"}
    assert {p.job_id for p in progress} == {f"slurm-{jid}"}
