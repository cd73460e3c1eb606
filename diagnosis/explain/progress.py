"""Training frameworks' progress lines: each step's time, read from the field that carries it.

Frameworks print their progress every N steps in their own words; the fields that carry a step's
duration or its throughput were read from their sources (mmcv, mmengine, detectron2,
torchvision's MetricLogger, timm, PaddlePaddle and PaddleNLP, NeMo, Keras, DeepSpeed, fairseq,
torchtitan, OpenNMT, TensorFlow's hooks, Horovod's and tf_cnn_benchmarks' benchmarks, tqdm's bar
as HF Trainer, accelerate and Lightning print it; DeepStream's and Savant's frame rates).
``step_seconds`` returns one figure per line, as seconds per step: a throughput is read as its
inverse (only its changes matter to the slowdown check), a unit is honoured (Keras' ``ms/step``,
``us/sample``).
JSON log lines of the same fields (mmcv's ``.log.json``, detectron2's ``metrics.json``,
fairseq's ``--log-format json``) are read too.

Guarantees: the fields that are not a step's time are never read: an ETA (``eta: 1 day,
3:17:40``), a loader's wait inside the step (``data_time:``, ``Data:``), a cumulative clock
(fairseq's ``wall=``, OpenNMT's trailing ``N sec``, a loop's own ``Elapsed time:``: a bare
``time:`` is read only beside the ``eta`` or ``data_time`` the frameworks print with it), and
Keras' lines without a loss (``predict`` and ``evaluate`` calls). Running or window means are read
as they are (they rise less than the steps but never without them). A line's stream is told
apart by its field and its words, without the ETA and the unit (``progress_stream``), so a
validation loop's faster lines do not become a training loop's history; ``step_counter`` gives
the step a line counts, so a stream starts again where its count goes back (a new epoch, a new
run, a resumed one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import NamedTuple, TypeVar

T = TypeVar("T")

_NUM = r"\d+(?:\.\d+)?"
_Q = r"\"?"  # a JSON key's or value's quote
# each field, by the needle that must be in the line before its pattern is tried
_FIELDS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (needle, field, re.compile(pattern))
    for needle, field, pattern in (
        # seconds per step: mm*/detectron2/torchvision `time: 0.853` (beside its `eta` or
        # `data_time`), timm `Time: 0.416s,`, Paddle `batch_cost: 0.52`, NeMo
        # `train_step_timing in s=0.41`, Keras `- 150ms/step - loss:`
        ("time", "time", re.compile(rf"(?<![\w.]){_Q}time{_Q}: ?{_Q}(\d+\.\d+)s?\b(?!\s*\()")),
        ("Time: ", "timm", re.compile(rf"\bTime: ({_NUM})s,")),
        ("batch_cost", "paddle", re.compile(rf"\b(?:avg_)?batch_cost: ({_NUM})")),
        ("timing", "nemo", re.compile(rf"\btrain_step_timing(?: in s)?[=:] ?({_NUM})")),
        ("s/s", "keras", re.compile(rf"\s({_NUM})(us|ms|s)/(?:step|sample)\b.*\bloss\b")),
        # tqdm's bar (HF Trainer, accelerate, Lightning): `| 180/1311 [06:22<39:58,  2.12s/it]`
        # (its rate is a moving average; it prints it/s above one step a second)
        # (a bar of a training loop only: none or an epoch, step or training description, not a
        # download, a map, a generation or an evaluation; Lightning adds `, v_num=0`)
        (
            "<",
            "tqdm",
            re.compile(
                rf"^(?:\s*|.*\b(?:[Ee]poch|[Tt]rain\w*|[Ss]teps?|[Ii]ter\w*)\b[^|]*?)\s*\d+%\|"
                rf"[^|]*\|\s*\d+/(\d+) \[[\d:]+<[\d:?]+,\s*({_NUM})(s/it|it/s)(?:,[^\]]*)?\]"
            ),
        ),
        # PaddleNLP's Trainer: the seconds of the last logging interval
        ("interval_runtime", "paddle_interval", re.compile(rf"\binterval_runtime: ({_NUM})")),
        # throughputs: DeepSpeed, fairseq, torchtitan, OpenNMT, Paddle, PaddleNLP, TF hooks,
        # Horovod and tf_cnn_benchmarks
        ("SamplesPerSec=", "deepspeed", re.compile(rf"\b(?:Curr)?SamplesPerSec=({_NUM})")),
        ("wps", "fairseq", re.compile(rf"{_Q}\bwps{_Q}[=:] ?{_Q}(\d{{1,3}}(?:,\d{{3}})+|{_NUM})")),
        ("tps:", "titan", re.compile(r"\btps: (\d{1,3}(?:,\d{3})+|\d+)")),
        ("tok/s", "onmt", re.compile(r";\s+(\d+)/\s*\d+ tok/s;")),
        ("ips:", "ips", re.compile(rf"\bips: ({_NUM})")),
        ("step/s", "paddlenlp", re.compile(rf"\bspeed: ({_NUM}) step/s")),
        ("global_step/sec", "tf", re.compile(rf"\bglobal_step/sec: ({_NUM})")),
        ("per GPU", "horovod", re.compile(rf"\b({_NUM}) img/sec per GPU")),
        ("images/sec:", "tfcnn", re.compile(rf"\bimages/sec: ({_NUM}) \+/-")),
        # video pipelines' frame rates: DeepStream's `**PERF:  45.99 (45.96)` (the first
        # stream's current rate, its running mean in brackets), Savant's `FPS = 109.72`
        ("**PERF:", "deepstream", re.compile(rf"\*\*PERF:\s+({_NUM})\s+\(")),
        ("FPS = ", "savant", re.compile(rf"\bFPS = ({_NUM}),")),
    )
)
_RATES = frozenset(
    {"deepspeed", "fairseq", "titan", "onmt", "ips", "paddlenlp", "tf", "horovod", "tfcnn"}
    | {"deepstream", "savant"}
)
# a bare `time:` is a step time only beside the fields the frameworks print with it
_TIME_CONTEXT = re.compile(r"\beta\b|data_time|\bdata: ", re.IGNORECASE)
_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_WORD = re.compile(r"[A-Za-z_]{2,}")
_NOT_SHAPE = re.compile(
    r"\beta\W+(?:\d+\s+days?,\s*)?[\d:]+|(?<![\d.])\d+(?:\.\d+)?(?:us|ms|s)/(?:step|sample)",
    re.IGNORECASE,
)
# the step a line counts: tqdm's `| 180/1311 [`, `[  50/1251`, `[50/7330]`, `iter: 19`,
# `step: 10`, `Iter #0`, `global_step=100`, `| epoch 001:    100 / 1000`, a leading `10  images/sec`
_COUNTER = re.compile(
    # (not a date: `[05/12 10:11:12]`, `[2024/02/21 ...`)
    r"\|\s*(\d+)/\d+ \[|\[\s*(\d+)\s*/\s*\d+(?![/-]\d|\d|\s+\d{1,2}:\d\d)"
    r"|\b(?:iter(?:ation)?|_?step|global_step|num_updates|batch)\b\W{0,3}(\d+)"
    r"|\bIter #(\d+)|:\s+(\d+)\s*/\s*\d+\b|^\s*(\d+)\s+images/sec",
    re.IGNORECASE,
)
# an epoch's own bracket is no step (`epoch: [4/500], global_step: 3200`): a step named as one
# wins over a bracket that may be the epoch's
_GLOBAL_STEP = re.compile(r"\b(?:global_step|num_updates)\b\W{0,3}(\d+)", re.IGNORECASE)
# a tqdm bar's count wins over its description's words (`Iteration:  29%|##| 4313/14774 [`: not
# step 29)
_BAR_COUNT = re.compile(r"\|\s*(\d+)/\d+ \[")


class StepFigure(NamedTuple):
    """One progress line's step time: which field it came from, and seconds per step."""

    field: str
    seconds: float


