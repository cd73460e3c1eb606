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
- a stop at a place with its length (``stuck at step 18432 for 47 minutes``), a collective
  that never returns or that every rank waits in for minutes (``waiting in ncclAllReduce for 40
  min``, ``rank 3 stuck in ncclAllReduce``), a monitor's no-progress alert, no heartbeat for a
  number of seconds;
- a silence with its length: no log lines, output, data or progress for (or in the last, or
  since) a number of minutes or hours, a job that has not logged anything in 45 minutes.

The verdict is a hang at warning: the action is to capture stacks (py-spy, the flight
recorder) before a restart. A hang said after a slowdown (``got slower and then completely
stopped``) is the hang: these rules come before the slowdown readers.

Guarantees: a stop said of a figure (a loss, a clock, power, memory, a temperature ``stuck at``,
a rate ``stuck there``) is no hang, nor is one that comes and goes (``时而``, ``sometimes``); a
negated or conditional stop (``no longer hangs``, ``doesn't freeze``, ``if it hangs``, ``to
avoid hangs``, ``no hangs``, ``fixed the hang``), a hang detector or timeout named as a thing,
a job stopped on purpose or by its limits (``I stopped the job``, early stopping, max_steps, a
time limit, a cancel, a preemption), a queue (``stuck in PENDING``), a pause that resumed, a
quiet phase said to be expected (a compile's warm-up, an evaluation, a checkpoint's save), a
changelog's known issue and a resolved alert stay silent.
"""

from __future__ import annotations

import re
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import SPEAKER, Rule, rule, sentence_bounds, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

RESUMED = re.compile(
    r"\bmoved\s+on\b|\b(?:then\s+)?resumed\b|\b(?:moving|flowing|progress(?:es|ed|ing))\s+again\b",
    re.IGNORECASE,
)
"""A later line of the same input says the job moved on: a stall said before it was a pause (the
engine drops the stall findings of earlier lines)."""
UNTIL_THIS_POINT = "stalled.until_this_point"
STALLED = verdict(C.HANG, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.4)

_PROGRESS = (
    r"(?:training|train|jobs?|runs?|process\w*|program|script|code|progress(?:\s+bar)?|bar|steps?|"
    r"eval\w*|stage|trainer|pods?|"
    r"iterations?|epochs?|ranks?|workers?|nodes?|everything|torchrun|launcher|NCCL|tqdm|counter|"
    r"all-?reduce|collectives?|model|fine-?tun\w*|pre-?train\w*|horovod|mpirun|mpiexec|srun|"
    # nccl-tests' binaries and the benchmark they make (`all_reduce_perf gets stuck`)
    r"\w+_perf(?:_mpi)?|nccl-tests|benchmarks?)"
)
_STOP = (
    r"(?P<verb>hangs?|hung|hungs|hanging|deadlock\w*|freez(?:es|ing)|frozen|froze|stucks?|stall(?:s|ed)|"
    r"(?:completely\s+)?stop(?:s|ped)(?:\s+(?:making\s+progress|printing|logging|moving|"
    r"advancing|producing\s+output|writing\s+logs?))?|wedged|(?:grinds?|ground)\s+to\s+a\s+halt"
    r"|never\s+gets?\s+past"
    r"|never\s+(?:exits?|returns?|finish(?:es)?|completes?|shows?\s+up))"
)
_WHY_A_STOP = re.compile(
    r"\bfor\s+(?:the\s+(?:last|past)\s+)?(?:~|about\s+|over\s+|more\s+than\s+|almost\s+|nearly\s+)?"
    r"(?:\d+(?:\.\d+)?\+?\s*(?:m|min\w*|h|hrs?|hours?|days?)\b|(?:half\s+)?an?\s+(?:hour|day)|hours|days|"
    r"ages)|\bforever\b|"
    r"\bindefinitely\b|\bno\s+(?:more\s+|new\s+)?(?:errors?|output|logs?|log\s+lines?|progress|lines?|"
    r"exceptions?)\b|\bcompletely\b|\bat\s+(?:step|iter\w*|epoch|batch)\s*\d|\bat\s+\d+(?:\.\d+)?\s*%|"
    r"\bat\s+(?:message\s+)?size\s+`?\d|\b(?:eventually\s+)?times\s+out\b|"
    r"\bafter\s+(?:this|that|the\s+(?:following|last))\s+line\b"
    r"|\(?at\s+least\s+\d+\s*(?:m|min\w*|h|hrs?|hours?)\b|"
    r"\bsince\s+(?:last\s+night|yesterday|this\s+morning|\d)|\bbeen\s+(?:~|about\s+|over\s+)?\d+\s*"
    r"(?:m|min\w*|h|hrs?|hours?)\b|\bnothing\s+since\b",
    re.IGNORECASE,
)
_IN_COLLECTIVE = re.compile(
    r"\s+in\s+(?:an?\s+|the\s+)?(?:nccl\w+|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|barrier|"
    r"broadcast|collective\w*)",
    re.IGNORECASE,
)
_NEVER_A_PAUSE = re.compile(
    r"^(?:hangs?|hung|hanging|deadlock\w*|(?:grinds?|ground)\s+to\s+a\s+halt|never\s+gets?\s+past)$",
    re.IGNORECASE,
)
_NOT_A_STOP = re.compile(
    r"\b(?:not|never|no|zero|no\s+longer|n't|without|avoid\w*|prevent\w*|if|whether|when(?:ever)?|"
    r"in\s+case|might|may|could|sometimes|fix(?:ed|es|ing)?|used\s+to)\b[^.\n]{0,25}$",
    re.IGNORECASE,
)
_SUPPOSED = re.compile(
    r"\b(?:it['’]?s|it\s+is|it\s+would\s+be)\s+(?:also\s+|quite\s+)?possible\s+that\b"
    r"|\bwhat\s+(?:happens|would\s+happen)\s+(?:when|if)\b|\b(?:imagine|suppose)\b",
    re.IGNORECASE,
)
"""A sentence that supposes what it says: a case argued, not an event (with no speaker in it:
`Imagine my surprise: the training froze`, `what happens when I launch` tell events)."""
_A_THING = re.compile(
    r"^\s*(?:detect\w*|detection|timeouts?|watchdog|monitor\w*|check\w*|debug\w*|issues?\s+with)",
    re.IGNORECASE,
)
_AT_A_LEVEL = re.compile(
    r"\s+(?:there|at\s+(?:that|this|those|these|a|the)\b|at\s+(?:around|about|~)?\s*\d[\d.,]*\s*"
    r"(?!%|\d|for\b|since\b)[A-Za-z/°])",
    re.IGNORECASE,
)
_ON_PURPOSE = re.compile(
    r"\b(?:I|we|you|user|admin)\s+(?:\w+\s+)?stopped\b|\bearly[\s_-]*stop\w*|\bstopped\s+(?:by|at)\s+"
    r"(?:the\s+)?(?:user|max_steps|epoch\s+limit|max\s+epochs)|\breached\s+(?:the\s+)?(?:max\w*|end|"
    r"limit|target)|\bmax_(?:steps|epochs)\b|\b(?:finished|completed|preempt\w*|maintenance|scancel\w*|"
    r"cancel\w*)\b|\b(?:kept|keeps)\s+(?:going|training|running)\b(?!\s+(?:up|down)\b)"
    r"|\bstill\s+(?:running|training|"
    r"progressing|going)\b|\bexpected\b|\bevery\s+[\d,]+k?\s+(?:steps?|iter\w*|epochs?)\b|\bwhile\s+"
    r"(?:the\s+)?(?:final\s+)?(?:checkpoint|eval\w*|sav\w*|wandb|the\s+logger|torch\.compile|compil\w*)|"
    r"\bknown\s+issue\b|\bfixed\s+in\b|\bchangelog\b|\brelease\s+notes?\b|\btime\s+limit\b|"
    r"--time=|\bwall-?time\s+limit|\bwarm\w*\s+up\b|\b(?:then\s+)?resumed\b|\brecovered\b|"
    r"\bcame\s+back\b|\bRESOLVED\b|\bcleared\b|\bstatus=ok\b|\bis\s+defined\b|\balert\s+rule\b"
    r"|\bPENDING\b|\bin\s+the\s+(?:Slurm\s+)?queue\b|\bthat'?s\s+fine\b|\bsteps\s+are\s+flowing\b",
    re.IGNORECASE,
)
"""A stop on purpose or one that is no stop of the training: a normal end, a cancel, a
preemption, logs that stopped while training kept going, an expected quiet phase, a pause at
every checkpoint."""
_NOT_PROGRESS = re.compile(
    r"\b(?:acc(?:uracy)?|loss|lr|learning\s+rate|perplexity|ppl|reward|score|bleu|mAP|f1|memory|"
    r"power|clocks?|temp\w*|util\w*|fan|queue|PENDING|ContainerCreating)\b",
    re.IGNORECASE,
)
_NEXT_CLAUSE = re.compile(r"\s+(?:and|but|while)\s+|[,;]")
"""Where the clause of a stop ends: `hangs and all GPUs show 99% utilization` says the stop,
then another thing."""
_QUEUED = re.compile(
    r"^\s*(?:in|at)\s+(?:the\s+)?(?:PENDING|Pending|queue|ContainerCreating|Init)", re.I
)


_ENDED_OR_STUCK = re.compile(r"(?:completely\s+)?stop", re.IGNORECASE)
_CAUSE_QUOTED = re.compile(
    r"\bNCCL\s+(?:WARN|ERROR)\b[^\n]{0,200}?\b(?:error|fail\w*|timed?\s*out|timeout|abort\w*"
    r"|unhandled|refused|reset|unreachable)\b|\bnccl(?:System|Internal|Remote)Error\b",
    re.IGNORECASE,
)
"""NCCL's own warning of a failure quoted beside the hang (`one pod hang with error message: ...
NCCL WARN NET/IB : Got completion ... error 12`): the message names the cause, and its rule reads
it (a warning of something else, an ignored variable, leaves the hang)."""


def _stopped(m: re.Match[str]) -> Verdict | None:
    """Return a hang when the stop is said of the job's progress and is a stop (module doc); the
    code said to have stopped may have ended as well as hung (`I tried running the code ... and
    it stopped in the middle of the 64th epoch`): only its hanging is read. A stop its sentence
    supposes (`it's possible that all attaching grinds to a halt`) is none."""
    line = m.string
    start = sentence_bounds(m)[0]
    if _SUPPOSED.search(line, start, m.start("verb")) and not SPEAKER.search(
        line, start, m.start("verb")
    ):
        return None
    if m["subject"].lower() == "code" and _ENDED_OR_STUCK.match(m["verb"]):
        return None
    before = line[max(0, m.start("verb") - 40) : m.start("verb")]
    if _NOT_A_STOP.search(before) or _no_stop_said(line) or _CAUSE_QUOTED.search(line):
        return None
    if _A_THING.match(line[m.end("verb") :]) or _QUEUED.match(line[m.end("verb") :]):
        return None  # `hang detection`, `stuck in PENDING`: a thing, or a queue
    clause = _NEXT_CLAUSE.search(line, m.end("verb"), m.end("verb") + 30)
    if _NOT_PROGRESS.search(line[m.start() : m.start("verb")]) or _NOT_PROGRESS.search(
        line, m.end("verb"), clause.start() if clause else m.end("verb") + 30
    ):
        return None  # `accuracy has been stuck at 50%`: a figure of the model, not its progress
    if _AT_A_LEVEL.match(line[m.end("verb") :]):
        return None  # `stuck there`, `stuck at 25 MH/s`: a figure that stays, not a stop
    if _NEVER_A_PAUSE.match(m["verb"]) or _WHY_A_STOP.search(line[m.start() :]):
        return STALLED
    if _IN_COLLECTIVE.match(line[m.end("verb") :]):
        return STALLED  # `rank 3 stuck in ncclAllReduce`: a collective that does not return
    return None


