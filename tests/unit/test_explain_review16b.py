"""Findings of a review that tried to break the platform rules and the progress readers of
2026-12-05 (tqdm bars, PaddleNLP intervals, BMC and cloud events, questions and `is fine`),
each input with what it must give now; and the development records of rounds 29 and 30
(fresh_39, fresh_40).
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

C = Category
_r39 = partial(corpus_text, "fresh_39")


def _bar(total: int, rates: list[str], start: int = 1, every: int = 100) -> list[str]:
    return [
        f" {100 * n // total:>3}%|###       | {n}/{total} [00:10<00:10,  {rate}]"
        for n, rate in zip(range(start, start + every * len(rates), every), rates, strict=True)
    ]


def test_an_evaluation_bar_between_training_bars_is_another_loop() -> None:
    lines = [
        *_bar(1000, ["2.00it/s"] * 5),
        "{'loss': 1.234, 'learning_rate': 2.5e-05, 'epoch': 0.5}",
        *_bar(63, ["14.10it/s", "14.05it/s", "14.02it/s", "14.00it/s"], start=16, every=16),
        "{'eval_loss': 1.1, 'eval_runtime': 4.5, 'epoch': 0.5}",
        *_bar(1000, ["2.00it/s"] * 3, start=600),
    ]
    assert alarms("\n".join(lines)) == []


def test_a_moving_average_that_decays_back_after_a_save_is_no_slowdown() -> None:
    decay = ["18.35s/it", "13.00s/it", "9.25s/it", "6.62s/it", "4.79s/it", "3.50s/it"]
    lines = [*_bar(1000, ["2.00it/s"] * 6), *_bar(1000, decay, start=601, every=1)]
    lines += _bar(1000, ["2.00it/s"] * 4, start=700)
    assert alarms("\n".join(lines)) == []
    stays = [*_bar(1000, ["2.00it/s"] * 6), *_bar(1000, ["1.60s/it"] * 6, start=700)]
    assert "training.step_slowdown" in alarms("\n".join(stays))


def test_bars_of_downloads_and_lightnings_postfix() -> None:
    download = "\n".join(
        f"Fetching 14 files:  {7 * n}%|##    | {n}/14 [00:{n:02d}<00:30, {r}]"
        for n, r in enumerate(["9.80it/s", "9.70it/s", "9.90it/s", "1.20s/it", "3.40s/it"], 1)
    )
    assert alarms(download) == []
    lightning = "\n".join(
        f"Epoch 0:  {10 * n}%|#   | {100 * n}/1000 [00:0{n}<01:00, {r}, v_num=3, train_loss=0.512]"
        for n, r in enumerate(["8.10it/s", "8.00it/s", "8.10it/s", "8.00it/s"] + ["4.0it/s"] * 4, 1)
    )
    found = first(lightning)
    assert found is not None and found[:2] == (Category.STRAGGLER, "training.step_slowdown")


SILENT = [
    "AlarmName: ec2-status  MetricName: StatusCheckFailed_System  StateValue: OK",
    "gcloud logging read 'protoPayload.methodName=\"compute.instances.hostError\"' --limit 10",
    'Health event "Virtual machine has been restored from a hardware failure": '
    "VirtualMachineHostCrashed resolved. The virtual machine is running and healthy.",
    "CPU 2 temperature is within range.",
    _r39("0006"),  # FreeIPMI SEL, every entry nominal
]


@pytest.mark.parametrize("text", SILENT)
def test_each_look_alike_stays_silent(text: str) -> None:
    assert alarms(text) == [], text


READ = [
    (
        '"Message": "The resource property \'GPU_SXM_4 Memory\' has detected errors of type '
        "'Row-Remapping Failure'.\",",
        C.GPU_HARDWARE,
        "platform.gpu_baseboard",
    ),
    (
        "The resource property GPU_SXM_3 Driver Event Message has detected errors of type [Tue May "
        "14 10:22:31 UTC 2024][1192][0] XID 48 DBE (Double Bit Error) ECC Error",
        C.GPU_HARDWARE,
        "platform.gpu_baseboard",
    ),
    (
        "The resource property GPU_SXM_1 Memory has detected errors of type 'Correctable ECC "
        "Error'.",
        C.GPU_DEGRADED,
        "platform.gpu_baseboard",
    ),
    (
        '{"Message": "Sensor \'CPU0_Temp\' reading of 95 (Cel) is above the 90 upper critical '
        'threshold.", "Severity": "Critical"}',
        C.HOST_HARDWARE,
        "platform.host_fault",
    ),
    ("CPU 2 temperature is greater than the upper critical threshold.", C.HOST_HARDWARE, None),
    (
        "Is there a reason why node 3 is consistently 30% behind the rest in every all-reduce?",
        C.STRAGGLER,
        None,
    ),
    (
        "Throughput is fine on node 1, but node 4 is 40% slower than the others since this "
        "morning.",
        C.STRAGGLER,
        None,
    ),
    # round 29's development records
    (_r39("0001"), C.HOST_HARDWARE, "cloud.host_degraded"),  # AWS Health: retirement scheduled
    (_r39("0005"), C.HOST_HARDWARE, "platform.host_fault"),  # FreeIPMI: PS2 failure detected
    (_r39("0008"), C.HOST_HARDWARE, "platform.host_fault"),  # ILOM: fault.cpu.intel.timeout
    (_r39("0009"), C.HOST_HARDWARE, "platform.host_warning"),  # NetApp: DIMM_Degraded
    (_r39("0014"), C.STRAGGLER, None),  # DeepSpeed: step() from ~100ms to 10,000+ ms
    (_r39("0018"), C.STRAGGLER, None),  # 训练突然变得很慢
    (_r39("0019"), C.HOST_HARDWARE, "platform.host_fault"),  # hplog -p: a failed supply bay
    # round 30's development records: gloo's transport
    (corpus_text("fresh_40", "0002"), C.NETWORK, "dist.gloo_transport"),  # pair.cc: refused
    (corpus_text("fresh_40", "0003"), C.NETWORK, "dist.gloo_transport"),  # connectFullMesh
]


@pytest.mark.parametrize(("text", "category", "rule"), READ)
def test_each_missed_wording_is_read(text: str, category: Category, rule: str | None) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found
    if rule is not None:
        assert found[1] == rule


def test_gloos_connected_peers_and_c10ds_address_warning_stay_silent() -> None:
    assert alarms(corpus_text("fresh_40", "0009")) == []  # c10d's IPv6 `gai error` warning
    assert alarms(corpus_text("fresh_40", "0014")) == []  # gloo connected to 0 peer ranks


def test_a_question_whether_it_is_a_slowdown_asks_and_does_not_report() -> None:
    assert (
        alarms("The bar says 3.79s/it right after the eval at step 500, is that a slowdown?") == []
    )
