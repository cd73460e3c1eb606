"""Helpers of the explainer's tests: corpus records read by id, and the verdicts asserted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from diagnosis.explain import explain
from diagnosis.model import Category, ComponentKind, Severity

CORPUS = Path(__file__).resolve().parent / "fixtures/explain/corpus"


def corpus_text(batch: str, number: str) -> str:
    """Return the text of record `<batch>-<number>` (as collected), e.g. ("fresh_16", "0002")."""
    for line in (CORPUS / f"{batch}.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["id"].startswith(f"{batch}-{number}-"):
            return str(record["text"])
    raise KeyError(f"{batch}-{number}")


def first(text: str) -> tuple[Category, str, ComponentKind | None] | None:
    """Return the first finding's category, rule and component, or None without findings."""
    found = explain(text)
    return (found[0].category, found[0].rule, found[0].component) if found else None


def record_read_as(batch: str, number: str) -> tuple[Category, str] | None:
    """Return the category and rule of the first finding of record `<batch>-<number>`, or None."""
    found = first(corpus_text(batch, number))
    return found[:2] if found else None


RoundCase = tuple[str, str, Category, str]
"""A round's record and how it is read: (batch, number, category, rule)."""


def round_tests(cases: list[RoundCase]) -> Callable[[str, str, Category, str], None]:
    """Return the test that each record of a round's classes is read as its class (batch,
    number, category, rule); a module binds it to its own `test_` name."""

    @pytest.mark.parametrize(("batch", "number", "category", "rule"), cases)
    def each_class_is_read(batch: str, number: str, category: Category, rule: str) -> None:
        assert record_read_as(batch, number) == (category, rule)

    return each_class_is_read


def read_as_tests(cases: list[tuple[str, Category]]) -> Callable[[str, Category], None]:
    """Return the test that each text's first finding has its category (a round's classes in
    other words than its records'); a module binds it to its own `test_` name."""

    @pytest.mark.parametrize(("text", "category"), cases)
    def each_is_read(text: str, category: Category) -> None:
        found = first(text)
        assert found is not None and found[0] == category, (text, found)

    return each_is_read


def silence_tests(texts: list[str]) -> Callable[[str], None]:
    """Return the test that each text (a look-alike of a round's classes) raises no alarm; a
    module binds it to its own `test_` name."""

    @pytest.mark.parametrize("text", texts)
    def each_is_silent(text: str) -> None:
        assert alarms(text) == [], text

    return each_is_silent


def alarms(text: str) -> list[str]:
    """Return the rules of findings at warning or worse."""
    return [f.rule for f in explain(text) if f.severity != Severity.INFO]


REVIEWS = Path(__file__).resolve().parent / "fixtures/explain_review"


def review(name: str) -> list[dict[str, str]]:
    """Return the written review set `<name>.json` (tests/fixtures/explain_review)."""
    cases: list[dict[str, str]] = json.loads((REVIEWS / f"{name}.json").read_text())
    return cases


def review_cases(
    cases: list[dict[str, str]], benign: bool, known: set[str] | dict[str, str]
) -> list[dict[str, str]]:
    """Return the healthy (`benign`) or faulty cases of a review set, less its known limits."""
    return [c for c in cases if (c["label"] == "benign") is benign and c["id"] not in known]


def read_as_labelled(case: dict[str, str]) -> bool:
    """Return whether the first finding of a case's text has the case's category."""
    found = first(case["text"])
    return found is not None and found[0] == Category(case["label"])


def read_right(case: dict[str, str]) -> bool:
    """Return whether a case is read as labelled: a healthy one with no alarm, a fault with its
    category first."""
    if case["label"] == "benign":
        return alarms(case["text"]) == []
    return read_as_labelled(case)


def limits_apart(
    cases: list[dict[str, str]], known: set[str], is_known: bool
) -> list[dict[str, str]]:
    """Return the cases of a review set that are (`is_known`) or are not its known limits."""
    return [c for c in cases if (c["id"] in known) is is_known]


def review_tests(
    cases: list[dict[str, str]], known: set[str]
) -> tuple[Callable[[dict[str, str]], None], Callable[[], None]]:
    """Return the two tests of a review set with its known limits: every other case is read
    as labelled, and every known limit is still not (a reader that learns one moves it out of
    the list). A module binds them to its own `test_` names."""

    @pytest.mark.parametrize("case", limits_apart(cases, known, False), ids=lambda c: c["id"])
    def read_as_labelled(case: dict[str, str]) -> None:
        assert read_right(case), case["why"]

    def known_limits_still_missed() -> None:
        for case in limits_apart(cases, known, True):
            assert not read_right(case), case["id"]

    return read_as_labelled, known_limits_still_missed