@lru_cache(maxsize=64)
def _no_stop_said(line: str) -> bool:
    """Whether the line says the stop was on purpose, ended or came and went (once a line); a
    step that has not finished (`no step has finished in 2 hours`) is no normal end."""
    said = any(
        not _UNDONE.search(line, max(0, m.start() - 32), m.start())
        for m in _ON_PURPOSE.finditer(line)
    )
    return said or _NOW_AND_THEN.search(line) is not None


_UNDONE = re.compile(
    r"\b(?:no|not|never|none|nothing)\b(?:\s+\w+){0,3}\s+(?:has|have|had)?\s*$|n't\s+$", re.I
)


def _silence(m: re.Match[str]) -> Verdict | None:
    """Return a hang on a silence of a given length, unless the words before deny it or the
    line says why it is quiet (an expected phase, logs that stopped while training kept going)."""
    if _NOT_A_STOP.search(m.string[max(0, m.start() - 30) : m.start()]):
        return None
    return None if _no_stop_said(m.string) else STALLED


# a stop in the other languages: Japanese, Chinese, Korean, German, French, Spanish, Portuguese,
# Italian, Russian, Vietnamese, Indonesian, Turkish
_STOP_ELSEWHERE = (
    r"止まっ|止まり|止まる|固まっ|フリーズ|ハングし|卡住|卡死|卡在(?=\s*(?:第|step|iter|epoch|batch|\d|这|那))|不动了|"
    r"停住|挂住|hang住|不跑了|死在那里|卡在某个地方|進まない|進みません|進まなく|"
    r"멈췄|멈춰|멈춤|먹통|\bhängt\b|hängen\s+geblieben|eingefroren|\bbloqué|\bse\s+fige|\bfigé|"
    r"ne\s+progresse\s+plus|se\s+cuelga|se\s+qued(?:a|ó|o)\s+colgad\w*|\bcongelad\w*|\batascad\w*|"
    r"no\s+avanza|\btrav(?:a|ado|ada|ou)\b|não\s+avança|si\s+blocca|\bbloccat\w*|"
    r"(?<![\w])(?:завис\w*|застрял\w*|висит)(?![\w])|bị\s+treo|đứng\s+im|\bmacet\b|"
    r"\btakıl\w*|\bdondu\b|\bdonmuş\b|\bilerle(?:medi|miyor)\b|\bstoi\s+od\b|\bzawiesi\w*"
)
_NO_OUTPUT_ELSEWHERE = re.compile(
    # (a run that stops after a while with its GPUs at 0: `一段时间后 ... 使用率会变成0`)
    r"一段时间|(?:使用率|利用率|占用率)[^。，,]{0,4}?(?:变成|降到|变为|为|是)\s*0(?![\d.])|"
    # no error, and the run does not go on (`不在继续进行，但也不会有任何报错`)
    r"(?:没有|不会有|无|没|也不)(?:任何)?报错|不(?:再|在)继续|これを最後に|"
    # a stop said complete (`卡住不动`, `一动不动`)
    r"卡住不动|一动不动|"
    r"ログ|出力|エラー|完全に|步|日志|输出|로그|출력|완전히|Ausgabe|Log|sortie|journal|"
    r"salida|registro|saída|uscita|лог|вывод|log|output|(?:step|iter\w*|epoch|第)\s*\d|adım|beri|"
    r"(?<![\d.])\d++(?:\.\d++)?\s*(?:分钟|分|小时|時間|時|min\w*|h\b|hours?|Minuten|Stunden|heures|minutos|"
    r"horas|minuti|ore\b|минут|час)",
    re.IGNORECASE,
)
_NOW_AND_THEN = re.compile(
    r"时而|偶尔|有时|経常|時々|たまに|가끔|manchmal|parfois|a\s+veces|às\s+vezes|a\s+volte|иногда|"
    r"\b(?:sometimes|occasionally|now\s+and\s+then|intermittent\w*)\b",
    re.IGNORECASE,
)
"""A stop that comes and goes (`时而`, `sometimes`): a stutter, not a hang."""