def step_seconds(body: str) -> StepFigure | None:
    """Return the step time a progress line reports (a throughput as its inverse), or None."""
    for needle, field, pattern in _FIELDS:
        if needle not in body:
            continue
        m = pattern.search(body)
        if m is None or (field == "time" and _TIME_CONTEXT.search(body) is None):
            continue
        if field == "tqdm":  # the bar's total tells the loop apart (train against evaluation)
            rate = float(m[2])
            return (
                StepFigure(f"tqdm/{m[1]}", rate if m[3] == "s/it" else 1 / rate) if rate else None
            )
        value = float(m[1].replace(",", ""))
        if value <= 0:
            return None
        if field in _RATES:
            return StepFigure(field, 1 / value)
        if field == "keras":
            return StepFigure(field, value * _UNIT[m[2]])
        return StepFigure(field, value)
    return None


def progress_stream(body: str, field: str) -> str:
    """Return the key of the stream a progress line belongs to: its field and its words,
    without its ETA and its unit (a validation loop prints other words than the training loop
    it interrupts; an ETA past a day or a step past a second is the same stream)."""
    return field + ":" + " ".join(sorted(set(_WORD.findall(_NOT_SHAPE.sub(" ", body)))))


_EPOCH = re.compile(
    r"\b(?:epoch|ep)(?:\(train\))?\s*[:=]?\s*\[?\s*(\d+)\b"
    r"|^\s*Train:\s*(\d+)\s+\[",  # timm's `Train: 12 [ 900/1251 ( 72%)]`
    re.IGNORECASE,
)


def epoch_of(body: str) -> int | None:
    """Return the epoch a progress line names (`Epoch 3:`, `Epoch: [5][400/5005]`,
    `Epoch(train)  [62][...]`, `[ep 3]`, timm's `Train: 12 [`), or None."""
    m = _EPOCH.search(body)
    return int(m[1] or m[2]) if m else None


