"""Line rules: a regex, the literal needles that gate it, and the verdict it gives.

Rules are pure: a rule sees one logical record's body and returns a verdict or nothing. They
are tried in precedence order (most specific first) and the first that matches a record wins,
so one line yields one finding. Named groups in a pattern carry evidence: ``xid``, ``pci``,
``gpu``, ``rank`` and ``host``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from diagnosis.catalog import Verdict
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity

Judge = Callable[[re.Match[str]], Verdict | None]
"""Compute a verdict from a match (None: the rule does not apply after all)."""


@dataclass(frozen=True)
class Rule:
    """One recognisable symptom."""

    id: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    why: str
    verdict: Verdict | None = None
    judge: Judge | None = None
    traceback_boost: float = 0.0

    def __post_init__(self) -> None:
        """Check the rule can produce a verdict and its needles are lower case."""
        if (self.verdict is None) == (self.judge is None):
            raise ValueError(f"rule {self.id}: give exactly one of verdict and judge")
        if any(n != n.lower() for n in self.needles) or not self.needles:
            raise ValueError(f"rule {self.id}: needles must be non-empty and lower case")


@dataclass(frozen=True)
class Hit:
    """A rule that matched one record, with the evidence its groups extracted."""

    rule: str
    verdict: Verdict
    xid: int | None = None
    gpu: int | None = None
    pci: str | None = None
    rank: int | None = None
    host: str | None = None


def verdict(
    category: Category,
    blame: Blame,
    component: ComponentKind | None,
    severity: Severity,
    action: Action,
    confidence: float,
) -> Verdict:
    """Return a verdict (shorthand for rule tables)."""
    return Verdict(category, blame, component, severity, action, confidence)


Infrastructure = Callable[[Severity, Action, float], Verdict]
"""A verdict of the infrastructure's part at fault, given its severity, action and confidence."""


def _infrastructure(category: Category, component: ComponentKind) -> Infrastructure:
    """Return the constructor of verdicts that blame the infrastructure's `component`."""

    def make(severity: Severity, action: Action, confidence: float) -> Verdict:
        return verdict(category, Blame.INFRASTRUCTURE, component, severity, action, confidence)

    return make


host_hardware = _infrastructure(Category.HOST_HARDWARE, ComponentKind.NODE)
"""The node's hardware at fault (CPU, memory, board, PCIe)."""
host_storage = _infrastructure(Category.HOST_STORAGE, ComponentKind.NODE)
"""The node's storage at fault (a disk, a filesystem, a network filesystem's client)."""
gpu_hardware = _infrastructure(Category.GPU_HARDWARE, ComponentKind.GPU)
"""The GPU's hardware at fault (the GPU is the component)."""


_NOT_AN_EVENT = re.compile(
    r"\b(?:was\s+|is\s+|were\s+)?fixed\s+in\b|\(LP:\s*#\d+\)|\bIf\s+you\s+see\b|^\W*\w+:\s+fix\s+'"
    r"|\bbackport\w*|\bchangelog\b|\bdrill\b|\bsimulat\w*|\bknown\s+issue\b",
    re.IGNORECASE,
)
"""A line that names an event without it happening: a changelog's fix, a tutorial's `If you see`,
a drill or a simulation, a known issue."""


SPEAKER_WORDS = r"\b(?:I|we|my|our|us|me)\b"
"""The words of a speaker telling their own run or event (a pattern, used case-insensitively):
one list for every judge that asks whether a line is somebody's report or a page's statement."""

SPEAKER = re.compile(SPEAKER_WORDS, re.IGNORECASE)
"""SPEAKER_WORDS compiled once, for the judges that search a span for a speaker."""

_SENTENCE_MARKS = ".!?\n"


def sentence_bounds(m: re.Match[str]) -> tuple[int, int]:
    """The (start, end) of the sentence a match stands in, cut at `.`, `!`, `?` and newlines:
    from after the last mark before the match to the first mark after it (that mark excluded;
    the text's ends where there is none). A plain cut for judges that read a clause around one
    match; `explained.SENTENCE` is the careful split (abbreviations, CJK marks)."""
    text = m.string
    start = max(text.rfind(mark, 0, m.start()) for mark in _SENTENCE_MARKS) + 1
    ends = [i for i in (text.find(mark, m.end()) for mark in _SENTENCE_MARKS) if i >= 0]
    return start, min(ends, default=len(text))


_DENIED = re.compile(r"\b(?:not|never|no)\b|n['’]t\b", re.IGNORECASE)


