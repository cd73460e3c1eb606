"""Why a speed is no fault: the speaker's explanation, or two setups side by side.

The speed readers (rules_slowdown, rules_figures, rules_member_figures, rules_slow_told,
rules_slowness) and the monitors' readers (rules_monitors) ask the same questions of a report
before they call a slowdown: does the speaker explain it away (``explains`` in English: said to
be expected or normal, caused by the speaker's own change (``OWN_CHANGE``), or a figure that came
back by itself (``came_back``); `because we ...`, a trade-off
or `as expected` in the other languages; a warm-up; a member's own extra work), and does the text
set two GPU models or two mining algorithms side by side (a benchmark of setups, not a member behind
identical peers)? ``explained`` answers both for a text; ``explained_at`` reads the setups in the
match's own sentence only. ``SENTENCE`` is the sentence split they share.

Guarantees: each answer is computed once a text (cached); a reason that the member should not be
slow (`because we have 8 identical GPUs`) explains nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

from diagnosis.explain.quantities import OTHER_QUANTITIES, RATE_UNIT, UNIT, amount_of
from diagnosis.explain.rules import sentence_bounds

FIXED_BY_SETTING = (
    r"\b(?:switch|chang|revert|sett|enabl|disabl)\w*\s+(?:\S+\s+){0,8}?(?:alleviat|eliminat|fix|solv"
    r"|resolv|remov|cur)\w*\s+(?:that|the|this)\s+(?:[~\d.]+\s*%\s+)?(?:performance\s+|speed\s+)?"
    r"(?:handicap|slowdown|penalty|hit|loss|drop|gap|regression)\b"
)
"""A slowdown the speaker fixed by changing a setting (`Switching back to PCIe 3.0 in the UEFI
alleviated that 30% performance handicap`): its cause is found and gone, in any line."""
OWN_CHANGE = re.compile(
    r"\b(?:enabl\w+|turn\w*\s+on|switch\w*\s+on)\s+(?:gradient|activation)\s+checkpointing\b"
    # I or we changed the work, or a sentence that starts with the change (`Switched from
    # resnet50 to a ViT-L`, `Added 3 more tasks`, `I went from batch size 32 to 128`)
    r"|(?:\b(?:I|we)\s+(?:just\s+|have\s+|had\s+)?|^\W*|[.;!?]\s+)(?:increased|doubled|tripled"
    r"|raised|bumped(?:\s+up)?|upped|enlarged|switched|turned\s+on|added|enabled|changed"
    r"|went(?=\s+from))(?!\s+nothing)\s+(?:from\s+|to\s+)?(?:the\s+|my\s+|our\s+|a\s+)?"
    r"(?:[\w+-]+\s+){0,3}?(?:batch|image|img|input|(?:\w+_)?seq\w*|context|resolution|model|rank|layers?"
    r"|dataset|size|augment\w*"
    r"|crop|tasks?|heads?|sampler|samples|length|resnet\w*|ViT\S*|bigger|larger|heavier)\b",
    re.IGNORECASE,
)
"""The speaker's own heavier workload (``I increased the image size from 640 to 1280 and ...``,
``enabling gradient checkpointing made each step slower``): the cause is said, even in a
question."""
BACK_TO = re.compile(
    r"(?:(?:\b(?:were|was|is|are|went|came|comes|goes|got|gets|(?:we|it|they)['’]re|bounc(?:ed|es)"
    r"|climb(?:ed|s)|jump(?:ed|s)|spr(?:ang|ings)|snap(?:ped|s)|(?:went|goes|came|comes)\s+right)\s+"
    r"|(?:^|[.!?;]\s*))"
    r"back|\b(?:returned|recover(?:s|ed)|restored))\s+(?:up\s+|down\s+)?(?:to|at)\s+(?:(?P<usual>the\s+usual|its\s+usual)"
    r"|[~≈]?(?P<figure>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![.\d]*\.\d))"
    r"(?![^.\n]{0,30}?\b(?:after|until|once|when|with)\s+(?:a\s+|we\s+|I\s+|the\s+)?(?:restart"
    r"|reboot|redeploy|re-?launch)\w*)(?![^.\n]{0,40}?\b(?:for\s+a\s+while|briefly|then|again"
    r"|before)\b)"
    # nor once the job was moved (`once the job was resubmitted on a different set of nodes`)
    r"(?![^.\n]{0,30}?\b(?:after|until|once|when)\s+(?:the\s+)?(?:job|run|pod|workload)\s+(?:was|got"
    r"|is)\s+(?:resubmitted|rescheduled|moved|migrated|requeued|restarted)\b)"
    r"(?![^.\n]{0,40}?\b(?:for\s+a\s+while|briefly|then|again"
    r"|before)\b)"
    # a return only where the speaker moved the job (`only when I resumed ... on a different
    # node`), or a relapse later in the sentence (`..., but by 02:40 it was down at 210`)
    r"(?![^.\n]{0,20}?\bonly\s+(?:when|after|once|if)\b)(?![^.\n]*\bbut\b)",
    re.IGNORECASE | re.MULTILINE,
)
"""A speed said to be back to its usual figure by itself (`went back to 37.28`, `Back to 37.28
afterwards.`, `came back up to 5,100`), not after a restart (a workaround) nor for a while
only (a version, `back to 2.18.3`, is no figure)."""
_SPEED_BACK = re.compile(
    rf"\s*(?:{RATE_UNIT}|{UNIT}|it/s|[kKM](?![\w/]))(?:/(?:step|it|iter\w*|epoch|batch))?(?![\w/])"
)
"""A speed's or a step time's unit after the figure that came back."""
_OTHER_BACK = re.compile(
    rf"\b(?:{OTHER_QUANTITIES}|temps?|wait\w*|latency|util\w*|power|queue|version)\b", re.IGNORECASE
)
"""Another quantity named just before `back to` (`data-loader wait is back to 0.0s`)."""
_AGAIN = re.compile(
    r"\b(?:has|have|had|'s|’s)\s+been\s+(?:back\s+)?(?:at|to)\s+[~≈]?"
    r"(?P<figure>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:\s*[\w/]+)?\s+again\b",
    re.IGNORECASE,
)
"""A figure said to hold again (`it's been at 5200 again since 03:10`)."""
_FROM_FIGURE = re.compile(
    r"\bfrom\s+[~≈]?(?P<figure>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)", re.IGNORECASE
)
"""The figure a change started from (`fell from 5200 to 3100`)."""
_STOPPED_FIRST = re.compile(
    r"\b(?:once|when|after|if|since|upon)\s+(?:(?:i|we|you|they)\s+(?:\w+\s+)?)?(?:a\s+|the\s+)?"
    r"(?:stop\w*|kill\w*|clos\w*|paus\w*|restart\w*|reboot\w*|re-?launch\w*|cordon\w*|drain\w*"
    r"|resum\w*|mov\w*|reschedul\w*|replac\w*|swap\w*|exclud\w*)\b[^.!?\n]*$",
    re.IGNORECASE,
)
"""A return the speaker brought about (`once i stopped training, ... is back to 0.2s`, `After a
reboot it is back to 60 MH/s`)."""
_EARLIER_FIGURE = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?")


def came_back(text: str) -> bool:
    """Whether the text says a figure came back by itself (BACK_TO) to one it gave before,
    within a tenth (`dropped from 60 to 30 MH/s ... went back to 60 MH/s`), to its usual, or to
    a speed with its unit (`back at 2.8 it/s`), or holds again at the figure it fell from (`fell
    from 5200 to 3100 ...; it's been at 5200 again`): a dip that ended. A loss, a temperature or
    a wait back to a figure the report never gave speaks of another quantity; a return once the
    speaker stopped or restarted something is a workaround, not an end."""
    for m in BACK_TO.finditer(text):
        if _STOPPED_FIRST.search(text, max(0, m.start() - 60), m.start()):
            continue
        if (
            m["usual"]
            or _SPEED_BACK.match(text, m.end("figure"))
            and not _OTHER_BACK.search(text, max(0, m.start() - 30), m.start())
        ):
            return True
        if any(
            _near(m["figure"], earlier) for earlier in _EARLIER_FIGURE.findall(text, 0, m.start())
        ):
            return True
    baseline = _FROM_FIGURE.search(text)
    return baseline is not None and any(
        _near(m["figure"], baseline["figure"]) for m in _AGAIN.finditer(text, baseline.end())
    )


def _near(figure: str, said: str) -> bool:
    """Whether two figures agree within a tenth of the one said before."""
    back, before = amount_of(figure), amount_of(said)
    return before > 0 and abs(back - before) <= 0.1 * before


EXPLAINED = re.compile(
    # (not a tool's or a reading's look: `nvidia-smi looks normal there` explains nothing)
    r"(?:\b(?:is|are|be|seems?)|(?<!nvidia-smi\s)(?<!dmesg\s)(?<!else\s)(?<!temps\s)(?<!clocks\s)"
    r"(?<!logs\s)(?<!power\s)\blooks?|['’]s)\s+(?:quite\s+|totally\s+|completely\s+|perfectly\s+)?"
    r"(?:expected|normal|by\s+design|intended)\b|\bas\s+expected\b"
    r"|\bbecause\s+(?:we|I)\s+(?:\w+\s+)?(?:doubled|increased|added|changed|switched|enabled|raised)\b"
    r"|\bwhat\s+(?:I|we|you)\s+(?:had\s+)?expected\b|\b(?:documentation|docs)\s+says\b"
    r"|\bas\s+documented\b"
    # the work grew: a chat's context, a prompt, the history resent each turn
    r"|\b(?:context|prompt|history|conversation)\s+(?:\w+\s+){0,2}?(?:grow\w*|gets?\s+longer"
    r"|getting\s+longer)\b|\bresen[dt]\w*\s+(?:the\s+)?(?:full|whole|entire)\s+(?:history|context"
    r"|conversation)\b"
    # the speed said to be fine (not `fine for the first 1500 steps`, not the loss)
    r"|\b(?:speed|throughput|samples?/s\w*|it/s|s/it|step\s+time|tokens?/s\w*|performance)\s+"
    r"(?:\w+\s+){0,2}?(?:looks?|seems?|is)\s+fine\b(?!\s+(?:for|until|at\s+first|initially|on|in"
    r"|with|except))"
    # a cost chosen (`we capped the GPUs at 300 W ... accepted as a trade-off`) or a fix
    # announced (a changelog's `Fixed a slowdown in ...`)
    r"|\btrade-?offs?\b|\b(?:we|I)\s+(?:deliberately\s+|intentionally\s+)?(?:power-)?capped\b"
    r"|\bfix(?:ed|es)\s+(?:a|an|the)\s+(?:\w+\s+){0,2}?(?:slowdown|slowness|regression)\b"
    # designed so, or one slow iteration that comes back every N steps (a checkpoint, an eval)
    r"|\b(?:as|by)\s+design(?:ed)?\b|^\W*RESOLVED\b|\bauto-?resolved\b"
    # back to normal, unless only a restart brings it back (a workaround, not a cause)
    r"|(?<!brings\sit\s)(?<!restart\sit\s)\bback\s+to\s+normal\b(?![^.\n]{0,30}?\b(?:after|until"
    r"|once|when|with)\s+(?:a\s+|we\s+|I\s+|the\s+)?(?:restart|reboot|redeploy|re-?launch)\w*)"
    r"|\bfixed\s+(?:in|by)\s+(?:#|PR|v?\d|the\s+patch)|\b(?:throughput|tokens?/s|samples?/s|it/s)\s+"
    r"(?:(?:in|on)\s+\w+\s+)?(?:is\s+|was\s+|stays?\s+|basically\s+|roughly\s+)*(?:unchanged|the\s+same|flat|steady"
    r"|stable|constant)\b(?![^\n]{0,60}?\b(?:then|until|but|before|after|since)\b)"
    + "|"
    + OWN_CHANGE.pattern
    + r"|(?<!n't\s)(?<!not\s)\bmakes?\s+sense\b"
    # the speaker accepts it, a plan or a calculator predicted it, it follows the load
    r"|\b(?:I'?m|we'?re)\s+(?:fine|ok|okay)\s+with\s+(?:that|it)\b|\bas\s+you'?d\s+expect\b"
    r"|\b(?:which|that)\s+(?:matches|is\s+consistent\s+with)\b|\b(?:roughly\s+|about\s+|right\s+)?in\s+line"
    r"\s+with\s+(?:the\s+)?(?:\d+(?:\.\d+)?\s*x|twice|four\s+times|the\s+(?:extra|added|bigger|larger)"
    r"|what\s+(?:I|we|you)\s+expect)"
    # a figure that agrees with the published ones (`This falls inline with the performance
    # results provided by the Ray benchmarks`)
    r"|\b(?:falls?|is|are|seems?)\s+(?:in\s?line|consistent)\s+with\s+"
    r"(?:(?!\b(?:only|below|except|but)\b)[^.\n]){0,60}?\b(?:published\s+|official\s+)?benchmarks?\b"
    r"|\bis\s+(?:fine|acceptable|ok|okay)\s+for\s+(?:this|our|my)\b"
    r"|\bthat\s*(?:'s|’s|\s+is)\s+how\s+(?:our|the|it|this)\b|\bnormal\s+variation\b"
    r"|\bdifferent\s+(?:WU|work\s+unit|project|dataset|model|input)s?\b|\bas\s+planned\b"
    # denied a regression; a time that follows the size of the work (`grows with the batch
    # ramp`)
    r"|\bnot\s+a\s+(?:regression|slowdown)\b"
    r"|\b(?:grows?|grew|rises?|rose|increases?|increased|scales?|scaled)\s+with\s+(?:the\s+)?"
    r"(?:global\s+|micro[- ]?)?(?:batch|sequence|seq|context|input|prompt)\w*"
    # a dip that comes back every N steps (an evaluation, a checkpoint)
    r"|\bfor\s+[~≈]?\d+\s*\w+\s+every\s+[\d,]+k?\s+(?:steps?|iter\w*|epochs?)\b"
    r"|\bas\s+(?:every|any)\s+[\w\s-]{0,20}?(?:shows?|says|predicts?)\b"
    r"|\bas\s+the\s+(?:calculators?|spec\w*|manual|documentation|docs|datasheet)\s+(?:shows?|says"
    r"|predicts?)\b"
    r"|\bwhat\s+[\w\s~.-]{0,30}?predict(?:ed|s)\b|\btrack(?:s|ing)?\s+(?:the\s+)?(?:traffic|load|QPS)\b"
    # at the speed it should have, or back to it by itself
    r"|\b(?:it|training|job|run|that|everything)\b[^.,;\n]{0,20}?\b(?:is|runs?|continues|running)\s+"
    r"at\s+(?:the\s+)?(?:expected|normal|usual)\s+(?:speed|rate|pace|\d)|\brecovered\s+(?:on\s+its\s+own|by\s+itself|itself)\b"
    # recovered by a step of the same run (`... at step 1200 and was fully recovered by step 1300`)
    r"|\b(?:was|is|had|has)\s+(?:fully\s+|completely\s+)?recovered\s+(?:by|at|within)\s+"
    r"(?:step|iter\w*|epoch|batch)\s*\d"
    # the first steps said to skip work (`spend first thousands of steps (see `learning_starts`)
    # only collecting samples without training`): the later, slower steps are the usual ones
    r"|\bfirst\s+(?:[\w,]+\s+){0,2}?(?:steps?|iter\w*|episodes?|epochs?)\b[^.\n]{0,60}?"
    r"\b(?:only|just)\s+\w+ing\b[^.\n]{0,40}?\bwithout\s+\w+ing\b"
    # a phase said to only collect samples before training starts (RL's `learning_starts`:
    # `Before this, agent only collects samples, which is fast. After that point, agent trains
    # on every step`)
    r"|\b(?:only|just)\s+collect(?:s|ed|ing)?\s+(?:the\s+)?(?:samples|experiences?|transitions"
    r"|data)\b[^\n]{0,80}?\btrains?\b"
    r"|\b(?:trains?|updates?|learns?)\s+(?:on|at)\s+every\s+(?:step|iteration|env\s+step|transition)"
    r"\b[^.\n]{0,20}?,\s*which\s+slows\b"
    # only the first epoch slow (`the training was very slow only in the first epoch`)
    r"|\b(?:slow|slower|longer)\s+only\s+(?:in|for|during|on)\s+the\s+first\s+(?:epoch|iteration|iter"
    r"|step|batch|run|call|few\s+\w+)s?\b|\bonly\s+the\s+first\s+(?:epoch|iteration|step|batch|run"
    r"|call)s?\s+(?:is|was|are|were)\s+(?:very\s+|much\s+|a\s+lot\s+)?slow"
    # the first epoch slower than those after it: a warm-up (`the first epoch of model.fit
    # takes more time than the following epochs`)
    r"|\bfirst\s+(?:epoch|iteration|iter|step|batch|run|call)s?\b(?:[^.\n]|\.(?=\S)){0,40}?\b(?:takes?|took|is|was"
    r"|are|were)\s+(?:much\s+|a\s+lot\s+|far\s+)?(?:more\s+time|longer|slower)\s+than\s+(?:the\s+|all\s+)?"
    r"(?:following|subsequent|later|next|rest|others?)\b"
    + "|"
    + FIXED_BY_SETTING
    # the setup said changed (`With seq len 8192 instead of 2048 each step takes ...`), or the
    # times said to be where a plan puts them (`Per our curriculum ... are where they should be`)
    + r"|\bwith\s+(?:a\s+)?(?:seq(?:uence)?[\s_-]*len\w*|batch[\s_-]*size|bs|context(?:\s+length)?"
    r"|resolution|image\s+size|micro[\s_-]*batch)\s*(?:=|of)?\s*\d+k?\s+instead\s+of\s+\d+k?\b"
    r"|\b(?:are|is)\s+(?:exactly\s+)?where\s+(?:they|it)\s+should\s+be\b"
    r"|\bper\s+(?:our|the)\s+(?:curriculum|schedule|plan)\b"
    # the setup changed from one size to another (`After switching max_seq_length from 2048 to
    # 8192`), a model swapped for one of another size (`from Llama-3-8B to Llama-3-70B`), an
    # accumulation that makes one step several (`with gradient_accumulation_steps=16`), a
    # length or batch that ramps up (a curriculum)
    r"|\b(?:switch\w*|chang\w*|increas\w*|rais\w*|bump\w*|doubl\w*|mov(?:e|ed|ing))\s+(?:the\s+|my\s+"
    r"|our\s+)?(?:max[\s_-]*)?(?:seq(?:uence)?[\s_-]*len\w*|batch[\s_-]*size|bs|context(?:[\s_-]+length)?"
    r"|resolution|image[\s_-]*size|micro[\s_-]*batch\w*|num[\s_-]*frames)\s+from\s+\d+k?\s+to\s+\d+k?\b"
    r"|\bfrom\s+[\w.-]*?(?<![\w.])\d+(?:\.\d+)?(?-i:B)\b\s+to\s+[\w.-]*?(?<![\w.])\d+(?:\.\d+)?(?-i:B)\b"
    r"|\bwith\s+(?:gradient[\s_-]*accumulation\w*|grad[\s_-]*accum\w*)\s*(?:=|of)?\s*\d+"
    r"|\b(?:length|seq(?:uence)?[\s_-]*len\w*|batch[\s_-]*size)\s+ramps?\s+up\b"
    # members even again after a fix; decoding against prefill (two phases of different work)
    r"|\b(?:are|is|were|was|run(?:s|ning)?)\s+(?:all\s+)?(?:even|level|in\s+step|in\s+sync|balanced)"
    r"\s+again\b"
    r"|\b(?:generation|decod\w*|eval(?:uation)?)\b[^.\n]{0,30}?\bslower\s+than\s+(?:the\s+)?"
    r"(?:prompt\s+(?:processing|eval\w*)|prefill\w*)\b"
    # a time that rises for some inputs only (`can suddenly increase for specific segments`):
    # work that depends on the input, not a run that slowed
    r"|\b(?:increas\w*|grows?|rises?|longer|slower|blows?\s+out)\s+(?:\w+\s+){0,2}?(?:for|on|with)\s+"
    r"(?:specific|certain|particular|some|a\s+few)\s+(?:\w+\s+)?(?:segments?|inputs?|prompts?"
    r"|images?|files?|chunks?|samples?|batches|requests?|queries|videos?|documents?|sentences?"
    r"|utterances?)\b"
    # the speaker calls the change noise
     + r"|\bwithin\s+(?:the\s+)?(?:noise|jitter|run-to-run\s+variance|measurement\s+error)\b"
    # the speaker's own reason (`because we run beam search there`)
    r"|\bbecause\s+(?:we|I)\s+(?:also\s+)?(?:run|use|do|train|load|save|evaluat\w*|comput\w*"
    r"|sort|shuffle|pack|bucket)\b"
    # the member's own extra work (`because it also computes the LM head and the loss`)
    r"|\bbecause\s+it\s+also\s+(?:comput\w*|runs|does|holds|handles|hosts|writes|saves)\b"
    # a slowness given as what a cause may bring (`there is extra overhead ..., so it can be
    # slower per iteration`, `so much overhead that it may be slower`): a possibility, not an
    # event; a result said to agree with an explanation given
    r"|\b(?:so\s+|that\s+)?(?:it|this|that|training|each\s+\w+)\s+(?:can|may|might|could)\s+be\s+"
    r"(?:a\s+bit\s+|slightly\s+|somewhat\s+|much\s+)?slower\b"
    r"|\bin\s+line\s+with\s+(?:your|the|his|her|their)\s+(?:suggestion|explanation|expectation)s?\b"
    r"|\b(?:usual|expected|known)\s+(?:~?\d+\s*%\s+)?(?:recompute\s+)?(?:cost|overhead|penalty)\b|\bevery\s+[\d,]+k?\s+(?:steps?|iter\w*|batch\w*)\b[^.\n]{0,40}?"
    r"\b(?:one|an?|single)\s+(?:\w+\s+)?(?:step|iter\w*|batch)\b",
    re.IGNORECASE,
)
"""Said to be expected or caused by the speaker's own change (``some slowdown is expected``, ``as
expected for weak scaling``, ``exactly what I expected``, ``as the documentation says``,
``because we doubled the dataset``, a trade-off, a changelog's fix, ``as designed``, one slow
iteration every N steps, an alert already resolved, a speed back to normal, a throughput said
to be unchanged, checkpointing turned on, a known overhead): an explanation, not a fault report
(``slower than expected`` is no such sentence)."""

_ONLY_AFTER_RESTART = re.compile(
    r"\b(?:when|after|if|once|whenever|upon)\s+(?:\w+\s+){0,2}?"
    r"(?:resum|restart|reboot|relaunch|re-?launch|redeploy)\w*",
    re.IGNORECASE,
)


_AT_FIRST = re.compile(
    r"\b(?:at\s+first|initially|in\s+the\s+beginning|the\s+first\s+[^.\n]{0,30}?)\s*"
    r"(?:(?:is|are|was|were|looks?|seems?)\s+)?$",
    re.IGNORECASE,
)
"""A state said of the run's first moments (`the first ~10 seconds or so are perfectly normal -
and then the framerate suddenly drops`): the time before the slowdown, not its explanation."""


def explains(text: str) -> bool:
    """Whether `text` explains a slowdown away (``EXPLAINED``), unless the explaining sentence's
    own condition is a restart (``when resuming from a checkpoint, training time is normal``: a
    workaround, as ``back to normal after a restart`` is, not a cause) or its subject the run's
    first moments (_AT_FIRST)."""
    for m in EXPLAINED.finditer(text):
        start, _ = sentence_bounds(m)
        if _ONLY_AFTER_RESTART.search(text, start, m.start()) is None and not _AT_FIRST.search(
            text, start, m.start()
        ):
            return True
    return came_back(text)


SENTENCE = re.compile(
    r"(?<!\bca\.)(?<!\bvs\.)(?<!approx\.)(?<!\betc\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?;])\s+"
    r"|(?<=[。！？])|\n"
)


@lru_cache(maxsize=256)
def explained(sentence: str) -> bool:
    """Whether the speaker explains the speed away (``explains``, the same `because
    we ...` in the other languages, a warm-up, a member's own extra work, two setups side by
    side); once a text."""
    return _explained_in_words(sentence) or setups_differ(sentence)


def explained_at(m: re.Match[str]) -> bool:
    """Whether the text explains the speed away, two setups read in the match's own sentence
    only (`A100 nodes for training and V100 nodes for eval. Among the A100 nodes, a100-07 ...`
    compares no setups)."""
    return _explained_in_words(m.string) or setups_differ(sentence_at(m))


def sentence_at(m: re.Match[str]) -> str:
    """The sentence a match stands in (``SENTENCE``), its end mark included (a question's
    `?`)."""
    text = m.string
    start = max((b.end() for b in SENTENCE.finditer(text, 0, m.start())), default=0)
    stop = SENTENCE.search(text, m.end())
    return text[start : stop.start() if stop else len(text)]


@lru_cache(maxsize=256)
def _explained_in_words(text: str) -> bool:
    """explained() without the setups (once a text)."""
    return bool(explains(text) or _BECAUSE_WE.search(text) or _OWN_WORK.search(text))


def said_planned(text: str) -> bool:
    """Whether any sentence of `text` says the change was planned or the speaker's own (`as
    planned in the recipe`, `not a regression`, `duplicamos el micro-batch`): said of the
    report as a whole, unlike `as expected` or `looks normal`, which may be said of another
    thing (the temperatures, an evaluation's pause)."""
    return bool(_PLANNED.search(text))


_PLANNED = re.compile(
    r"\bas\s+planned\b|\bnot\s+a\s+(?:regression|slowdown)\b"
    # the speaker's own change of the work in other languages (we doubled, we increased)
    r"|\b(?:duplicamos|dobramos|aumentamos|verdoppelten|verdoppelt\s+haben|удвоили|увеличили)\b"
    r"|\bnous\s+avons\s+doublé\b|\bhaben\s+wir\s+\w+\s+verdoppelt\b",
    re.IGNORECASE,
)

_GPU_MODEL = re.compile(
    r"(?:\b(?:RTX|GTX)\s?|\b(?:the|a|my|our|one|two|an?)\s+)(?P<n>[1-5]0[5-9]0(?:\s?Ti)?)(?![\w.])"
    r"|(?<![\w.])(?P<n2>[1-5]0[5-9]0(?:\s?Ti)?)(?=\s*(?:s\b|GPUs?\b|cards?\b|box\b|rig\b|Ti\b))"
    r"|\b(?P<dc>A10|A30|A40|A100|A800|A6000|H20|H100|H200|H800|GH200|B100|B200|GB200|V100|P100|P40|K80"
    r"|T4|L4|L40S?|M60|MI\d{3}X?)\b",
    re.IGNORECASE,
)
_ALGORITHM = re.compile(
    r"\b(?:ethash|etchash|kawpow|autolykos\w*|octopus|randomx|cuckoo\w*|equihash|progpow|firopow"
    r"|kheavyhash|blake3|zhash|beamhash\w*|cryptonight\w*|daggerhashimoto|x16r\w*|lyra2\w*)\b",
    re.IGNORECASE,
)
_DIFFERENT = re.compile(
    r"\bdifferent\s+(?:GPU\s+|card\s+)?models?\b|型号不同|不同型号", re.IGNORECASE
)


@lru_cache(maxsize=256)
def setups_differ(text: str) -> bool:
    """Whether the text sets two GPU models or two mining algorithms side by side (`GPU 2 on
    KawPow ... its neighbours on Ethash`, `one RTX 3060 ... two RTX 3090s`): setups compared,
    not a member behind identical peers."""
    models = {
        (m["n"] or m["n2"] or m["dc"]).replace(" ", "").lower() for m in _GPU_MODEL.finditer(text)
    }
    algorithms = {m[0].lower() for m in _ALGORITHM.finditer(text)}
    return len(models) > 1 or len(algorithms) > 1 or _DIFFERENT.search(text) is not None


_BECAUSE_WE = re.compile(
    r"(?:\b(?:weil|da)\s+wir\b|\bparce\s+qu(?:e|')\s*(?:nous|on)\b|\bcar\s+nous\b|\bporque\s+"
    r"(?:nosotros|hemos|duplicamos|aumentamos|nós|dobramos)\b|\bperché\s+abbiamo\b|потому\s+что\s+мы)"
    # (not `because we have 8 identical GPUs`: the reason it should not be slow)
    r"(?![^.\n]{0,40}(?:identi|gleich|mêmes|stess|mism|одинаков))|"
    r"因为我们|我们把|したため|(?:した|変えた|増やした|上げた)ので|karena\s+kami|vì\s+chúng\s+tôi|çünkü|"
    # Korean: after I changed it, because it got bigger (`바꿨더니`, `커져서`)
    r"바꿨더니|늘렸더니|키웠더니|커져서|늘려서|"
    r"\b(?:erwartet|prévu|attendu|esperado|previsto|ожидаемо)\b|予想通り|预期|"
    # a trade-off said in the other languages (`dafür ...`, `зато ...`: in return)
    r"\bdafür\b|(?<!\w)зато(?!\w)|\ben\s+cambio\b|\ben\s+échange\b|\bem\s+troca\b|\bin\s+cambio\b|"
    r"\bgradient\s+checkpointing\b",
    re.IGNORECASE,
)
_OWN_WORK = re.compile(
    r"\bbecause\s+(?:it|this\s+\w+)\s+(?:also\s+)?(?:runs|does|handles|hosts|logs|saves|writes|"
    r"evaluat\w*|holds|comput\w*)\b|\bduring\s+(?:the\s+)?warm-?up\b|\bwarm-?up\s+only\b",
    re.IGNORECASE,
)
