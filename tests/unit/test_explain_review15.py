"""Reports of speed written by a reviewer who saw neither the rules nor the corpus
(tests/fixtures/explain_review/review15.json), and the general readers they called for: tables
of members' figures (diagnosis/explain/tables.py), readers in German, French, Spanish,
Portuguese, Russian and Japanese, Megatron's straggler detector, a utilisation that falls, a
member last every time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

REVIEW = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/explain_review/review15.json").read_text()
)
KNOWN_LIMITS = {
    "r15-06": "four DeepSpeed lines, one before the drop: too short a stream to call a trend",
    "r15-30": "an inference server's throughput: serving is not read as training",
    "r15-58": "Spanish `tarda 4 horas en vez de 1,5`: figures against the past are read in English",
    "r15-75": "a bandwidthTest summary in words with devices as ranges (`devices 0-3 and 5-7`)",
}
CAUSE_NAMED = {"r15-80": Category.GPU_DEGRADED, "r15-31": Category.NETWORK}
"""Reports of a slow member that quote its cause: the cause is the finding (nvidia-smi's `HW
Slowdown: Active`, a throttled GPU; review 17 labels this shape gpu.degraded; a NIC that
negotiated 100 Gb/s instead of 400 Gb/s is the network's, as rules_slow_cause reads causes)."""


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in REVIEW
        if c["label"] == "straggler" and c["id"] not in KNOWN_LIMITS | CAUSE_NAMED.keys()
    ],
    ids=lambda c: c["id"],
)
def test_each_report_of_a_slowdown_is_read_as_a_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category.STRAGGLER, case["why"]


@pytest.mark.parametrize(
    "case", [c for c in REVIEW if c["id"] in CAUSE_NAMED], ids=lambda c: c["id"]
)
def test_a_slow_member_whose_cause_is_quoted_is_read_as_the_cause(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == CAUSE_NAMED[case["id"]], case["why"]


@pytest.mark.parametrize(
    "case", [c for c in REVIEW if c["label"] == "benign"], ids=lambda c: c["id"]
)
def test_each_look_alike_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def test_the_known_limits_are_the_reviewers_straggler_cases() -> None:
    labels = {c["id"]: c["label"] for c in REVIEW}
    assert all(labels[k] == "straggler" for k in KNOWN_LIMITS)


def _table(rows: list[tuple[str, str]], header: str, caption: str = "") -> str:
    lines = [caption, "", header, "|---|---|"] if caption else [header, "|---|---|"]
    return "\n".join([*lines, *(f"| {a} | {b} |" for a, b in rows)])


RATES = [("n01", "2,310"), ("n02", "2,295"), ("n03", "2,301"), ("n04", "2,307"), ("n05", "2,299")]


def test_a_table_with_one_member_far_below_its_peers_is_a_straggler() -> None:
    slow = [(n, "1,020" if n == "n03" else v) for n, v in RATES]
    assert first(_table(slow, "| node | samples/s |")) is not None
    assert first(_table(RATES, "| node | samples/s |")) is None  # even figures


def test_a_time_column_is_read_the_other_way_round() -> None:
    times = [(str(r), "893" if r == 5 else str(410 + r)) for r in range(8)]
    assert first(_table(times, "| rank | step time (ms) |")) is not None
    fast = [(str(r), "205" if r == 5 else str(410 + r)) for r in range(8)]
    assert first(_table(fast, "| rank | step time (ms) |")) is None  # one member faster


def test_a_column_read_by_the_caption_and_one_naming_nothing_is_not_read() -> None:
    times = [(str(r), "893" if r == 5 else str(410 + r)) for r in range(8)]
    assert first(_table(times, "| rank | fwd+bwd |", "Per-rank time (ms):")) is not None
    assert first(_table(times, "| rank | value |")) is None


def test_a_sweep_over_sizes_is_no_group_of_peers() -> None:
    sweep = "\n".join(
        [
            "#       size         count      type   redop    root     time   algbw   busbw",
            *(
                f"     {s:>8}     {s // 4:>8}     float     sum      -1    {t:>5}    {b:>5}  {b:>5}"
                for s, t, b in [(8, 30.1, 0.0), (1024, 31.2, 0.03), (1048576, 60.4, 17.4)]
                + [(16777216, 180.2, 93.1), (268435456, 1800.3, 149.1)]
            ),
        ]
    )
    assert first(sweep) is None


def test_bare_numbers_need_a_header_that_names_members_and_no_gaps() -> None:
    rows = [(str(n), "4.1" if n == 2 else "9.8") for n in range(5)]
    assert first(_table(rows, "| step | it/s |")) is None
    assert first(_table(rows, "| worker | it/s |")) is not None
    sweep = [(str(n), "4.1" if n == 1 else "9.8") for n in (1, 2, 4, 8, 16)]
    assert first(_table(sweep, "| nodes | samples/s per node |")) is None


@pytest.mark.parametrize(
    ("header", "rows"),
    [
        ("| GPU | TFLOPS |", [("A100", "312"), ("H100", "989"), ("V100", "125"), ("T4", "65")]),
        ("| epoch | time (s) |", [(f"epoch {n}", "312" if n == 1 else "100") for n in range(1, 6)]),
        ("| batch | samples/s |", [(f"bs{n}", str(n * 10)) for n in (8, 16, 32, 64, 128)]),
        ("| node | samples |", [(f"n0{n}", "10" if n == 3 else "100") for n in range(1, 6)]),
    ],
)
def test_models_epochs_configurations_and_counts_are_no_peers(
    header: str, rows: list[tuple[str, str]]
) -> None:
    assert first(_table(rows, header)) is None


def test_a_row_explained_by_its_own_gpu_count_is_no_straggler() -> None:
    table = "\n".join(
        [
            "| node | GPUs | samples/s |",
            "|---|---|---|",
            *(
                f"| n0{n} | {4 if n == 3 else 8} | {1200 if n == 3 else 2400} |"
                for n in range(1, 6)
            ),
        ]
    )
    assert first(table) is None
    assert first(table.replace("| 4 |", "| 8 |")) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Das Training ist nicht langsamer geworden, alle Knoten laufen gleich schnell.",
        "Die A100 ist langsamer als die H100, das ist bei diesem Modell erwartet.",
        "L'entraînement n'est pas plus lent sur le GPU 3 que sur les autres.",
        "La inferencia es más lenta en la GPU 2, pero el entrenamiento va bien.",
        "El entrenamiento es más lento con batch 64, lo cual es normal.",
        "Обучение не стало медленнее после обновления драйвера.",
        "学習の速度は遅くならない。",
        "O treinamento ficou mais lento porque aumentamos o tamanho do lote, é esperado.",
    ],
)
def test_denied_explained_or_compared_slowness_in_other_languages_stays_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "text",
    [
        "Seit gestern ist das Training auf Knoten 4 deutlich langsamer als auf den anderen.",
        "Depuis la mise à jour, l'entraînement ralentit après chaque époque.",
        "O treinamento ficou muito mais lento no nó 3 do que nos outros.",
        "После третьей эпохи обучение замедлилось в три раза.",
        "GPU 2だけ他のGPUより遅いです。",
    ],
)
def test_a_slowdown_told_in_other_languages_is_read(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER, text


def test_megatron_minmax_names_the_slow_rank_only_when_far_apart() -> None:
    line = (
        " 0: INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: {mn}ms/8 | "
        "MxRtt/Rnk: {mx}ms/57 | MnPwr/Rnk: 601796W/8 | MxPwr/Rnk: 683801W/18"
    )
    healthy = line.format(mn="3453.08", mx="3468.20")
    slow = line.format(mn="1021.30", mx="2544.80")
    assert first(healthy) is None
    found = first(slow)
    assert found is not None and found[:2] == (Category.STRAGGLER, "straggler.megatron_minmax")


def test_a_utilisation_that_falls_is_a_slowdown_and_one_that_holds_is_not() -> None:
    assert first("MFU was ~52% for the first 10k steps, now it sits at 31%.") is not None
    assert first("MFU was ~52% for the first 10k steps, now it sits at 51%.") is None
    assert first("MFU was 40% before, now it is 55% after the fix.") is None
