"""The cost of a step that a line reports under a name no framework reader knows.

Trainers, timers and log shippers print a step's time or the job's throughput under a name:
``step_time=0.61``, ``"tokens_per_sec": 53621``, ``iter time: 512.34ms``, ``Time  0.412``,
``local_compute=0.744s``, ``train_speed(iter/s): 0.312``, ``Speed (samples/sec) 2410.8``,
``TFLOP/s/device: 398.4``, ``mfu 48.12%``, or as a figure with a per-step unit (``1.87s/it``,
``127ms/step``). ``work_figures`` reads each as seconds of work per step: a time as it is, a
rate as its inverse (so higher is always slower). The engine feeds one process's lines of one
shape to the slowdown checks (a run that slowed), and lines that name a member (a rank, a
worker, a GPU, a host) to the slow-peer check (one member behind its peers).

Guarantees: only names of a step's time or of work per second are read, never a data-loader's
time (``data_time``), an ETA, an elapsed or remaining time, a wall clock, a timestamp
(``time_ms``), a loss or a learning rate; a clock (``Time: 04:24``) is no step time; a
server's prefill throughput averaged over an interval follows the prompts that arrived and is
no speed; a line costs one search when it holds none of the names' words.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# (a figure in e-notation whole: ESPnet's `iter_time=1.201e-04` is no 1.2 s)
_NUM = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
# between a name and its figure: `=`, `: `, `":`, `':`, ` (s) `, ` (tok/s) `, ` in s=`, spaces,
# a pipe
_SEP = (
    r"""['"]?\s*(?:\((?:s|ms|sec|(?:tok|tokens?|samples?|img|images?|it|seqs?)/s)\)\s*"""
    r"""|in\s+s\s*)?[:=|]?\s*['"]?\s*"""
)
_TIME_NAME = (
    r"(?:avg_|mean_)?(?:step|iter(?:ation)?|batch|train(?:_step)?|local[ _]step|per[ _]step"
    r"|fwd[_-]?bwd|forward[_-]?backward|forward|backward|fwd|bwd|local_compute|compute)[ _-]?"
    r"(?:(?:time|timing|secs?|seconds|duration|latency|cost)(?P<ms>[ _-]?ms)?|(?P<ms2>ms))"
    r"|time[ _-]?(?:per[ _-])?(?:step|iter(?:ation)?|batch)|time_this_iter_s|last_time|t_step"
    # DeepSpeed's wall_clock_breakdown (`time (ms) | fwd_microstep: 121.44 | bwd_microstep: ...`;
    # not its `step_microstep`: the optimizer's step, a few hundredths of a ms between boundaries)
    r"|(?:fwd|bwd|forward|backward)_microstep"
    r"|mean\s+duration|(?<!total\s)(?<!elapsed\s)(?<!remaining\s)(?:seconds|time)"
    # a compute timer's figure, or a forward and backward pass's (`fwd_bwd=0.612s`, `mean
    # fwd+bwd 401.2 ms`), read only with its unit
    r"|(?P<bare>local_compute|compute|fwd[_+-]?bwd|forward[_+-]?backward)"
)
_RATE_NAME = (
    r"(?:train_)?(?:tokens?|toks?|samples?|images?|imgs?|sequences?|seqs?|steps?|iters?|batches|words)"
    r"[ _/-]?(?:per[ _-]?)?(?:sec(?:ond)?|s)(?:[ _/-]?(?:device|gpu|thread)|\s+per\s+gpu)?"
    r"|throughput|train_speed(?:\(iter/s\))?|speed\s*\((?:samples|tokens|images)/sec\)"
    r"|ips|wps|ups|tps|tflop/s(?:/device)?|tflops|mfu"
)
_NAMED = re.compile(
    # (a name may end a metric's path: Composer's `Train throughput/batches_per_sec: 1.62`)
    rf"(?:(?<=[A-Za-z]/)|(?<![\w./-]))(?:(?P<time>{_TIME_NAME})|(?P<rate>{_RATE_NAME})){_SEP}{_NUM}"
    r"(?P<unit>\s*(?:ms|s|sec)\b)?+(?!\s*:\d)(?![\d.:/])",
    re.IGNORECASE,
)
# a figure with a unit of its own: seconds per step, or steps (tokens, samples, images) a second
_UNIT = re.compile(
    rf"(?<![\w.]){_NUM}\s*(?P<per>(?:ms|s)/(?:step|it|iter|batch)|s/it|sec/it)(?![\w/])"
    rf"|(?<![\w.]){_NUM.replace('num', 'rnum')}\s*(?P<rate>it/s|tok/s|tokens/s|samples/s|img/s"
    r"|images/s)(?![\w/])",
    re.IGNORECASE,
)
# a server's prefill throughput averaged over its logging interval (vLLM's `Avg prompt
# throughput: 7109.8 tokens/s`): it follows the prompts that arrived, 0 when none did
_ARRIVALS = re.compile(
    rf"\b(?:avg|average|mean)[ _](?:prompt|prefill)[ _]throughput{_SEP}{_NUM}"
    r"\s*(?:tokens?|toks?)/s",
    re.IGNORECASE,
)
_WORDS = frozenset(
    {"time", "timing", "sec", "/s", "/it", "/step", "speed", "throughput", "ips", "wps"}
    | {"ups", "tps", "mfu", "flop", "cost", "duration", "latency", "compute", "_ms", "microstep"}
    | {"fwd", "forward"}
)


