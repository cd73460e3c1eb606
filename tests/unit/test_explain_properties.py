"""Property tests: real corpus lines keep their verdict under the ways logs get mangled.

Every record of the real-log corpus (tests/fixtures/explain/corpus) is perturbed the way log
shippers and people do it: journald/syslog/dmesg -T/kubectl --timestamps/torchrun/PyTorch rank
prefixes with random timestamps and hosts, ANSI colours, a terminal hard-wrapping the line at
its width, and redaction of PCI addresses, hostnames and GPU UUIDs. The first finding's category
must stay what it was on the original text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.explain import Record, load, verdict
from diagnosis.explain.hint import hint

Perturb = Callable[[str, datetime, str], str]

_HOSTS = st.from_regex(r"[a-z][a-z0-9-]{2,14}", fullmatch=True)
_TIMES = st.integers(min_value=0, max_value=3 * 365 * 86400).map(
    lambda s: datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=s, microseconds=s % 997)
)


@cache
def _records() -> tuple[Record, ...]:
    """Return the corpus records whose text is at most 40 lines (all of them today)."""
    return tuple(r for r in load() if r.text.count("\n") < 40)


@cache
def _baseline(text: str) -> str:
    """Return the first category of the unperturbed text."""
    return verdict(text)[0]


def _per_line(prefix: Callable[[datetime, str], str]) -> Perturb:
    """Return a perturbation that puts `prefix` before every line."""

    def apply(text: str, when: datetime, host: str) -> str:
        return "\n".join(prefix(when, host) + line for line in text.splitlines())

    return apply


def _journald(when: datetime, host: str) -> str:
    return f"{when:%b %d %H:%M:%S} {host} kernel: "


def _syslog(when: datetime, host: str) -> str:
    return f"{when:%b} {when.day:2d} {when:%H:%M:%S} {host} kernel: "


def _dmesg_t(when: datetime, host: str) -> str:
    return f"[{when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}] "


def _kubectl(when: datetime, host: str) -> str:
    return f"{when:%Y-%m-%dT%H:%M:%S}.{when.microsecond:06d}123Z "


def _torchrun(when: datetime, host: str) -> str:
    return f"[default{when.second % 8}]:"


def _rank(when: datetime, host: str) -> str:
    return f"[rank{when.second % 64}]:"


def _ansi(text: str, when: datetime, host: str) -> str:
    colour = 31 + when.second % 7
    return "\n".join(f"\x1b[{colour}m{line}\x1b[0m" for line in text.splitlines())


def _wrap(width: int) -> Perturb:
    """Return a perturbation that hard-wraps every line at `width` columns, like a terminal."""

    def apply(text: str, when: datetime, host: str) -> str:
        out: list[str] = []
        for line in text.splitlines():
            out.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
        return "\n".join(out)

    return apply


_PCI = re.compile(r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f-]{27}")


def _redact(text: str, when: datetime, host: str) -> str:
    """Return `text` with PCI addresses, GPU UUIDs and syslog hostnames redacted."""
    text = _PCI.sub("<BDF>", text)
    text = _UUID.sub("GPU-xxx", text)
    return re.sub(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel:", r"\1 <host> kernel:", text,
                  flags=re.MULTILINE)  # fmt: skip


PERTURBATIONS: dict[str, Perturb] = {
    "journald": _per_line(_journald),
    "syslog": _per_line(_syslog),
    "dmesg-T": _per_line(_dmesg_t),
    "kubectl-timestamps": _per_line(_kubectl),
    "torchrun": _per_line(_torchrun),
    "pytorch-rank": _per_line(_rank),
    "ansi": _ansi,
    "wrap-120": _wrap(120),
    "wrap-100": _wrap(100),
    "redact": _redact,
}


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(when=_TIMES, host=_HOSTS)
def test_real_lines_keep_their_verdict(name: str, when: datetime, host: str) -> None:
    """Every corpus record, perturbed with drawn timestamps and hosts, keeps its verdict."""
    changed = [
        (record.id, perturbed)
        for record in _records()
        if verdict(perturbed := PERTURBATIONS[name](record.text, when, host))[0]
        != _baseline(record.text)
    ]
    assert not changed, changed[:3]


@cache
def _silent() -> tuple[Record, ...]:
    """Return the records no rule reads: the ones `trainguard explain` gives the hint."""
    return tuple(r for r in _records() if verdict(r.text)[2] is None)


def _hinted(text: str) -> str | None:
    found = hint(text)
    return found.category.value if found else None


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(when=_TIMES, host=_HOSTS)
def test_the_learned_hint_keeps_its_verdict(name: str, when: datetime, host: str) -> None:
    """The hint reads the messages, not the shippers' envelope: every record no rule reads keeps
    its hint (or its silence) when perturbed."""
    changed = [
        record.id
        for record in _silent()
        if _hinted(PERTURBATIONS[name](record.text, when, host)) != _hinted(record.text)
    ]
    assert not changed, changed[:3]


def test_every_perturbation_changes_the_text() -> None:
    """Guard against a perturbation that silently does nothing (the property would be empty)."""
    when = datetime(2026, 12, 2, 4, 5, 6, 123, tzinfo=UTC)
    sample = "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 " + "x" * 130
    sample += "\nGPU-12c5ff8f-0e23-23a4-6e1e-8931aee48997"
    for name, perturb in PERTURBATIONS.items():
        assert perturb(sample, when, "node-1") != sample, name
