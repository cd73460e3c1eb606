"""Findings of a review that tried to break the rules of 2026-12-05 (schedulers, network
filesystems, DCGM, InfiniBand tools, tables, the readers in other languages): each input the
reviewer wrote, with what it must give now.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

SILENT = [
    # a user's cancel with srun's kills; benchmark prose with `since` and arrows
    "slurmstepd: error: *** STEP 4253.0 ON gpu-a01 CANCELLED AT 2024-03-05T10:00:00 ***\n"
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    "srun: error: gpu-a01: tasks 0-7: Killed",
    "Since version 2.1, a step takes 0.5 s on A100 and 1.1 s on V100.",
    "Step time by batch size: bs32 -> 0.8 s/it, bs64 -> 1.5 s/it, bs128 -> 2.9 s/it",
    # tables that are no peers: models, a scaling sweep, configurations, counts, a caption's time
    "| GPU | Throughput (samples/s) |\n|-----|------------------------|\n| A100 | 1210 |\n"
    "| H100 | 2480 |\n| L40S | 980 |\n| V100 | 505 |\n| T4 | 152 |",
    "| nodes | GPUs | throughput (tok/s) |\n|---|---|---|\n| 1 | 8 | 25000 |\n| 2 | 16 | 49000 |\n"
    "| 4 | 32 | 96000 |\n| 8 | 64 | 188000 |",
    "Results per configuration:\n| config | tokens/s |\n|---|---|\n| bs8 | 5200 |\n"
    "| bs16 | 9800 |\n| bs32 | 17500 |\n| bs64 | 30100 |",
    "Per-rank data shard sizes (samples):\n| rank | samples |\n|---|---|\n| rank0 | 50000 |\n"
    "| rank1 | 50000 |\n| rank2 | 50000 |\n| rank3 | 12000 |",
    "Training time per configuration:\n| config | GPUs | hours |\n|---|---|---|\n"
    "| run1 | 8 | 10.5 |\n| run2 | 16 | 5.4 |\n| run3 | 32 | 2.8 |\n| run4 | 64 | 1.5 |",
    "| epoch | time (s) |\n|---|---|\n| epoch 1 | 312 |\n| epoch 2 | 101 |\n| epoch 3 | 99 |\n"
    "| epoch 4 | 100 |\n| epoch 5 | 98 |",
    "Node throughput summary\n| node | GPUs | samples/s |\n|---|---|---|\n| n01 | 8 | 2400 |\n"
    "| n02 | 8 | 2380 |\n| n03 | 4 | 1200 |\n| n04 | 8 | 2410 |",
    # other health checkers' `marking it unhealthy`
    "2024-03-05T10:00:00.000Z [WARN]  agent: Check is now critical: check=service:web; marking it "
    "unhealthy",
    'level=warn msg="health check failed for backend 10.0.0.5:8080; marking it as unhealthy"',
    # a detector's spread in one interval among calm ones (a checkpoint)
    "[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnEtpt/Rnk: "
    "296.02TF/0 | MxEtpt/Rnk: 297.32TF/8\n"
    "saving checkpoint at iteration    1000 to /ckpt in torch_dist format\n"
    "[2024-03-14 23:14:42] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 6912.40ms/0 | MnEtpt/Rnk: "
    "148.10TF/0 | MxEtpt/Rnk: 297.32TF/8\n"
    "[2024-03-14 23:21:28] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3466.10ms/0 | MnEtpt/Rnk: "
    "296.02TF/0 | MxEtpt/Rnk: 297.32TF/8",
    # utilisation compared across configurations, hardware or a target
    "MFU is 52% with TP=1 and drops to 31% with TP=8 on the 70B model, see the table below.",
    "MFU reaches up to 60% on H100 and up to 45% on A100 in our benchmarks",
    "Our MFU target was 50% but after tuning we got to 38%, still short.",
    # idioms, words of another sense, negations after the verb, trade-offs, changelogs
    "El entrenamiento tardará más o menos 3 horas por época en una A100.",
    "O treinamento demora mais ou menos 2 horas por época.",
    "Nós achamos o pandas mais lento que o polars nesse caso.",
    "Comparamos el rendimiento con precisión baja (FP8) en las GPUs del clúster.",
    "Отрисовка картинок в matplotlib медленнее, чем в plotly.",
    "Le mixed precision ne ralentit pas l'entraînement, au contraire.",
    "Das Logging verlangsamt das Training nicht.",
    "Comment éviter de ralentir l'entraînement quand on active le logging ?",
    "gradient checkpointing を有効にすると学習が遅くなりますが、メモリ使用量は大幅に減ります。",
    "Mit Gradient Checkpointing ist das Training etwa 30 % langsamer, dafür braucht es deutlich "
    "weniger Speicher.",
    "Behoben: ein Fehler, durch den das Training auf mehreren GPUs langsamer wurde.",
    "С gradient checkpointing обучение примерно на 30% медленнее, зато памяти нужно вдвое меньше.",
    # the user's own Lustre errors; a healthy port's one link-down at boot
    "LustreError: 12345:0:(file.c:4573:ll_inode_revalidate()) scratch: revalidate FID "
    "[0x200000402:0x1:0x0] error: rc = -2",
    "LustreError: 3121:0:(llite_lib.c:1720:ll_md_setattr()) md_setattr fails: rc = -1",
    "# Port counters: Lid 12 port 1 (CapMask: 0x5A00)\nSymbolErrorCounter:..............0\n"
    "LinkErrorRecoveryCounter:........0\nLinkDownedCounter:...............1\n"
    "PortRcvErrors:...................0",
    "NIC statistics:\n     rx_packets: 123456789\n     rx_crc_errors_phy: 0\n"
    "     link_down_events_phy: 1\n     rx_corrected_bits_phy: 1234\n     rx_discards_phy: 0",
    # a routine mount's reconnect; documentation prose
    "libceph: mon0 (1)10.30.0.1:6789 session established\nceph: mds0 reconnect start\n"
    "ceph: mds0 reconnect success",
    "UnkillableStepTimeout: the number of seconds before a step that cannot be killed is "
    'considered unkillable; the node is then drained with the reason "Kill task failed".',
    "A pod in CrashLoopBackOff keeps restarting; run kubectl logs --previous to see why.",
]


@pytest.mark.parametrize("text", SILENT)
def test_each_look_alike_the_review_found_stays_silent(text: str) -> None:
    assert alarms(text) == [], text


READ = [
    (
        "slurmstepd: error: *** STEP 4254.0 ON gpu-a01 CANCELLED AT 2024-03-05T10:00:00 DUE TO "
        "TIME LIMIT ***\nsrun: error: gpu-a01: tasks 0-7: Terminated\n"
        "srun: error: gpu-a02: tasks 8-15: Killed",
        C.BENIGN,
        "slurm.time_limit",
    ),
    (
        "NCCL WARN NET/IB : Got async error event: port error",
        C.NETWORK,
        "ib.async_port_error",
    ),
    ("NCCL WARN NET/IB : Got async event : port error", C.NETWORK, "ib.async_port_error"),
    (
        "I0305 10:00:00.000000 1 health.go:120] Error waiting for event: GPU is lost; Marking all "
        "devices as unhealthy",
        C.GPU_HARDWARE,
        "nvml.gpu_lost",
    ),
    ("Detected 3 ecc_dbe_volatile_total for GPU 1", C.GPU_HARDWARE, "dcgm.gpu_memory"),
    (
        "Detected 1500 pcie_replay_counter for GPU 2 which is above the threshold 1000",
        C.GPU_DEGRADED,
        "dcgm.gpu_degraded",
    ),
    (
        "  Warning  Evicted  1m  kubelet  The node was low on resource: pids. Threshold quantity: "
        "1000, available: 512.",
        C.APPLICATION,
        "k8s.evicted",
    ),
    (
        '  Warning  Evicted  1m  kubelet  Usage of EmptyDir volume "dshm" exceeds the limit '
        '"64Gi".',
        C.HOST_STORAGE,
        "k8s.evicted",
    ),
    (
        "  Warning  Evicted  5s  kubelet  The node had condition: [MemoryPressure DiskPressure].",
        C.HOST_MEMORY,
        "k8s.evicted",
    ),
    (
        "JobID           JobName        State    Elapsed        NodeList\n"
        "------------ ---------- ------------ ---------- ---------------\n"
        "48             nodefail    NODE_FAIL   00:06:51          node03\n"
        "48.batch          batch    CANCELLED   00:06:51          node03",
        C.HOST_HARDWARE,
        "slurm.node_failure",
    ),
    (
        "JobID           JobName        State ExitCode\n"
        "------------ ---------- ------------ --------\n"
        "49              train  OUT_OF_ME+    0:125",
        C.HOST_MEMORY,
        "slurm.memory_limit",
    ),
    ("PortXmitDiscards:................1532", C.NETWORK, "ib.error_counters"),
    (
        "Seit dem Treiber-Update ist auf unserem H100-Knoten eine H100 (GPU 3) deutlich langsamer "
        "als die anderen.",
        C.STRAGGLER,
        "straggler.slowness_in_german",
    ),
]


@pytest.mark.parametrize(("text", "category", "rule"), READ)
def test_each_wording_the_review_found_missed_is_read(
    text: str, category: Category, rule: str
) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_a_quota_exceeded_on_lustre_is_the_jobs() -> None:
    found = first(
        "LustreError: 3121:0:(osc_request.c:1540:osc_brw_fini_request()) scratch-OST0002-osc: "
        "Write exceeds quota: rc = -122"
    )
    assert found is not None and found[:2] == (Category.APPLICATION, "netfs.caller_error")


def test_a_recovery_before_the_wait_does_not_end_it() -> None:
    lost = (
        "Lustre: scratch-OST0007-osc-ffff9a1b2c3d4000: Connection to scratch-OST0007 (at "
        "10.10.0.17@o2ib) was lost; in progress operations using this service will wait for "
        "recovery to complete"
    )
    restored = (
        "Lustre: scratch-OST0007-osc-ffff9a1b2c3d4000: Connection restored to 10.10.0.17@o2ib "
        "(at 10.10.0.17@o2ib)"
    )
    found = first(f"{restored}\n{lost}")
    assert found is not None and found[:2] == (Category.HOST_STORAGE, "netfs.server_wait")
    assert first(f"{lost}\n{restored}") is None


def test_a_spread_the_detector_repeats_stays_a_straggler() -> None:
    line = "[2024-03-14 23:{m}:56] | MnRtt/Rnk: 1021.30ms/12 | MxRtt/Rnk: 2544.80ms/57"
    found = first("\n".join(line.format(m=m) for m in ("07", "14", "21")))
    assert found is not None and found[:2] == (Category.STRAGGLER, "straggler.megatron_minmax")
