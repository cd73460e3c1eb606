"""A learned hint for a text no rule reads: the category its words share with labelled texts.

The rules (rules*.py) read what they were written for and say nothing otherwise; on real texts
they were not written for, most misses are such silences (docs/explain.md, "The benchmark").
This module reads those texts the way a person skims them: by the words they share with the
labelled corpus. It is a multinomial logistic regression over the presence of words (numbers as
one token), CJK characters and adjacent pairs of these, fitted by `python -m
bench.explain_learned --write-model` on the development part of the real-log corpus and the
reviewers' written texts (never on the evaluation part, nor on any text that shares half its runs
of six words with it) and shipped as
``data/hint_model.json.gz``: weights in thousandths, the threshold that protocol chose on the
development part alone with the precision of its hints there, and the digest of what it
learned from.

Guarantees:
- ``hint`` returns at most one finding, at severity INFO, whose ``rule`` is ``hint.learned``
  and whose ``confidence`` is the share of hints that were right on development's
  cross-validation (the model's probability, at least the threshold, is shown in its line); it
  names the node it was given, no GPU or rank, and never recommends a disruptive action
  (isolation, reset, reboot).
- It is pure: no I/O after the model's first load, the same text gives the same hint.
- It reads what the rules read (records.py: prefixes of journald, syslog, kubectl, torchrun and
  the like stripped, colours removed, wrapped lines joined), so a shipper's envelope does not
  move it, and of a long text only the first and the last ``READ_CHARS`` characters.
- ``engine.explain`` asks for it only when the caller wants it (``hint=True``: the CLI's
  ``--hint``, the benchmark's ``with_learned_hint``) and only when no rule found anything;
  streaming diagnosis never does. It is off by default: on two blind rounds it added nothing
  (docs/explain.md, "The learned hint").
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from diagnosis.explain.records import records
from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity

RULE = "hint.learned"
READ_CHARS = 4000
"""Characters read from each end of a long text (the corpus's longest excerpt is ~2,800)."""
QUIET = frozenset({Category.BENIGN.value, Category.UNKNOWN.value})
SHOWN_WORDS = 5

_TOKEN = re.compile(r"[a-z]+(?:/[a-z]+)?|\d+(?:[.,]\d+)?|[\u3040-\u30ff\u4e00-\u9fff]|%|×")
_PCI_ADDRESS = re.compile(
    r"\b(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b|<(?:BDF|PCI)(?:[ _-]?\w{0,8})>",
    re.IGNORECASE,
)
_GPU_UUID = re.compile(r"\bGPU-(?:[0-9a-f]{8}-[0-9a-f-]{27}|x{3,})|<(?:GPU[ _-]?)?UUID>", re.I)
"""A device's address or a GPU's UUID, written out or redacted (`0000:02:00.0`, `<BDF>`,
`GPU-xxx`): one token each, so that a redacted log reads as its original."""

# What a hint points at and recommends: the category's usual place, never a disruptive step.
_WHERE: dict[Category, tuple[Blame, ComponentKind, Action]] = {
    Category.GPU_HARDWARE: (Blame.INFRASTRUCTURE, ComponentKind.GPU, Action.HARDWARE_INSPECTION),
    Category.GPU_DEGRADED: (Blame.INFRASTRUCTURE, ComponentKind.GPU, Action.MONITOR),
    Category.GPU_APPLICATION: (Blame.APPLICATION, ComponentKind.JOB, Action.FIX_APPLICATION),
    Category.GPU_OOM: (Blame.APPLICATION, ComponentKind.JOB, Action.FIX_APPLICATION),
    Category.NETWORK: (Blame.INFRASTRUCTURE, ComponentKind.NIC, Action.CHECK_NETWORK),
    Category.HANG: (Blame.UNKNOWN, ComponentKind.JOB, Action.CAPTURE_DIAGNOSTICS),
    Category.STRAGGLER: (Blame.UNKNOWN, ComponentKind.JOB, Action.CAPTURE_DIAGNOSTICS),
    Category.NUMERICAL: (Blame.APPLICATION, ComponentKind.JOB, Action.FIX_APPLICATION),
    Category.HOST_MEMORY: (Blame.APPLICATION, ComponentKind.NODE, Action.FIX_APPLICATION),
    Category.HOST_STORAGE: (Blame.INFRASTRUCTURE, ComponentKind.NODE, Action.CAPTURE_DIAGNOSTICS),
    Category.HOST_HARDWARE: (Blame.INFRASTRUCTURE, ComponentKind.NODE, Action.HARDWARE_INSPECTION),
    Category.APPLICATION: (Blame.APPLICATION, ComponentKind.JOB, Action.FIX_APPLICATION),
}


def features(text: str) -> list[str]:
    """Return the features of what the hint reads of `text` (`readable`): tokens (a number is
    `<n>`, a PCI address or GPU UUID one token whether redacted or not) and adjacent pairs, each
    once."""
    plain = _GPU_UUID.sub(" gpuuuid ", _PCI_ADDRESS.sub(" pciaddress ", readable(text)))
    words = ["<n>" if m[0].isdigit() else m for m in _TOKEN.findall(plain.lower())]
    return sorted(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)})