class WorkFigure(NamedTuple):
    """One named figure of a line: its name (lower case) and seconds of work per step."""

    field: str
    seconds: float
    rate: bool = False  # read from a rate (its inverse): never an elapsed clock


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def work_figures(body: str) -> list[WorkFigure]:
    """Return the line's figures of work, one per name, in the order written (module doc)."""
    low = body.lower()
    if not any(word in low for word in _WORDS):
        return []
    if "prompt" in low or "prefill" in low:
        body = _ARRIVALS.sub(" ", body)
    found: dict[str, float] = {}
    rates: set[str] = set()
    for m in _NAMED.finditer(body):
        value = _number(m["num"])
        if value <= 0:
            continue
        if m["time"] is not None:
            unit = (m["unit"] or "").strip().lower()
            if m["bare"] and not unit:
                continue  # `compute=0.7`: a time only with its unit
            scale = 0.001 if unit == "ms" or (not unit and (m["ms"] or m["ms2"])) else 1.0
            found.setdefault(m["time"].lower(), value * scale)
        else:
            found.setdefault(m["rate"].lower(), 1 / value)
            rates.add(m["rate"].lower())
    for m in _UNIT.finditer(body):
        if m["per"] is not None:
            value = _number(m["num"])
            scale = 0.001 if m["per"].lower().startswith("ms") else 1.0
            if value > 0:
                found.setdefault(m["per"].lower(), value * scale)
        elif _number(m["rnum"]) > 0:
            found.setdefault(m["rate"].lower(), 1 / _number(m["rnum"]))
            rates.add(m["rate"].lower())
    return [WorkFigure(name, seconds, name in rates) for name, seconds in found.items()]


_MEMBER = re.compile(
    r"\b(?P<kind>rank|worker|gpu|node|host|process_index|part|instance|pod|mpirank|algo|trainer"
    r"|ранг|rang)[\s_:=#-]*(?P<id>\d+)\b"
    r"|\b(?P<host>(?:gpu|node|host|worker|algo|dgx|compute)-[\w-]*\d[\w-]*)"
    r"|\bip=(?P<ip>\d+\.\d+\.\d+\.\d+)|^\s*(?P<srun>\d+):\s",
    re.IGNORECASE,
)


def member_of(body: str) -> str | None:
    """Return the member a line speaks for (`rank 3`, `worker-2`, `gpu-e019`, `ip=10.2.0.17`,
    srun's `2: `), or None."""
    m = _MEMBER.search(body)
    if m is None:
        return None
    if m["id"] is not None:
        return f"{m['kind'].lower()} {m['id']}"
    return m["host"] or m["ip"] or f"task {m['srun']}"
