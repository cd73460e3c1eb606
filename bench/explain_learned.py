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

4. `--write-model` ships the classifier fitted in step 3, with the threshold of step 2, as the
   hint of `trainguard explain` (diagnosis/explain/hint.py) for texts no rule reads.

    python -m bench.explain_learned [--write-model]    # about a minute; writes
                                                       # bench/results/explain_learned.json
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import platform
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.explain import ROOT, Record, correct, load, publish, split_of, verdict
from diagnosis.explain.hint import features, load_model

REVIEWS = ROOT / "tests" / "fixtures" / "explain_review"
RESULTS = ROOT / "bench" / "results" / "explain_learned.json"
MODEL = ROOT / "diagnosis" / "explain" / "data" / "hint_model.json.gz"
THRESHOLDS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
FOLDS = 5
NEVER = 1.01
"""The shipped threshold when no threshold gains on the development part: the hint is off."""
_QUIET = {"benign", "unknown"}

Example = tuple[str, str]
"""A text and its label."""
Guess = tuple[str, str, float]
"""A record's label, the classifier's class and its probability."""


def written_examples(folder: Path = REVIEWS) -> list[Example]:
    """Return the review sets' labelled texts (breaker findings without a label are left out)."""
    out: list[Example] = []
    for path in sorted(folder.glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            label = item.get("label")
            if label:
                out.append((item["text"], "benign" if label == "other" else label))
    return out


SHINGLE = 6
"""Words in a run that `overlaps` compares."""


def shingles(text: str) -> set[tuple[str, ...]]:
    """Return the text's runs of SHINGLE words (lower case); a shorter text is one run."""
    words = text.lower().split()
    if len(words) <= SHINGLE:
        return {tuple(words)}
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def overlaps(text: str, held: set[tuple[str, ...]]) -> bool:
    """Return whether at least half of the text's runs of words occur in `held` (the runs of the
    evaluation part): such a text would teach the model an evaluation record."""
    runs = shingles(text)
    return 2 * len(runs & held) >= len(runs)


def unlike(held: Sequence[Record]) -> Callable[[str], bool]:
    """Return a test of a text against the evaluation part `held`: false for a text that
    `overlaps` it (a review may quote a real line word for word), which is never learned from."""
    runs: set[tuple[str, ...]] = set().union(*(shingles(r.text) for r in held))
    return lambda text: not overlaps(text, runs)


def learnable(
    records: Sequence[Record], written: Sequence[Example] | None = None
) -> tuple[list[Record], list[Example]]:
    """Return what the model may learn from: the development records and the `written` texts
    (the review sets' when None), less any that `overlaps` the evaluation part."""
    keep = unlike([r for r in records if split_of(r.source_key) == "eval"])
    dev = [r for r in records if split_of(r.source_key) == "dev" and keep(r.text)]
    texts = written_examples() if written is None else written
    return dev, [(text, label) for text, label in texts if keep(text)]


def training_digest(examples: Iterable[Example]) -> str:
    """Return the SHA-1 of labelled texts, in any order (what a shipped model learned from)."""
    digest = hashlib.sha1()
    for text, label in sorted(examples):
        digest.update(f"{label}\0{text}\0".encode())
    return digest.hexdigest()


class Classifier:
    """The bag-of-words baseline, fitted on the examples given."""

    def __init__(self, examples: Sequence[Example]) -> None:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression

        self._vectors = CountVectorizer(analyzer=features, binary=True, min_df=2)
        matrix = self._vectors.fit_transform([text for text, _ in examples])
        self._model = LogisticRegression(C=1.0, max_iter=2000)
        self._model.fit(matrix, [label for _, label in examples])

    def exported(self, threshold: float, precision: float, trained_on: Sequence[Example]) -> bytes:
        """Return the model as diagnosis/explain/hint.py loads it: gzip of JSON, each feature's
        weights in thousandths, the threshold and the hints' precision there, and what it
        learned from."""
        names = self._vectors.get_feature_names_out()
        coef = self._model.coef_
        doc = {
            "classes": [str(c) for c in self._model.classes_],
            "intercepts": [round(float(v), 6) for v in self._model.intercept_],
            "threshold": threshold,
            "precision": precision,
            "trained_on": {"texts": len(trained_on), "digest": training_digest(trained_on)},
            "weights": {
                str(name): [round(float(w) * 1000) for w in coef[:, i]]
                for i, name in enumerate(names)
            },
        }
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)

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


def precision(guesses: Sequence[Guess], threshold: float | None) -> float:
    """Return the share of right fault guesses at `threshold` (0 when None or none is made)."""
    if threshold is None:
        return 0.0
    change = fallback_change(guesses, threshold)
    made = sum(change.values())
    return round(change["gained"] / made, 3) if made else 0.0


def choose(guesses: Sequence[Guess]) -> float | None:
    """Return the threshold with the largest net gain on `guesses`, None when none gains."""
    best, best_net = None, 0
    for threshold in THRESHOLDS:
        change = fallback_change(guesses, threshold)
        net = change["gained"] - change["benign_named_fault"]
        if net > best_net:
            best, best_net = threshold, net
    return best


def run(write_model: Path | None = None) -> dict[str, Any]:
    """Return the result document; with `write_model`, also write there the model fitted on the
    development part and the written texts, with the threshold chosen on development."""
    records = load()
    rules = {r.id: verdict(r.text) for r in records}
    silent = {rid for rid, (_, _, rule) in rules.items() if rule is None}  # as engine.explain
    held = [r for r in records if split_of(r.source_key) == "eval"]
    every_written = written_examples()
    dev, written = learnable(records, every_written)
    cv = cross_validated(dev, silent, written)
    chosen = choose(cv)
    training = [*((r.text, r.label) for r in dev), *written]
    classifier = Classifier(training)
    if write_model is not None:  # no threshold that gains: shipped, but never sure enough
        write_model.write_bytes(
            classifier.exported(chosen or NEVER, precision(cv, chosen), training)
        )
    alone = classifier.guesses(held)
    on_silent = classifier.guesses([r for r in held if r.id in silent])
    rules_right = sum(correct(r.label, rules[r.id][0]) for r in held)

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
        "training": {
            "development_records": len(dev),
            "written_texts": len(written),
            "left_out_as_like_evaluation": len(records)
            - len(held)
            + len(every_written)
            - len(training),
        },
        "eval_records": len(held),
        "eval_silent_under_rules": len(on_silent),
        "rules_alone": accuracy(rules_right),
        "classifier_alone": accuracy(sum(correct(label, guess) for label, guess, _ in alone)),
        "threshold_chosen_on_dev": chosen,
        "rules_with_fallback": by_threshold[str(chosen)]["accuracy"] if chosen else None,
        "fallback_by_threshold": by_threshold,
        "shipped_model_is_current": shipped_digest() == training_digest(training),
    }


def shipped_digest() -> str | None:
    """Return the digest of what the shipped hint model learned from, None when there is none."""
    if not MODEL.exists():
        return None
    return load_model(MODEL.read_bytes()).digest


def main(argv: list[str] | None = None) -> int:
    """Run the baseline, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not write the results file")
    parser.add_argument(
        "--write-model",
        action="store_true",
        help=f"also write the shipped hint model ({MODEL.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    publish(run(MODEL if args.write_model else None), None if args.no_write else RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
