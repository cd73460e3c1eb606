"""A slowdown told in Chinese words: the shape of rules_slowness, read in Chinese.

A sentence (up to 。！？； or a line's end) reports a slowdown when it has a word of slowing
(变慢, 减慢, 越跑越慢, 速度下降, 耗时增加, 差异很大, 步调不一致, or fast at first and slow later:
刚开始...快，后续...慢) with a subject in the same sentence
(训练, 速度, step, rank, 卡, 节点), no negation just before the word (没有变慢), no explanation
(正常, 预期) and nothing slow that is not training (推理, 下载, 编译). A plain 慢
(``训练速度有点慢``) is not a word of slowing: it says how fast, not that it changed.

Guarantees: the rule runs right after the English one, after every other rule; its verdict is
rules_slowness.slowed's: a straggler warning of the family's lowest confidence, naming the member
the sentence names, else the job.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_slowness import slowed

_SLOW_ZH = (
    r"(?:变慢|减慢|越\w{1,2}越慢|慢了很多|慢很多|拖慢"
    # (not the loss's 下降速度: how fast it converges)
    r"|(?<!下降)(?<!收敛)速度(?:明显|大幅|显著|严重|急剧|大大)?地?(?:下降|降低)"
    r"|(?:耗时|时间)(?:明显|大幅|显著)?(?:增加|变长)"
    r"|越来越长|差异很大|差距很大|步调不一致"
    # fast at first, slow later (刚开始训练速度快，后续训练速度很慢)
    # (慢慢 is `gradually`, not slow; a negation before the 慢 denies it)
    r"|(?:刚开始|一开始|开始时?|起初|前期|前几个?|前面)[^。！？]{0,12}快[^。！？]{0,24}?"
    r"(?:后续|后来|后面|之后|后期|然后)(?:(?![不没未无])[^。！？]){0,12}(?<!慢)慢(?!慢))"
)
_SUBJECT_ZH = re.compile(
    r"训练|微调|速度|step|迭代|epoch|rank|GPU|卡|节点|机器|耗时|吞吐|s/it|it/s", re.I
)
_DENIED_ZH = re.compile(r"(?:不|没|没有|未|无|并非)\w{0,3}$")
_EXPLAINED_ZH = re.compile(r"正常|预期|意料之中|因为|由于")
_NOT_TRAINING_ZH = re.compile(r"推理|下载|编译|加载模型")
_SENTENCE_ZH = re.compile(r"[。！？；!?;\n]")


def _reported_zh(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning when a Chinese sentence reports a slowdown: a word of
    slowing (变慢, 减慢, 速度下降, 耗时增加, 差异很大 ...) with a subject (训练, 速度, step, rank,
    卡 ...) in the sentence and no negation just before it (没有变慢)."""
    body = m.string
    start = max((x.end() for x in _SENTENCE_ZH.finditer(body, 0, m.start())), default=0)
    end_at = _SENTENCE_ZH.search(body, m.end())
    sentence = body[start : end_at.start() if end_at else len(body)]
    if _DENIED_ZH.search(body[start : m.start()]) or not _SUBJECT_ZH.search(sentence):
        return None
    if _EXPLAINED_ZH.search(sentence) or _NOT_TRAINING_ZH.search(sentence):
        return None
    return slowed(sentence)


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.slowness_in_chinese",
        _SLOW_ZH,
        ("慢", "下降", "降低", "增加", "变长", "越来越长", "差异", "差距", "步调"),
        "A Chinese sentence reporting that the training, or one of its members, became "
        "slower (变慢, 减慢, 速度下降, 耗时增加, 各个 rank 差异很大): a straggler or a "
        "slowdown to look at, with the low confidence of general words.",
        judge=_reported_zh,
    ),
)
