"""Tables over time (diagnosis/explain/tables.py, TableReader.sequences): rows that are epochs
or steps, a column of their durations (a figure under a header that names a time, or a clock),
read as one stream for the slowdown checks."""

from __future__ import annotations

import pytest

from diagnosis.explain.tables import TableReader
from tests.explain_helpers import alarms

FASTAI = (
    "epoch\ttrain_loss\tvalid_loss\taccuracy\ttime\n"
    "0\t1.2031\t0.9882\t0.6912\t{0}\n1\t0.8744\t0.8120\t0.7416\t{1}\n"
    "2\t0.7315\t0.7441\t0.7632\t{2}\n3\t0.6502\t0.7023\t0.7784\t{3}\n"
    "4\t0.5928\t0.6810\t0.7848\t{4}"
)


def _columns(text: str) -> list[list[float]]:
    reader: TableReader[int] = TableReader()
    for n, line in enumerate(text.splitlines()):
        reader.feed(line, n)
    return [[seconds for seconds, _ in column] for column in reader.sequences()]


def test_an_epoch_table_s_clock_column_is_read_as_seconds() -> None:
    text = FASTAI.format("01:12", "01:13", "03:41", "03:45", "1:03:43")
    assert _columns(text) == [[72, 73, 221, 225, 3823]]


def test_epoch_rows_without_a_header_are_read_under_their_caption() -> None:
    text = "epoch durations (h:mm:ss):\nepoch 1  0:41:12\nepoch 2  0:41:50\nepoch 3  1:27:33"
    assert _columns(text) == [[2472, 2510, 5253]]


def test_a_rate_column_is_read_as_its_inverse() -> None:
    text = "step  loss  samples/s\n100  2.1  400\n200  2.0  400\n300  1.9  200"
    assert _columns(text) == [[1 / 400, 1 / 400, 1 / 200]]


@pytest.mark.parametrize(
    "text",
    [
        "epoch  loss  eta\n1  2.1  01:30\n2  2.0  01:10\n3  1.9  00:50",  # a time left
        "epoch  loss  started\n1  2.1  10:01:00\n2  2.0  10:41:00\n3  1.9  11:59:00",  # a clock
        "epoch  loss  acc\n1  2.1  0.5\n2  2.0  0.6\n3  1.9  0.7",  # no time
        "epoch  time\n3  01:12\n2  01:13\n1  03:41",  # not in order: no sequence
    ],
)
def test_times_of_day_times_left_and_tables_of_no_time_are_no_sequence(text: str) -> None:
    assert _columns(text) == []


def test_an_epoch_table_whose_epochs_take_three_times_longer_is_a_slowdown() -> None:
    slow = FASTAI.format("01:12", "01:13", "03:41", "03:45", "03:43")
    assert "training.step_slowdown" in alarms(slow)
    steady = FASTAI.format("01:12", "01:13", "01:11", "01:14", "01:12")
    assert alarms(steady) == []
    warm_up = FASTAI.format("03:12", "01:13", "01:11", "01:14", "01:12")
    assert alarms(warm_up) == []


def _groups(text: str) -> list[list[tuple[str, float]]]:
    reader: TableReader[int] = TableReader()
    for n, line in enumerate(text.splitlines()):
        reader.feed(line, n)
    return [[(label, round(rate, 3)) for label, rate, _ in group] for group in reader.groups()]


def test_a_pandas_frame_s_index_is_not_a_column() -> None:
    frame = (
        "   rank  compute_time(s)  idle_time_pctg\n"
        "0     0             2.60            0.74\n"
        "1     1             2.61            0.74\n"
        "2     2             4.29            0.72\n"
        "3     3             2.60            0.75"
    )
    groups = _groups(frame)
    assert [label for label, _ in groups[0]] == ["0", "1", "2", "3"]
    assert groups[0][2] == ("2", round(1 / 4.29, 3))


def test_a_column_of_times_with_their_unit_is_read_without_a_named_header() -> None:
    profile = (
        "rank  Self CUDA (aten::mm)  nccl:all_reduce CUDA total\n"
        "0     612.3ms               402.7ms\n"
        "1     609.8ms               405.1ms\n"
        "2     1008.6ms              8.4ms\n"
        "3     611.0ms               403.9ms"
    )
    # the kernel's column is read (a time in each cell); the total is no member's work
    assert len(_groups(profile)) == 1
    assert "peers.slow_device" in alarms(profile)
    mixed = "rank  Self CUDA\n0     612.3ms\n1     0.61s\n2     1.008s\n3     0.611s"
    assert _groups(mixed) == []
