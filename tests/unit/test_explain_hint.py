"""The learned hint (diagnosis/explain/hint.py): what ships is what the protocol fits, the
pure-Python reader agrees with the fitted model, and a hint only speaks where no rule does."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from bench import explain_learned as learned
from bench.explain import Record, load, split_of
from diagnosis.explain import explain
from diagnosis.explain import hint as hints
from diagnosis.model import Action, Severity
from trainguard import explain_cli

_DISRUPTIVE = {Action.ISOLATE_GPU, Action.ISOLATE_NODE, Action.RESET_GPU, Action.REBOOT_NODE}


def _dev_texts(every: int = 1) -> list[str]:
    return [r.text for r in load() if split_of(r.source_key) == "dev"][::every]


def _training() -> list[tuple[str, str]]:
    dev, written = learned.learnable(load())
    return [*((r.text, r.label) for r in dev), *written]


def test_the_shipped_model_learned_from_the_current_development_part_and_reviews():
    """A corpus or review change must rerun `python -m bench.explain_learned --write-model`."""
    assert hints.model().digest == learned.training_digest(_training())


def test_a_refit_reads_as_the_shipped_model():
    """What the digest cannot see (the tokenizer, records.py's reading, scikit-learn) must not
    have moved either: a refit on the same texts reads a sample as the shipped model does."""
    shipped = hints.model()
    training = _training()
    refit = hints.load_model(
        learned.Classifier(training).exported(shipped.threshold, shipped.precision, training)
    )
    for text in _dev_texts(every=41):
        probs, again = shipped.probabilities(text), refit.probabilities(text)
        assert max(abs(probs[c] - again[c]) for c in probs) < 0.02, text[:80]


def test_nothing_learned_from_is_like_an_evaluation_record():
    held = [r for r in load() if split_of(r.source_key) == "eval"]
    runs = set().union(*(learned.shingles(r.text) for r in held))
    training = _training()
    assert not [text for text, _ in training if learned.overlaps(text, runs)]
    assert not {r.text for r in held} & {text for text, _ in training}
    dev = [r for r in load() if split_of(r.source_key) == "dev"]
    assert len(training) < len(dev) + len(learned.written_examples())  # some were left out


def test_a_text_overlaps_when_half_its_runs_of_words_are_held_out():
    held = learned.shingles("NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12")
    assert learned.overlaps(
        "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12", held
    )
    assert learned.overlaps("Got completion from peer 10.0.0.2 with error 12, again", held)
    assert not learned.overlaps("the loss went to nan after the learning rate warm-up ended", held)
    assert learned.overlaps("Killed", learned.shingles("killed"))


def test_training_digest_ignores_order_and_sees_a_label_change():
    a = [("GPU has fallen off the bus", "gpu.hardware"), ("loss is nan", "numerical")]
    assert learned.training_digest(a) == learned.training_digest(a[::-1])
    assert learned.training_digest(a) != learned.training_digest([(a[0][0], "network"), a[1]])


def test_the_exported_model_reads_texts_as_the_fitted_one_does():
    texts = _dev_texts(every=4)
    labels = [r.label for r in load() if split_of(r.source_key) == "dev"][::4]
    classifier = learned.Classifier(list(zip(texts, labels, strict=True)))
    exported = hints.load_model(
        classifier.exported(0.9, 0.5, list(zip(texts, labels, strict=True)))
    )
    probe = _dev_texts(every=37)
    as_records = [Record(f"p{n}", t, "benign", "b", "u", "k", "") for n, t in enumerate(probe)]
    for (_, guess, prob), text in zip(classifier.guesses(as_records), probe, strict=True):
        assert exported.probabilities(text)[guess] == pytest.approx(prob, abs=0.01)


_OFF = pytest.mark.skipif(
    hints.model().threshold > 1,
    reason="the shipped hint is off: no threshold gained on development when it was fitted",
)


@_OFF
def test_a_hint_is_informational_says_its_measured_precision_and_never_disrupts():
    model = hints.model()
    spoken = [f for f in (hints.hint(t, "node-7") for t in _dev_texts(every=3)) if f]
    assert spoken, "the shipped model gives no hint on any development text"
    for finding in spoken:
        assert finding.rule == hints.RULE
        assert finding.severity == Severity.INFO
        assert finding.confidence == round(model.precision, 3)
        assert finding.category.value not in hints.QUIET
        assert finding.action not in _DISRUPTIVE
        assert finding.node == "node-7" and finding.gpu is None and finding.rank is None
        assert "no rule matched" in finding.line
        p = float(finding.line.split("(p=")[1].split(")")[0])
        assert p >= round(model.threshold, 2) - 0.005


def test_every_class_the_model_names_has_a_place_to_point_at():
    named = set(hints.model().classes) - hints.QUIET
    assert named <= {c.value for c in hints._WHERE}


def test_the_evidence_sets_the_class_apart():
    model = hints.model()
    text = "the iteration time doubled and the run got slower and slower each epoch"
    label = "straggler"
    k = model.classes.index(label)
    for word in model.evidence(hints.features(text), label):
        others = [w for j, w in enumerate(model.weights[word]) if j != k]
        assert model.weights[word][k] > max(others)


def test_the_hint_speaks_only_where_no_rule_does():
    for text in _dev_texts(every=11):
        ruled = explain(text)
        hinted = explain(text, hint=True)
        if ruled:
            assert hinted == ruled
        else:
            learned_hint = hints.hint(text)
            assert hinted == ([learned_hint] if learned_hint else [])
        assert all(f.rule != hints.RULE for f in ruled)


def test_a_long_text_is_read_at_both_ends_only():
    head, tail = "a" * hints.READ_CHARS, "z" * hints.READ_CHARS
    text = head + "MIDDLE" * 1000 + tail
    assert hints.clipped(text) == f"{head}\n{tail}"
    assert hints.clipped("short") == "short"


def test_a_quiet_or_unsure_guess_gives_no_hint():
    model = hints.model()
    never = hints.Model(model.classes, model.intercepts, model.weights, 1.01, 0.5, model.digest)
    assert all(hints.hint(t, fitted=never) is None for t in _dev_texts(every=50))
    benign = max(model.weights, key=lambda f: model.weights[f][model.classes.index("benign")])
    assert hints.hint(benign) is None


def _silent_but_hinted() -> str:
    for text in _dev_texts():
        if not explain(text) and hints.hint(text) is not None:
            return text
    pytest.fail("no development text is silent under the rules and hinted")


def _cli(text: str, monkeypatch: pytest.MonkeyPatch, *flags: str) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser()
    explain_cli.add_parsers(parser.add_subparsers())
    args = parser.parse_args(["explain", "--json", *flags])
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert args.func(args) == 0
    return json.loads(out.getvalue())


@_OFF
def test_the_cli_gives_the_hint_only_when_asked(monkeypatch: pytest.MonkeyPatch):
    text = _silent_but_hinted()
    assert _cli(text, monkeypatch) == []
    found = _cli(text, monkeypatch, "--hint")
    assert [f["rule"] for f in found] == [hints.RULE]
    assert found[0]["severity"] == "info"