def unless_denied(given: Verdict, *, asked: bool = False) -> Judge:
    """A judge that gives `given` unless the match's sentence (sentence_bounds) denies it before
    the match (`We never simulated a disk failure`, `not intentionally filling`) or, with
    `asked`, ends in a question (`Someone deliberately filled /scratch?`)."""

    def judge(m: re.Match[str]) -> Verdict | None:
        start, end = sentence_bounds(m)
        if _DENIED.search(m.string, start, m.start()) or (asked and m.string[end : end + 1] == "?"):
            return None
        return given

    return judge


def unless_named_only(given: Verdict) -> Judge:
    """A judge that gives `given` unless the line only names the event (_NOT_AN_EVENT)."""

    def judge(m: re.Match[str]) -> Verdict | None:
        return None if _NOT_AN_EVENT.search(m.string) else given

    return judge


def unit_failed(unit: str, described: str) -> str:
    """Return the pattern of systemd's words for a unit that did not start: its result and its
    main or control process exiting non-zero (`slurmd.service: Failed with result 'timeout'`),
    and the start job's `Failed to start` with the unit's name or its description."""
    return (
        rf"\b{unit}\.service: (?:Failed with result|(?:Main|Control) process exited, "
        rf"code=exited, status=[1-9])|\bFailed to start (?:{unit}\.service|{described})\b"
    )


