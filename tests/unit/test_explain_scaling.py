"""The setups a text times one after the other (diagnosis/explain/scaling.py): what counts as a
setup, what is compared, and the bounds on what is kept."""

from __future__ import annotations

from diagnosis.explain.records import records
from diagnosis.explain.scaling import MAX_FIGURES, MAX_SETUPS, SetupReader


def read(text: str) -> SetupReader:
    reader = SetupReader()
    for rec in records(text):
        reader.feed(rec, rec.body.lower())
    return reader


def test_a_node_count_sets_the_scale_of_its_line() -> None:
    reader = read("2 nodes with 8 GPUs each: 4.0 s/it")
    assert [(s.unit, s.count) for s in reader.setups] == [("node", 2)]


def test_two_counts_on_one_line_are_two_setups_when_a_figure_stands_between() -> None:
    reader = read("with one GPU 3s/it, with two GPUs 56s/it")
    assert [(s.unit, s.count, s.figures) for s in reader.setups] == [
        ("gpu", 1, [(True, 3.0)]),
        ("gpu", 2, [(True, 56.0)]),
    ]
    assert reader.slower() is not None


def test_figures_before_any_count_and_setups_in_other_units_are_not_compared() -> None:
    assert read("each step takes 0.5 s/it\n2 GPUs: 5.0 s/it").slower() is None
    assert read("1 node: 1.0 s/it\n8 GPUs: 5.0 s/it").slower() is None


def test_fewer_devices_slower_is_no_finding() -> None:
    assert read("4 GPUs: 1.0 s/it\n1 GPU: 3.5 s/it").slower() is None


def test_what_is_kept_is_bounded() -> None:
    many = "\n".join(f"{n} GPUs: {n}.0 s/it" for n in range(2, 2 + 3 * MAX_SETUPS))
    assert len(read(many).setups) == MAX_SETUPS
    long = "1 GPU:\n" + "\n".join(f"step {k}: 1.{k} s/it" for k in range(3 * MAX_FIGURES))
    assert len(read(long).setups[0].figures) == MAX_FIGURES
