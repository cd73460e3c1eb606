"""A job said to have stopped making progress: a hang told in words.

A job that hangs prints nothing of its own; people report it (``training hangs at step 5000``,
``the progress bar has been frozen at 57% for 40 minutes``, ``no log lines for 2 hours``,
``step 800 で完全に止まって``), and a monitor reports the silence (``no data for train.step
in the last 25m``). These rules read:

- a verb of a stop (hangs, hung, frozen, stuck, stalled, deadlocked, stopped, and their
  counterparts in the other languages the readers know) said of the job's progress (the
  training, the job, the run, the process, its progress bar, steps, ranks, a collective), with
  what makes it a stop rather than a pause: a duration (``for 40 minutes``), no output or no
  error, ``completely``, or the place it stopped (``at step 3412``, ``at 57%``). ``hangs``
  and ``deadlocked`` need no more: they are never a pause.
- a silence with its length: no log lines, output, data or progress for (or in the last) a
  number of minutes or hours.

The verdict is a hang at warning: the action is to capture stacks (py-spy, the flight
recorder) before a restart. A hang said after a slowdown (``got slower and then completely
stopped``) is the hang: these rules come before the slowdown readers.

Guarantees: a stop said of a figure (a loss, a clock, power, memory, a temperature ``stuck at``,
a rate ``stuck there``) is no hang, nor is one that comes and goes (``时而``, ``sometimes``); a
negated or conditional stop (``no longer hangs``, ``doesn't freeze``, ``if it hangs``, ``to
avoid hangs``), a hang detector or timeout named as a thing, and a job stopped on purpose (``I
stopped the job``, early stopping) stay silent.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

STALLED = verdict(C.HANG, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.4)

_PROGRESS = (
    r"(?:training|train|job|run|process\w*|program|script|progress(?:\s+bar)?|bar|steps?|"
    r"iterations?|epochs?|ranks?|workers?|nodes?|everything|torchrun|launcher|NCCL|"
    r"all-?reduce|collectives?|model|fine-?tun\w*|pre-?train\w*|logs?|output)"
)
_STOP = (
    r"(?P<verb>hangs?|hung|hanging|deadlock\w*|freez(?:es|ing)|frozen|froze|stuck|stall(?:s|ed)|"
    r"(?:completely\s+)?stop(?:s|ped)(?:\s+(?:making\s+progress|printing|logging|moving|"
    r"advancing))?)"
)
_WHY_A_STOP = re.compile(
    r"\bfor\s+(?:~|about\s+|over\s+|more\s+than\s+|almost\s+|nearly\s+)?(?:\d+(?:\.\d+)?\s*(?:m|min\w*|"
    r"h|hrs?|hours?|s|secs?|seconds?|days?)\b|an?\s+(?:hour|day)|hours|days|ages)|\bforever\b|"
    r"\bindefinitely\b|\bno\s+(?:more\s+)?(?:errors?|output|logs?|log\s+lines?|progress|new\s+lines?|"
    r"exceptions?)\b|\bcompletely\b|\bat\s+(?:step|iter\w*|epoch|batch)\s*\d|\bat\s+\d+(?:\.\d+)?\s*%",
    re.IGNORECASE,
)
_NEVER_A_PAUSE = re.compile(r"^(?:hangs?|hung|hanging|deadlock\w*)$", re.IGNORECASE)
_NOT_A_STOP = re.compile(
    r"\b(?:not|never|no\s+longer|n't|without|avoid\w*|prevent\w*|if|whether|when(?:ever)?|"
    r"in\s+case|might|may|could|sometimes)\b[^.\n]{0,25}$",
    re.IGNORECASE,
)
_A_THING = re.compile(
    r"^\s*(?:detect\w*|detection|timeouts?|watchdog|monitor\w*|check\w*|debug\w*|issues?\s+with)",
    re.IGNORECASE,
)
_AT_A_LEVEL = re.compile(
    r"\s+(?:there|at\s+(?:that|this|those|these|a|the)\b|at\s+(?:around|about|~)?\s*\d[\d.,]*\s*"
    r"(?!%|\d)[A-Za-z/°])",
    re.IGNORECASE,
)
_ON_PURPOSE = re.compile(
    r"\b(?:I|we|you|user|admin)\s+(?:\w+\s+)?stopped\b|\bearly[\s_-]*stop\w*|\bstopped\s+(?:by|at)\s+"
    r"(?:the\s+)?(?:user|max_steps|epoch\s+limit|max\s+epochs)",
    re.IGNORECASE,
)


def _stopped(m: re.Match[str]) -> Verdict | None:
    """Return a hang when the stop is said of the job's progress and is a stop (module doc)."""
    line = m.string
    before = line[max(0, m.start("verb") - 40) : m.start("verb")]
    if _NOT_A_STOP.search(before) or _ON_PURPOSE.search(line) or _NOW_AND_THEN.search(line):
        return None
    if _A_THING.match(line[m.end("verb") :]):
        return None  # `hang detection`, `stuck-job watchdog`: the thing, not the event
    if _AT_A_LEVEL.match(line[m.end("verb") :]):
        return None  # `stuck there`, `stuck at 25 MH/s`: a figure that stays, not a stop
    if _NEVER_A_PAUSE.match(m["verb"]) or _WHY_A_STOP.search(line[m.start() :]):
        return STALLED
    return None