_DENIED_ELSEWHERE = re.compile(
    r"(?:没有|没|不|未|並|并)$|^(?:ていない|てない|ていません|ません|ない)|^(?:\s+\w+){0,4}?\s+ab\b"
    r"|^\s+par\b",
    re.IGNORECASE,
)
"""A stop denied around the verb (`没有卡住`, `止まっていない`), or a verb in another sense
(`hängt ... ab`: depends on; `bloqué par le pare-feu`: blocked by the firewall)."""
_RECOVERED_ELSEWHERE = re.compile(
    r"恢复|回復|再開|復旧|回复|se\s+recuper|se\s+rétabli|erholt|восстанов|siguió|continuó|volvió"
    r"|seguiu|continuou|continuò|riprese",
    re.IGNORECASE,
)
"""A stop that ended by itself (`10 秒后自己恢复了`): a pause, not a hang."""


def _stopped_elsewhere(m: re.Match[str]) -> Verdict | None:
    """Return a hang on a stop in another language with a place, a length or no output."""
    around = (m.string[max(0, m.start() - 3) : m.start()], m.string[m.end() : m.end() + 30])
    if _DENIED_ELSEWHERE.search(around[0]) or _DENIED_ELSEWHERE.search(around[1]):
        return None
    return STALLED if _why_elsewhere(m.string) else None


