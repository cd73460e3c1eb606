"""Healthy outputs and healthy talk, written blind (tests/fixtures/explain_review/
review25_healthy.json): 100 records of what on-call engineers see every day on healthy nodes
and jobs (boot dmesg, NCCL and torchrun start-up and shutdown, steady progress of five
trainers, nvidia-smi, DCGM, InfiniBand tools, ping and mtr, Slurm and Kubernetes events of
normal operation, resolved alerts) and people's messages that name speeds, hangs, ETAs, waits,
packet loss, OOM, Xids, NVLink, RAID or PCIe in a healthy way. Read 94/100 silent with the
rules of 1799401 before any rule was written for it; every one is silent now (an alert's
resolved header on any line of its input, a stall a later line says moved on, an outlier said
to be none, an ETA in days kept to the ETA reader, a dip every N steps).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.explain_helpers import alarms

_REVIEW = json.loads(
    (
        Path(__file__).resolve().parents[1] / "fixtures/explain_review/review25_healthy.json"
    ).read_text()
)


@pytest.mark.parametrize("case", _REVIEW, ids=lambda c: c["id"])
def test_each_healthy_text_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def test_an_alert_firing_after_another_is_still_read() -> None:
    """An input with a resolved alert drops the monitors' findings only: a hang said in the
    same input stays."""
    text = "[RESOLVED] PFCPauseStorm leaf-12\nThe job hangs at step 4100 for 40 minutes, no output."
    assert alarms(text) != []
