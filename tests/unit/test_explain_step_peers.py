"""Workers that print the same step without naming themselves (diagnosis/explain/peers.py,
issue 21): MXNet's ``Epoch[0] Batch [100]	Speed: 889.48 samples/sec`` once per worker. The
same step printed again is another worker; one far below the others of its step is slow.

The positive text is a record of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_22.jsonl); the negative controls are that record edited as
the comment says, or lines written here.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.peers import MIN_STEP_PEERS, step_rate_of
from diagnosis.explain.records import records
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

MXNET = corpus_text("fresh_22", "0000")  # MXNet dist_sync: one of three workers at 889 samples/s


def test_a_worker_far_below_the_others_of_its_step_is_a_straggler() -> None:
    found = first(MXNET)
    assert found is not None and found[:2] == (Category.STRAGGLER, "peers.slow_device"), found


def test_the_step_names_the_group_and_other_figures_are_blanked() -> None:
    a = step_rate_of("INFO:root:Epoch[0] Batch [100]\tSpeed: 1326.73 samples/sec\tacc=0.70")
    b = step_rate_of("INFO:root:Epoch[0] Batch [100]\tSpeed: 889.48 samples/sec\tacc=0.78")
    c = step_rate_of("INFO:root:Epoch[0] Batch [200]\tSpeed: 1317.21 samples/sec\tacc=0.97")
    assert a is not None and b is not None and c is not None
    assert a[0] == b[0] != c[0]
    assert (a[1], b[1]) == (1326.73, 889.48)
    assert step_rate_of("step 1200/5000 loss 2.1 | 51234 tokens/sec")[1] == 51234.0  # type: ignore[index]


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 1:  45%|####5     | 45/100 [00:10<00:12, 4.50it/s, loss=0.3]",  # an epoch alone
        "GPU 3 step 100 1200 samples/sec",  # a named device: rate_of's, not a step group
        "step 100 loss 2.1 lr 0.0003",  # no rate
    ],
)
def test_lines_that_are_not_a_workers_step_rate(line: str) -> None:
    assert step_rate_of(line) is None


def _worker_lines(rates: list[float], step: int = 100) -> str:
    return "\n".join(f"INFO:root:Epoch[0] Batch [{step}]\tSpeed: {r} samples/sec" for r in rates)


@pytest.mark.parametrize(
    "text",
    [
        MXNET.replace("889.48", "1301.50"),  # the slow worker made as fast as the others
        _worker_lines([1320.0, 880.0]),  # two workers: fewer than MIN_STEP_PEERS
        _worker_lines([1320.0, 1290.0, 1180.0, 1250.0]),  # jitter within 30 % of the median
        # one worker's steps, each printed once, the first slow (warm-up): not peers
        "\n".join(
            _worker_lines([r], step) for step, r in ((100, 400.0), (200, 1300.0), (300, 1310.0))
        ),
        # one process whose batch counter restarts each epoch, the first epoch slow (warm-up)
        "epoch 0\nbatch 100 | loss 2.31 | 812.4 samples/sec\nepoch 1\n"
        "batch 100 | loss 1.92 | 1450.0 samples/sec\nepoch 2\n"
        "batch 100 | loss 1.75 | 1462.3 samples/sec",
        # a sweep printed as lines: precisions and models differ in an integer, not workers
        "fp32 batch 64: 410.2 img/s\nfp16 batch 64: 1302.5 img/s\nfp8 batch 64: 2398.0 img/s",
        "resnet50 batch 64: 1400.1 images/sec\nresnet101 batch 64: 820.4 images/sec\n"
        "resnet152 batch 64: 540.9 images/sec",
        # a resumed run replays its steps, the first one after the resume slow
        "step 1000 | loss 2.10 | 3500.2 tokens/s\nstep 1100 | loss 2.08 | 3510.2 tokens/s\n"
        "Resuming from checkpoint step 1000\nstep 1000 | loss 2.10 | 1200.5 tokens/s\n"
        "step 1100 | loss 2.08 | 3490.0 tokens/s\nResuming from checkpoint step 1000\n"
        "step 1000 | loss 2.10 | 3480.2 tokens/s",
        # gradient accumulation: the last micro-step carries the optimizer step
        "step 10 | micro 0 | 1210.5 tokens/s\nstep 10 | micro 1 | 1204.1 tokens/s\n"
        "step 10 | micro 2 | 1198.7 tokens/s\nstep 10 | micro 3 | 702.3 tokens/s",
        # healthy workers whose rates carry thousands separators
        "Epoch[0] Batch [100]\tSpeed: 1,050.00 samples/sec\n"
        "Epoch[0] Batch [100]\tSpeed: 1,020.00 samples/sec\n"
        "Epoch[0] Batch [100]\tSpeed: 1,045.00 samples/sec",
        # a tqdm bar's refreshes of one step, written to a file with carriage returns
        "Training:  10%| 100/1000 [00:20<03:00,  5.00it/s, step=100, loss=2.31]\r"
        "Training:  10%| 100/1000 [00:21<03:09,  4.75it/s, step=100, loss=2.31]\r"
        "Training:  10%| 100/1000 [00:35<05:15,  2.85it/s, step=100, loss=2.31]",
        # a progress bar redrawn within one epoch, its rate climbing from the start
        "\n".join(
            f"Epoch 1: {i}%| {i}/100 [00:{i:02d}<00:30, {r}it/s]"
            for i, r in ((5, 1.1), (50, 4.4), (90, 4.5))
        ),
    ],
)
def test_steady_or_single_worker_progress_stays_silent(text: str) -> None:
    assert MIN_STEP_PEERS == 3
    assert alarms(text) == [], text


def test_rates_with_thousands_separators_are_read_whole() -> None:
    found = step_rate_of("Epoch[0] Batch [100]\tSpeed: 1,050.00 samples/sec")
    assert found is not None and found[1] == 1050.0
    slow = "\n".join(
        f"Epoch[0] Batch [100]\tSpeed: {rate} samples/sec"
        for rate in ("1,050.00", "1,020.50", "610.25")
    )
    found_slow = first(slow)
    assert found_slow is not None and found_slow[1] == "peers.slow_device", found_slow


def test_a_long_run_of_digits_is_no_rate() -> None:
    assert step_rate_of("1" * 4000) is None


def test_a_line_as_long_as_the_window_is_not_joined_to_the_next_of_its_logger() -> None:
    line = "INFO:root:Epoch[0] Batch [100]\tSpeed: 889.48 samples/sec\tTrain-accuracy=0.785644"
    assert len(line) == 80
    following = "INFO:root:Epoch[0] Batch [200]\tSpeed: 1317.21 samples/sec"
    assert [r.body for r in records(f"{line}\n{following}")] == [line, following]
    # a message cut by the terminal at 80 columns is still joined back
    cut = "x" * 79 + "y"
    assert [r.body for r in records(f"{cut}\nrest of the message")] == [cut + "rest of the message"]


def test_window_wide_worker_lines_with_a_leading_clock_stay_apart_and_are_peers() -> None:
    rates = ("889.48", "893.10", "402.77", "890.01")
    lines = [
        f"10:00:0{1 + i // 2} INFO Epoch[0] Batch [100]\tSpeed: {rate} samples/sec"
        "\taccuracy=0.1234 -----------------------"
        for i, rate in enumerate(rates)
    ]
    assert {len(line) for line in lines} == {100}  # a usual terminal width
    assert len(list(records("\n".join(lines)))) == 4
    found = first("\n".join(lines))
    assert found is not None and found[1] == "peers.slow_device", found