@lru_cache(maxsize=64)
def _why_elsewhere(line: str) -> bool:
    """Whether the line gives a place, a length or no output, and no stutter or recovery (once
    a line)."""
    return bool(
        _NO_OUTPUT_ELSEWHERE.search(line)
        and not _NOW_AND_THEN.search(line)
        and not _RECOVERED_ELSEWHERE.search(line)
    )


RULES: tuple[Rule, ...] = (
    rule(
        "stalled.at_a_place",
        r"^\W*(?:stuck|frozen|hung|hangs?|hanging)\s+(?:at|on|in)\s+(?:step|iter\w*|epoch|batch)\s*\d"
        r"|\b(?:never|doesn't|does\s+not|didn't)\s+returns?\s+from\s+(?:the\s+)?(?:all_?reduce|all_?gather|"
        r"reduce_?scatter|barrier|broadcast|collective|NCCL)\w*|NoProgress\b"
        r"|\bno\s+(?:new\s+)?(?:training\s+)?progress\s+since\s+\d"
        r"|\b(?:hasn't|has\s+not)\s+(?:printed|logged|written)\s+anything\s+since\s+\d"
        r"|\b(?:waiting|stuck|blocked|sitting|hanging)\s+in\s+(?:nccl\w+|all_?reduce|all_?gather|barrier|"
        r"collective\w*)\s+for\s+(?:over\s+|more\s+than\s+)?\d+\s*(?:min\w*|h|hours?)"
        r"|\b(?:sitting|sat|stuck|frozen|hung)\s+(?:at|on)\s+(?:(?:step|iter\w*|epoch|batch)\s*\d+|\d+\s*%)"
        r"[^.\n]{0,30}?"
        r"\bfor\s+(?:over\s+|more\s+than\s+)?(?:an?\s+hour|\d+\s*(?:min\w*|h|hours?)|(?:two|three|four"
        r"|five|six|seven|eight|nine|ten|twelve|several|many)\s+(?:hours|minutes))"
        r"|\b(?:progress(?:\s+bar)?|step\s+counter|bar|tqdm|training|job|run)\s+(?:has\s+not|hasn't)\s+"
        r"(?:moved|advanced|changed|updated|progressed)\s+(?:since|for|in)\b"
        r"|\bno\s+heartbeat\b[^.\n]{0,30}?\bfor\s+\d+\s*(?:s|secs?|seconds|min\w*|h)\b"
        r"|\bheartbeat\b[^.\n]{0,30}?\bnot\s+updated\s+for\s+\d+\s*(?:s|secs?|seconds|min\w*|h)\b"
        r"|\b(?:hasn't|has\s+not|haven't|didn't|hasnt)\s+(?:logged|printed|written|output|reported|"
        r"advanced|moved)\s+(?:anything|a\s+(?:line|step))?\s*(?:in|for)\s+(?:the\s+(?:last|past)\s+)?\d+\s*"
        r"(?:min\w*|h|hours?)"
        r"|\b\d+\s*(?:min\w*|h|hours?)\s+without\s+(?:a\s+|any\s+)?(?:new\s+)?(?:step|progress|log|output|"
        r"update)"
        # the last line hours old, nothing since; no step completed since; a no-progress alert
        # the last line long ago (ten minutes or more), nothing since; no step completed since or
        # in the last hour; a no-progress alert (its age in minutes or hours)
        r"|\blast\s+(?:log\s+)?line\s+(?:is\s+|was\s+)?(?:from\s+)?(?:(?:[1-9]\d+|\d{3,})\s*min\w*"
        r"|\d+\s*(?:h|hrs?|hours?)|an?\s+hour|(?:two|three|four|five|six|several)\s+hours)\s+ago\b"
        r"|\b(?:nothing|no\s+steps?|not\s+a\s+single\s+step)\s+(?:has\s+|have\s+)?(?:progressing|progressed"
        r"|moving|moved|completed|happened|logged)\s+(?:since\s+(?:\d|then\b)|in\s+the\s+(?:last|past)\s+"
        r"(?:hour|day|\d+\s*(?:min\w*|h|hours?)))"
        r"|\bNo\w*Progress\b|\bheartbeat_stale\b|\bHeartbeatStale\b|\blast_step_age=\d+\s*(?:m|h)\b"
        # a stop after a count of the work (`nearly always hangs after certain number of batches`)
        r"|\b(?:hangs|hung|freezes|froze|gets\s+stuck|got\s+stuck)\s+after\s+(?:a\s+|certain\s+|some\s+"
        r"|about\s+|~?\d[\d,.k~-]*\s*)(?:number\s+of\s+)?(?:batches|steps|iterations|iters|epochs)\b"
        # one member idle while all the others spin at 100 % (`all gpus  are at 100%, except
        # node0:rank0 is at 0%`): the others wait in a collective for the one that stopped
        r"|\ball\s+(?:the\s+)?(?:other\s+)?(?:gpus?|ranks?|cards?|devices?)\s+(?:are\s+)?at\s+100\s*%,?\s+"
        r"(?:except|but)\s+[^.\n]{0,40}?\bat\s+0\s*%"
        # a hang said in a collective, whoever says it (`ran for hours and hang in the allreduce
        # operation`)
        r"|\b(?:hangs?|hung|hanging|stuck|stalls?|stalled)\s+in\s+(?:the\s+|an?\s+)?(?:all_?reduce|all_?gather"
        r"|reduce_?scatter|barrier|broadcast|nccl\w+)\b"
        # a stop said with the GPUs busy at 100 % (`it seems blocked when I run with PP=4 on 4GPUs,
        # and the GPU-util is 100%`): ranks that spin in a collective that does not return
        r"|\b(?:seems?|is|gets?|got|was)\s+(?:to\s+be\s+)?(?:blocked|stuck|hung|frozen)\b[^.\n]{0,80}?"
        r"\bGPU[-\s]?util\w*\s+(?:is\s+|are\s+|at\s+|stays?\s+(?:at\s+)?)?(?:all\s+)?100\s*%",
        (
            *("blocked", "except", "at 100", "stall"),
            *("stuck", "frozen", "hung", "hang", "return", "noprogress", "without", "n't"),
            *("has not", "waiting in", "blocked in", "sitting", "heartbeat", "progress since"),
            *("last line", "last log line", "nothing", "no step", "progress", "last_step_age"),
            "single step",
        ),
        "A job stopped at a named place (stuck at step N), a collective that never returns, a "
        "monitor's no-progress alert, minutes without a step: a hang.",
        judge=_silence,
        flags=re.IGNORECASE,
    ),
    rule(
        "stalled.said",
        rf"\b(?P<subject>{_PROGRESS})\b[^.\n]{{0,40}}?\b{_STOP}\b",
        (
            *("hang", "hung", "deadlock", "freez", "frozen", "froze", "stuck", "stall", "stop"),
            *("wedged", "never", "halt"),
        ),
        "The job said to have stopped making progress (hangs, frozen for 40 minutes, stopped "
        "at step N with no output): a hang; capture the stacks before restarting.",
        judge=_stopped,
        flags=re.IGNORECASE,
    ),
    rule(
        UNTIL_THIS_POINT,
        # the speaker shows the last lines before the stop (`Training works just fine until it
        # hits this point:`, the log after it); a fault after it (a crash, an exception) is read
        # by its own lines, and this one gives way (the engine's _confirm)
        r"\b(?:training|it|everything|the\s+(?:job|run|model))\s+(?:works?|runs?|trains?|goes|went"
        r"|worked|ran|trained)\s+(?:just\s+)?(?:fine|well|ok(?:ay)?|normally)\s+until\s+it\s+"
        r"(?:hits|reaches|gets\s+to|got\s+to|reached|hit)\s+(?:this|that)\s+point\s*:\s*$",
        ("this point", "that point"),
        "The report shows the last lines the job printed before it stopped (`Training works "
        "just fine until it hits this point:`): a hang at that place; capture the stacks.",
        STALLED,
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
            *("travou", "travad", "stoi od", "zawiesi"),
            *("takıl", "dondu", "donmuş", "ilerle"),
            *("不跑了", "死在那里", "進ま", "進みません"),
        ),
        "The job said to be stuck in another language (止まって, 卡住, hängt, bloqué, se "
        "cuelga, завис ...) with where it stopped or what it no longer prints: a hang.",
        judge=_stopped_elsewhere,
        flags=re.IGNORECASE,
    ),
)
