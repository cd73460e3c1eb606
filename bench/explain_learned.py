"""A learned baseline for the explainer: does a bag-of-words classifier read the real-log corpus
better than the rules, alone or as their fallback where they say nothing?

Protocol (the evaluation part is scored once, after every choice is made):
1. The classifier: a multinomial logistic regression (scikit-learn) over the presence of words,
   numbers as one token, CJK characters and adjacent pairs of these. It learns from the
   development part of the corpus (bench/explain.py's split by source) and the written review
   sets (tests/fixtures/explain_review; their `other` counts as benign).
2. The fallback's threshold is chosen on the development part alone: 5-fold cross-validation
   grouped by source, the threshold whose fallback gains the most records net (faults it names
   right, less benign or unknown records it names a fault). None when no threshold gains.
3. The evaluation part is scored three ways: the rules alone (`diagnosis.explain`), the
   classifier alone, and the rules with the classifier where the rules have no finding.

    python -m bench.explain_learned    # about 20 s; writes bench/results/explain_learned.json
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import zlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.explain import ROOT, Record, correct, load, publish, split_of, verdict

REVIEWS = ROOT / "tests" / "fixtures" / "explain_review"
RESULTS = ROOT / "bench" / "results" / "explain_learned.json"
THRESHOLDS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
FOLDS = 5
_QUIET = {"benign", "unknown"}
_TOKEN = re.compile(r"[a-z]+(?:/[a-z]+)?|\d+(?:[.,]\d+)?|[\u3040-\u30ff\u4e00-\u9fff]|%|×")

Example = tuple[str, str]
"""A text and its label."""
Guess = tuple[str, str, float]
"""A record's label, the classifier's class and its probability."""


def features(text: str) -> list[str]:
    """Return the text's features: tokens (a number is `<n>`) and adjacent pairs, each once."""
    words = ["<n>" if m[0].isdigit() else m for m in _TOKEN.findall(text.lower())]
    return sorted(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)})


def written_examples(folder: Path = REVIEWS) -> list[Example]:
    """Return the review sets' labelled texts (breaker findings without a label are left out)."""
    out: list[Example] = []
    for path in sorted(folder.glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            label = item.get("label")
            if label:
                out.append((item["text"], "benign" if label == "other" else label))
    return out


class Classifier:
    """The bag-of-words baseline, fitted on the examples given."""

    def __init__(self, examples: Sequence[Example]) -> None:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression

        self._vectors = CountVectorizer(analyzer=features, binary=True, min_df=2)
        matrix = self._vectors.fit_transform([text for text, _ in examples])
        self._model = LogisticRegression(C=1.0, max_iter=2000)
        self._model.fit(matrix, [label for _, label in examples])

    def guesses(self, records: Sequence[Record]) -> list[Guess]:
        """Return, per record, its label, the most likely class and that class's probability."""
        if not records:
            return []
        probs = self._model.predict_proba(self._vectors.transform([r.text for r in records]))
        classes = self._model.classes_
        return [
            (r.label, str(classes[p.argmax()]), float(p.max()))
            for r, p in zip(records, probs, strict=True)
        ]


def fallback_change(guesses: Iterable[Guess], threshold: float) -> dict[str, int]:
    """Count what a fallback at `threshold` does to records the rules left without a finding:
    faults it names right, quiet records it names a fault, faults it names wrong (still wrong)."""
    gained = harmed = wrong = 0
    for label, guess, prob in guesses:
        if prob < threshold or guess in _QUIET:
            continue
        if guess == label:
            gained += 1
        elif label in _QUIET:
            harmed += 1
        else:
            wrong += 1
    return {"gained": gained, "benign_named_fault": harmed, "fault_named_wrong": wrong}


def _fold(record: Record) -> int:
    return zlib.crc32(record.source_key.encode("utf-8")) % FOLDS


def cross_validated(
    dev: Sequence[Record], silent: set[str], written: Sequence[Example]
) -> list[Guess]:
    """Guesses for the development records the rules left silent, each from a classifier that
    saw none of its source."""
    out: list[Guess] = []
    for k in range(FOLDS):
        held = [r for r in dev if _fold(r) == k]
        seen = [(r.text, r.label) for r in dev if _fold(r) != k]
        out += Classifier([*seen, *written]).guesses([r for r in held if r.id in silent])
    return out


def choose(guesses: Sequence[Guess]) -> float | None:
    """Return the threshold with the largest net gain on `guesses`, None when none gains."""
    best, best_net = None, 0
    for threshold in THRESHOLDS:
        change = fallback_change(guesses, threshold)
        net = change["gained"] - change["benign_named_fault"]
        if net > best_net:
            best, best_net = threshold, net
    return best


def run() -> dict[str, Any]:
    """Return the result document."""
    records = load()
    rules = {r.id: verdict(r.text)[0] for r in records}
    silent = {rid for rid, category in rules.items() if category == "unknown"}
    dev = [r for r in records if split_of(r.source_key) == "dev"]
    held = [r for r in records if split_of(r.source_key) == "eval"]
    written = written_examples()
    cv = cross_validated(dev, silent, written)
    chosen = choose(cv)
    classifier = Classifier([*((r.text, r.label) for r in dev), *written])
    alone = classifier.guesses(held)
    on_silent = classifier.guesses([r for r in held if r.id in silent])
    rules_right = sum(correct(r.label, rules[r.id]) for r in held)

    def accuracy(right: int) -> float:
        return round(right / len(held), 4)

    by_threshold = {}
    for threshold in THRESHOLDS:
        change = fallback_change(on_silent, threshold)
        by_threshold[str(threshold)] = {
            **change,
            "accuracy": accuracy(rules_right + change["gained"] - change["benign_named_fault"]),
            "dev_cross_validated": fallback_change(cv, threshold),
        }
    return {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "training": {"development_records": len(dev), "written_texts": len(written)},
        "eval_records": len(held),
        "eval_silent_under_rules": len(on_silent),
        "rules_alone": accuracy(rules_right),
        "classifier_alone": accuracy(sum(correct(label, guess) for label, guess, _ in alone)),
        "threshold_chosen_on_dev": chosen,
        "rules_with_fallback": by_threshold[str(chosen)]["accuracy"] if chosen else None,
        "fallback_by_threshold": by_threshold,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the baseline, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not write the results file")
    args = parser.parse_args(argv)
    publish(run(), None if args.no_write else RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
