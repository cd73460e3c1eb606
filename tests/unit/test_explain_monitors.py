"""What fleet monitoring shows (diagnosis/explain/rules_monitors.py): error counters sampled
twice, alerts by their names, a switch's and a bond's view of a link, progress that stopped
moving, a Xid or an NFS server named in words, a loss that spiked, a clock far below its
baseline, PCIe links trained down, a detector's relative performance. Each with the healthy
forms of the same producers, which stay silent.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

READ = [
    ("Link 4: Replay Errors: 1203 -> 12845", C.GPU_DEGRADED),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL on gpu-17 GPU1: 0 -> 38,412 over the last 2 h", C.GPU_DEGRADED),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL gpu 2: 0 -> 3", C.GPU_HARDWARE),
    ("     rx_crc_errors_phy: 18422 -> 26007", C.NETWORK),
    ("SymbolErrorCounter:........1 -> 4123", C.NETWORK),
    ("[FIRING] RoCEPFCPauseStorm switch=leaf-12 port=Ethernet1/14", C.NETWORK),
    ("ibdiagnet: 6 links on leaf-04 exceed the effective BER threshold (worst 3.1e-9)", C.NETWORK),
    (
        "Mar 14 02:11:07 leaf-04 %ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface Ethernet1/22 is down "
        "(Link failure)",
        C.NETWORK,
    ),
    ("MII Status: down", C.NETWORK),
    ("[FIRING] NodeFilesystemAlmostFull instance=gpu-55 mountpoint=/local_scratch", C.HOST_STORAGE),
    ("train_step_total unchanged for 45m (last increment 03:12 UTC)", C.HANG),
    ("last line in slurm-881204.out written 11h ago: 'step 40210 | loss 1.98'", C.HANG),
    ("DCGM_FI_PROF_SM_ACTIVE = 0 on all 64 GPUs of job 77312 for 25 min", C.HANG),
    ("py-spy dump, identical on all 64 ranks and unchanged across 5 dumps over 40 min", C.HANG),
    ("Auf gpu-07 ist GPU 4 komplett verschwunden, im dmesg steht Xid 79.", C.GPU_HARDWARE),
    ("Il mount NFS /datasets non risponde da 20 minuti.", C.HOST_STORAGE),
    ("Loss jumped from 1.9 to 7.4 at step 21k and has not come back down", C.NUMERICAL),
    ("train_loss = 11.8 (7d median 2.3)", C.NUMERICAL),
    ("step 8814 | loss nan | grad_norm nan | lr 2.8e-4", C.NUMERICAL),
    ("DCGM_FI_DEV_SM_CLOCK = 1005 MHz (fleet baseline 1980 MHz under load)", C.GPU_DEGRADED),
    # a narrow link: the host's where the input names no GPU, the GPU's where it does
    ("\tLnkSta:\tSpeed 16GT/s, Width x8 (downgraded)", C.HOST_HARDWARE),
    (
        "3b:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
        "\tLnkSta:\tSpeed 16GT/s, Width x8 (downgraded)",
        C.GPU_DEGRADED,
    ),
    ("[straggler-detector] step=18000 rank=12 host=gpu-041 rel_perf=0.71", C.STRAGGLER),
]


@pytest.mark.parametrize(("text", "category"), READ)
def test_each_monitor_s_evidence_is_read(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, text


@pytest.mark.parametrize(
    "text",
    [
        "Link 4: Replay Errors: 1203 -> 1203",  # a counter that stayed
        "     rx_crc_errors_phy: 0",
        "Mar 14 02:11:19 leaf-04 %ETHPORT-5-IF_UP: Interface Ethernet1/22 is up in mode access",
        "MII Status: up",
        "train_step_total increased by 3000 in the last 45m",
        "loss_scale: inf, skipping step",  # an fp16 loss scale, not the loss
        "Loss went from 2.3 to 1.9 after the warm-up",  # a loss that fell
        "DCGM_FI_DEV_SM_CLOCK = 1975 MHz (fleet baseline 1980 MHz under load)",
        "\tLnkSta:\tSpeed 32GT/s, Width x16",
        "\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16",  # an idle GPU saves power
        "[straggler-detector] step=18000 rank=12 host=gpu-041 rel_perf=0.98",
        "The Xid 79 alert was ruled out as a false positive of the old exporter.",
    ],
)
def test_the_same_monitors_healthy_output_stays_silent(text: str) -> None:
    assert alarms(text) == [], text