def step_counter(body: str) -> int | None:
    """Return the step (or batch, or iteration) a progress line counts, or None."""
    named = _GLOBAL_STEP.search(body) or _BAR_COUNT.search(body)
    if named is not None:
        return int(named[1])
    m = _COUNTER.search(body)
    return int(next(g for g in m.groups() if g is not None)) if m else None


RUN_START = re.compile(r"^\s*(?:Epoch 1/\d+|Model:\s+\S+|Step\s+Img/sec\b)", re.IGNORECASE)
"""A line that starts a new run in the same text (a second Keras ``fit``, a benchmark's next
model): the progress streams before it are not its history."""


# a date and time the logger put first: `2024-05-03 10:00:01`, `[2024-05-03T10:00:01.123Z]`,
# `2024/05/03 10:00:01,123`
_CLOCK = re.compile(r"^\s*\[?(\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")


def clock_of(raw: str) -> float | None:
    """Return the seconds of the date and time a raw line starts with (counted from year 1, no
    time zone: only their differences are used), or None."""
    m = _CLOCK.match(raw)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        days = date(year, month, day).toordinal()
    except ValueError:
        return None  # no date (`2024-13-45`)
    if hour > 23 or minute > 59 or second > 60:
        return None
    fraction = float("0." + m[7]) if m[7] else 0.0
    return days * 86400 + hour * 3600 + minute * 60 + second + fraction


MIN_CLOCKED = 3
"""Intervals between clocked step lines a run needs before its step times are read."""


def clocked_steps(marks: Sequence[tuple[float, int, T]]) -> list[list[tuple[float, T]]]:
    """Return, per run, the step times that lines printing only their step and the time they
    were printed give: each interval's seconds over its steps, with the later line's item (a
    count that goes back starts a new run; a run of fewer than MIN_CLOCKED intervals is left
    out)."""
    runs: list[list[tuple[float, T]]] = [[]]
    for (t0, c0, _), (t1, c1, item) in zip(marks, marks[1:], strict=False):
        if c1 <= c0 or t1 < t0:
            runs.append([])  # a new run, a resumed one, or another worker's line
            continue
        runs[-1].append(((t1 - t0) / (c1 - c0), item))
    return [run for run in runs if len(run) >= MIN_CLOCKED]


# the size of the work a step does, named beside its time: a sequence length, a batch size, an
# image size, an evaluation set (`seq_len 2048`, `bs=64`, `max_len 512`, `val set 20000`), the
# requests a server runs at once (vLLM's `Running: 96 reqs`, sglang's `#running-req: 12`)
WORKLOAD = re.compile(
    r"\b(?P<name>seq(?:uence)?[ _-]?len(?:gth)?|max[ _-]?len(?:gth)?|context[ _-]?len(?:gth)?"
    r"|running|#running[ _-]req|grad(?:ient)?[ _-]?accum(?:ulation)?(?:[ _-]?steps)?"
    r"|ctx[ _-]?len|batch[ _-]?size|global[ _-]?batch(?:[ _-]?size)?"
    r"|micro[ _-]?batch(?:[ _-]?size)?|bs|gbs|mbs|resolution|img[ _-]?size|image[ _-]?size"
    r"|num[ _-]?tokens|tokens[ _-]?per[ _-]?batch"
    r"|(?:val(?:idation)?|eval(?:uation)?|test)[ _-]?(?:set|samples))\b\W{0,6}(?P<value>\d+)",
    re.IGNORECASE,
)


def workload(body: str) -> dict[str, int]:
    """Return the sizes of work a line names (lower-case name, blanks and dashes as `_`)."""
    if not any(c.isdigit() for c in body):
        return {}
    return {
        re.sub(r"[ -]", "_", m["name"].lower()): int(m["value"]) for m in WORKLOAD.finditer(body)
    }


WORKLOAD_CHANGE = 0.2
"""A size of work this share or more away from its first value is other work (96 running
requests against 95 is a server's jitter, 256 against 512 a doubled batch)."""


def workload_changed(bodies: Sequence[str]) -> bool:
    """Whether a size of work the lines name differs between them by ``WORKLOAD_CHANGE`` or
    more (a sequence length doubled, a batch size halved, a larger evaluation set, gradient
    accumulation turned up): their step times measure other work."""
    seen: dict[str, int] = {}
    for body in bodies:
        for name, value in workload(body).items():
            first = seen.setdefault(name, value)
            if abs(value - first) >= WORKLOAD_CHANGE * max(first, 1):
                return True
    return False


# progress of no training step: a download, an upload, a dataset's map or tokenizer pass,
# loading a checkpoint's shards
NOT_A_STEP = re.compile(
    r"\b(?:Download\w*|Fetch\w*|Upload\w*|Extract\w*|Resolving|Tokeniz\w*|Map|Filter"
    r"|Loading\s+(?:checkpoint\s+)?shards)\b"
)