def joined(*maps: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Return EXPLAINED_BY maps as one: a rule two maps explain is explained by either's causes
    (a dict merge would keep only the later map's)."""
    merged: dict[str, frozenset[str]] = {}
    for causes_of in maps:
        for rule_id, causes in causes_of.items():
            merged[rule_id] = merged.get(rule_id, frozenset()) | causes
    return merged


def rule(
    rule_id: str,
    pattern: str,
    needles: tuple[str, ...],
    why: str,
    given: Verdict | None = None,
    judge: Judge | None = None,
    flags: int = 0,
    traceback_boost: float = 0.0,
) -> Rule:
    """Return a rule with its pattern compiled."""
    return Rule(rule_id, re.compile(pattern, flags), needles, why, given, judge, traceback_boost)


_PCI = re.compile(
    r"(?:GPU)?(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
    r"(?:\.(?P<fn>[0-7]))?"
)


def normalize_pci(text: str) -> str | None:
    """Return a PCI address in NVML's spelling (``00000000:A1:00.0``), or None."""
    m = _PCI.fullmatch(text.strip())
    if m is None:
        return None
    domain = int(m["domain"] or "0", 16)
    return f"{domain:08X}:{int(m['bus'], 16):02X}:{int(m['dev'], 16):02X}.{int(m['fn'] or 0)}"


def _int(groups: dict[str, str | None], name: str) -> int | None:
    """Return the named group (or its alternative ``<name>2``) as an int, when present."""
    value = groups.get(name) or groups.get(name + "2")
    return int(value) if value is not None and value.isdigit() else None


def apply(rule_: Rule, body: str) -> Hit | None:
    """Return the hit of `rule_` on `body`, or None.

    A rule with a judge tries its matches in turn until the judge gives a verdict: a
    sentence may name a member first in words the judge turns down ("one of the workers")
    and then in words it takes ("one worker is slower")."""
    m, given = _judged(rule_, body)
    if m is None or given is None:
        return None
    groups = m.groupdict()
    pci = groups.get("pci")
    return Hit(
        rule=rule_.id,
        verdict=given,
        xid=_int(groups, "xid"),
        gpu=_int(groups, "gpu"),
        pci=normalize_pci(pci) if pci else None,
        rank=_int(groups, "rank"),
        host=groups.get("host"),
    )


MAX_JUDGED = 16
"""Matches of one rule a judge reads in one line: a person's line names a member or a word of
slowness a few times, and a line that repeats one a thousand times is no report (each judge
reads its sentence, so a cap keeps a hostile line linear)."""


def _judged(rule_: Rule, body: str) -> tuple[re.Match[str] | None, Verdict | None]:
    if rule_.judge is None:
        return rule_.pattern.search(body), rule_.verdict
    for n, m in enumerate(rule_.pattern.finditer(body)):
        if n >= MAX_JUDGED:
            break
        given = rule_.judge(m)
        if given is not None:
            return m, given
    return None, None


_Trie = dict[str, "_Trie"]


def _trie_pattern(words: set[str]) -> str:
    """Return a regex matching any of `words`, factored by common prefixes (fast to scan)."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: _Trie) -> str:
        """Return the regex of the sub-trie `node`."""
        branches = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


@dataclass(frozen=True)
class RuleSet:
    """Rules in precedence order, indexed by the needles that gate them."""

    rules: tuple[Rule, ...]
    needles: re.Pattern[str]
    by_needle: dict[str, tuple[int, ...]]

    @classmethod
    def of(cls, rules: tuple[Rule, ...]) -> RuleSet:
        """Return the rule set of `rules`."""
        owners: dict[str, set[int]] = {}
        for i, r in enumerate(rules):
            for n in r.needles:
                owners.setdefault(n, set()).add(i)
        words = set(owners)
        # The scan reports the longest needle starting at each position; every shorter one
        # there is a prefix of it, so a needle stands for the rules of all its prefixes (looked
        # up prefix by prefix: linear in the needles' lengths, not in rules times needles).
        by_needle = {
            word: tuple(
                sorted({i for end in range(1, len(word) + 1) for i in owners.get(word[:end], ())})
            )
            for word in words
        }
        return cls(rules, re.compile(f"(?=({_trie_pattern(words)}))"), by_needle)

    def first_hit(self, body: str) -> tuple[Rule, Hit] | None:
        """Return the first rule that matches `body`, with its hit (most lines have no needle)."""
        found = {m.group(1) for m in self.needles.finditer(body.lower())}
        if not found:
            return None
        for i in sorted({i for word in found for i in self.by_needle[word]}):
            hit = apply(self.rules[i], body)
            if hit is not None:
                return self.rules[i], hit
        return None


@cache
def all_rules() -> tuple[Rule, ...]:
    """Return every line rule in precedence order (most specific first); ids are unique."""
    from diagnosis.explain import (
        rules_comm,
        rules_container,
        rules_cuda,
        rules_datastore,
        rules_dcgm,
        rules_dist,
        rules_driver,
        rules_fabric,
        rules_figures,
        rules_gpu,
        rules_groups,
        rules_host,
        rules_kernel,
        rules_member_figures,
        rules_monitors,
        rules_netfs,
        rules_nic,
        rules_nvlink,
        rules_pcie,
        rules_platform,
        rules_process,
        rules_rdma,
        rules_said,
        rules_said_devices,
        rules_scheduler,
        rules_slow_cause,
        rules_slow_told,
        rules_slowdown,
        rules_slowness,
        rules_slowness_cjk,
        rules_slowness_euro,
        rules_stalled,
        rules_storage,
        rules_straggler,
        rules_straggler_words,
        rules_train,
    )

    ordered = (
        *rules_gpu.RULES,
        *rules_container.LOST_RULES,
        *rules_driver.RULES,
        *rules_nvlink.RULES,
        *rules_fabric.RULES,
        *rules_dcgm.RULES,
        *rules_platform.RULES,
        *rules_nic.RULES,
        *rules_rdma.RULES,
        *rules_kernel.RULES,
        *rules_host.KERNEL_RULES,
        *rules_pcie.RULES,
        *rules_host.DISK_RULES,
        *rules_storage.RULES,
        *rules_datastore.RULES,
        *rules_netfs.RULES,
        *rules_scheduler.RULES,
        *rules_monitors.RULES,
        *rules_said.RULES,
        *rules_said_devices.RULES,
        *rules_container.RULES,
        *rules_stalled.RULES,
        *rules_slow_cause.RULES,
        *rules_straggler.TOOL_RULES,
        *rules_straggler_words.RULES,
        *rules_straggler.FIGURE_RULES,
        *rules_slowdown.RULES,
        *rules_member_figures.MEMBER_RULES,
        *rules_train.NUMERICAL_RULES,
        *rules_cuda.RULES,
        *rules_host.PROCESS_RULES,
        *rules_process.RULES,
        *rules_dist.RULES,
        *rules_comm.RULES,
        *rules_train.FALLBACK_RULES,
        *rules_groups.RULES,
        *rules_slow_told.RULES,
        *rules_slowness.RULES,
        *rules_slowness_cjk.RULES,
        *rules_slowness_euro.RULES,
        *rules_figures.RULES,
        *rules_said.HARMLESS_RULES,
    )
    ids = [r.id for r in ordered]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate rule ids: {duplicates}")
    return ordered


@cache
def rule_set() -> RuleSet:
    """Return the rule set the explainer uses."""
    return RuleSet.of(all_rules())
