"""The learned baseline's protocol (bench/explain_learned.py): what it counts and what it learns
from. The classifier itself is measured by the bench, not here."""

from __future__ import annotations

import pytest

from bench import explain_learned as learned
from bench.explain import Record


def _record(n: int, source: str, label: str = "straggler") -> Record:
    return Record(f"r{n}", f"text {n}", label, "straggler", "https://example.org", source, "")


def test_features_fold_numbers_and_pair_neighbours():
    feats = learned.features("Step 12 took 3.5 s, step 13 took 4,2 s")
    assert "<n>" in feats
    assert "took <n>" in feats
    assert not any(f[0].isdigit() for f in feats)
    assert feats == sorted(set(feats))


def test_features_read_cjk_characters_one_by_one():
    assert {"变", "慢", "变 慢"} <= set(learned.features("训练变慢"))


def test_fallback_change_counts_only_confident_fault_guesses():
    guesses = [
        ("straggler", "straggler", 0.9),  # right
        ("benign", "straggler", 0.95),  # a healthy text named a fault
        ("network", "straggler", 0.85),  # a fault named wrong: was wrong, stays wrong
        ("straggler", "straggler", 0.5),  # below the threshold
        ("benign", "benign", 0.99),  # a quiet guess changes nothing
    ]
    assert learned.fallback_change(guesses, 0.8) == {
        "gained": 1,
        "benign_named_fault": 1,
        "fault_named_wrong": 1,
    }


def test_choose_takes_the_largest_net_gain_and_none_without_one():
    good = [("straggler", "straggler", 0.65)] * 3 + [("benign", "straggler", 0.45)] * 2
    assert learned.choose(good) == 0.5
    harmful = [("straggler", "straggler", 0.95), ("benign", "straggler", 0.95)]
    assert learned.choose(harmful) is None


def test_cross_validation_never_learns_from_the_source_it_guesses(monkeypatch: pytest.MonkeyPatch):
    records = [_record(n, f"owner/repo#{n % 7}") for n in range(40)]
    seen_by_fold: list[set[str]] = []

    class Spy:
        def __init__(self, examples):
            seen_by_fold.append({text for text, _ in examples})

        def guesses(self, held):
            for r in held:
                assert all(
                    other.text not in seen_by_fold[-1]
                    for other in records
                    if other.source_key == r.source_key
                )
            return [(r.label, "straggler", 1.0) for r in held]

    monkeypatch.setattr(learned, "Classifier", Spy)
    silent = {r.id for r in records[::2]}
    out = learned.cross_validated(records, silent, [("written", "benign")])
    assert len(out) == len(silent)
    assert len(seen_by_fold) == learned.FOLDS
    assert all("written" in seen for seen in seen_by_fold)