def readable(text: str) -> str:
    """Return the messages of `text` as the rules read them (records.py: shippers' prefixes and
    colours stripped, wrapped lines joined), of a long text only both ends (`clipped`)."""
    return "\n".join(rec.body for rec in records(clipped(text)))


def clipped(text: str) -> str:
    """Return all of `text`, or its first and last READ_CHARS characters."""
    if len(text) <= 2 * READ_CHARS:
        return text
    return f"{text[:READ_CHARS]}\n{text[-READ_CHARS:]}"


@dataclass(frozen=True)
class Model:
    """A fitted linear model: per feature, one weight per class."""

    classes: tuple[str, ...]
    intercepts: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]
    threshold: float
    precision: float
    """Share of its hints that were right on development's cross-validation, at `threshold`:
    what a hint's `confidence` says (the model's own probability is shown in its line)."""
    digest: str
    """SHA-1 of the labelled texts it learned from (bench.explain_learned.training_digest)."""

    def probabilities(self, text: str) -> dict[str, float]:
        """Return each class's probability for `text` (softmax of the summed weights)."""
        return self.scored(features(text))

    def scored(self, feats: list[str]) -> dict[str, float]:
        """Return each class's probability for a text's `features`."""
        logits = list(self.intercepts)
        for feature in feats:
            for k, w in enumerate(self.weights.get(feature, ())):
                logits[k] += w
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def evidence(self, feats: list[str], label: str) -> list[str]:
        """Return those of a text's `features` that set `label` most apart from every other
        class (its weight less the highest other weight), strongest first."""
        k = self.classes.index(label)

        def margin(feature: str) -> float:
            ws = self.weights[feature]
            return ws[k] - max(w for j, w in enumerate(ws) if j != k)

        ranked = sorted((f for f in feats if f in self.weights), key=margin, reverse=True)
        return [f for f in ranked[:SHOWN_WORDS] if margin(f) > 0]


def load_model(raw: bytes) -> Model:
    """Return the model stored in `raw` (gzip of JSON, as `--write-model` writes it)."""
    doc = json.loads(gzip.decompress(raw))
    return Model(
        classes=tuple(doc["classes"]),
        intercepts=tuple(float(v) for v in doc["intercepts"]),
        weights={f: tuple(w / 1000 for w in ws) for f, ws in doc["weights"].items()},
        threshold=float(doc["threshold"]),
        precision=float(doc["precision"]),
        digest=str(doc["trained_on"]["digest"]),
    )


@cache
def model() -> Model:
    """Return the shipped model (read once)."""
    raw = resources.files("diagnosis.explain").joinpath("data/hint_model.json.gz").read_bytes()
    return load_model(raw)


def hint(text: str, node: str | None = None, fitted: Model | None = None) -> Finding | None:
    """Return the learned hint for `text` (from `node`), or None when the likeliest class is
    quiet (benign, unknown), has no place to point at, or is less likely than the threshold."""
    m = fitted or model()
    feats = features(text)
    probs = m.scored(feats)
    label = max(probs, key=lambda c: probs[c])
    if label in QUIET or probs[label] < m.threshold or Category(label) not in _WHERE:
        return None
    blame, component, action = _WHERE[Category(label)]
    words = ", ".join(repr(w) for w in m.evidence(feats, label))
    return Finding(
        category=Category(label),
        blame=blame,
        component=component,
        severity=Severity.INFO,
        action=action,
        line=(
            f"no rule matched; the words read like the corpus's {label} texts "
            f"(p={probs[label]:.2f}): {words}"
        ),
        confidence=round(min(probs[label], m.precision), 3),
        rule=RULE,
        node=node,
    )