def _silence(m: re.Match[str]) -> Verdict | None:
    """Return a hang on a silence of a given length, unless the words before deny it."""
    return None if _NOT_A_STOP.search(m.string[max(0, m.start() - 30) : m.start()]) else STALLED


# a stop in the other languages: Japanese, Chinese, Korean, German, French, Spanish, Portuguese,
# Italian, Russian, Vietnamese, Indonesian, Turkish
_STOP_ELSEWHERE = (
    r"止まっ|止まり|止まる|固まっ|フリーズ|ハングし|卡住|卡死|卡在|不动了|停住|挂住|hang住|"
    r"멈췄|멈춰|멈춤|먹통|\bhängt\b|hängen\s+geblieben|eingefroren|\bbloqué|\bse\s+fige|\bfigé|"
    r"ne\s+progresse\s+plus|se\s+cuelga|se\s+queda\s+colgad\w*|\bcongelad\w*|\batascad\w*|"
    r"no\s+avanza|\btrava(?:do|da)?\b|não\s+avança|si\s+blocca|\bbloccat\w*|"
    r"(?<![\w])(?:завис\w*|застрял\w*|висит)(?![\w])|bị\s+treo|đứng\s+im|\bmacet\b|"
    r"\btakıl\w*|\bdondu\b"
)
_NO_OUTPUT_ELSEWHERE = re.compile(
    r"ログ|出力|エラー|完全に|步|日志|输出|没有|로그|출력|완전히|Ausgabe|Log|sortie|journal|"
    r"salida|registro|saída|uscita|лог|вывод|log|output|(?:step|iter\w*|epoch|第)\s*\d|"
    r"\d+(?:\.\d+)?\s*(?:%|分钟|分|小时|時間|時|min\w*|h\b|hours?|Minuten|Stunden|heures|minutos|"
    r"horas|minuti|ore\b|минут|час)",
    re.IGNORECASE,
)
_NOW_AND_THEN = re.compile(
    r"时而|偶尔|有时|経常|時々|たまに|가끔|manchmal|parfois|a\s+veces|às\s+vezes|a\s+volte|иногда|"
    r"\b(?:sometimes|occasionally|now\s+and\s+then|intermittent\w*)\b",
    re.IGNORECASE,
)
"""A stop that comes and goes (`时而`, `sometimes`): a stutter, not a hang."""


def _stopped_elsewhere(m: re.Match[str]) -> Verdict | None:
    """Return a hang on a stop in another language with a place, a length or no output."""
    if _NO_OUTPUT_ELSEWHERE.search(m.string) is None or _NOW_AND_THEN.search(m.string):
        return None
    return None if _NOT_A_STOP.search(m.string[max(0, m.start() - 30) : m.start()]) else STALLED


RULES: tuple[Rule, ...] = (
    rule(
        "stalled.said",
        rf"\b{_PROGRESS}\b[^.\n]{{0,40}}?\b{_STOP}\b",
        ("hang", "hung", "deadlock", "freez", "frozen", "froze", "stuck", "stall", "stop"),
        "The job said to have stopped making progress (hangs, frozen for 40 minutes, stopped "
        "at step N with no output): a hang; capture the stacks before restarting.",
        judge=_stopped,
        flags=re.IGNORECASE,
    ),
    rule(
        "stalled.silence",
        r"\bno\s+(?:new\s+)?(?:log\s+lines?|logs?|output|data|progress|lines?|metrics?)\b[^\n]{0,60}?"
        r"\b(?:for|in\s+the\s+(?:last|past))\s+(?:~|about\s+|over\s+|more\s+than\s+)?\d+(?:\.\d+)?\s*"
        r"(?:m|min\w*|h|hrs?|hours?)\b",
        ("no log", "no new", "no output", "no data", "no progress", "no line", "no metric"),
        "No log lines, output or data from the job for minutes or hours: the job stopped "
        "(a hang, or a process gone); capture the stacks.",
        judge=_silence,
        flags=re.IGNORECASE,
    ),
    rule(
        "stalled.said_elsewhere",
        _STOP_ELSEWHERE,
        (
            *("止ま", "固まっ", "フリーズ", "ハング", "卡", "不动了", "停住", "挂住", "hang住"),
            *("멈", "먹통", "hängt", "hängen", "eingefroren", "bloqué", "fige", "figé"),
            *("progresse plus", "cuelga", "colgad", "congelad", "atascad", "no avanza", "trava"),
            *("não avança", "blocca", "завис", "застрял", "висит", "treo", "đứng im", "macet"),
            *("takıl", "dondu"),
        ),
        "The job said to be stuck in another language (止まって, 卡住, hängt, bloqué, se "
        "cuelga, завис ...) with where it stopped or what it no longer prints: a hang.",
        judge=_stopped_elsewhere,
        flags=re.IGNORECASE,
    ),
)
