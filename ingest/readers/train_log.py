"""Training-log step lines of Megatron-LM, DeepSpeed and torchtitan -> TrainStep.

Formats, as the projects print them (sources cited in tests/fixtures/train_log_lines.txt):

- Megatron-LM ``training_log`` (megatron/training/training.py): `` [YYYY-mm-dd HH:MM:SS]
  iteration {:8d}/{:8d} | consumed samples: ... | elapsed time per iteration (ms): ... |
  throughput per GPU (TFLOP/s/GPU): ... | learning rate: ... | ... | lm loss: ... | loss scale:
  ... | grad norm: ... | number of skipped iterations: ... |`` (see sim/formats/training.py).
  Megatron-DeepSpeed (BLOOM) prints ``elapsed time per iteration (s)``, ``consumed tokens``,
  ``samples per second`` and ``TFLOPs``; Megatron-DeepSpeed's GPT example ``samples/sec`` and
  ``approx flops per GPU: 112.9TFLOPS``. Long lines wrapped by a terminal are joined.
- DeepSpeed's engine (``log_dist``): ``[Rank 0] step=40, skipped=2, lr=[5e-05], mom=[...]``
  every ``steps_per_print``; ``skipped`` is cumulative, so a step is skipped when it grew.
- torchtitan's MetricsProcessor: ``step: 14  loss:  3.24405  grad_norm:  0.8319  memory:
  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%`` (older: ``wps:``, no grad_norm),
  behind ``[titan] 2026-05-18 16:04:46,338 - root - INFO - `` and torchrun's ``[rank0]:``.

Throughput is what the line reports: torchtitan's ``tps`` is tokens/s per device; Megatron
lines give tokens/s only as samples/s x (consumed tokens / consumed samples).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from ingest.schema import TrainStep

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LAUNCHER_PREFIX = re.compile(r"^\s*(?:\[(?:default|rank)\d+\]:\s?)+")
NUMBER = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
MEGATRON_TS = re.compile(r"^\s*\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]")
DEEPSPEED = re.compile(r"\[Rank \d+\] step=(\d+), skipped=(\d+), lr=\[([^\],]+)")
LOGGER_TS = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
TITAN = re.compile(rf"\bstep:\s*(\d+)\s+loss:\s*({NUMBER})(?P<rest>.*)$", re.IGNORECASE)
TITAN_FIELD = re.compile(rf"(grad_norm|tps|wps|tflops|mfu):\s*({NUMBER})%?")


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _field(fields: dict[str, str], key: str, suffix: str = "") -> float | None:
    """Return the number printed under `key`, or None when absent or not a number."""
    if key not in fields:
        return None
    try:
        return _num(fields[key].removesuffix(suffix))
    except ValueError:
        return None


def _logger_ts(line: str) -> datetime | None:
    m = LOGGER_TS.search(line)
    if m is None:
        return None
    base = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
    return base.replace(microsecond=int(m.group(2)) * 1000, tzinfo=UTC)


@dataclass
class StepLine:
    """The values one step line prints (None: not printed, or not a number)."""

    step: int
    ts: datetime | None
    loss: float | None = None
    grad_norm: float | None = None
    tokens_per_s: float | None = None
    tflops: float | None = None
    mfu: float | None = None
    step_time_s: float | None = None
    lr: float | None = None
    loss_scale: float | None = None
    skipped: bool = False
    skipped_iterations: int = 0  # Megatron's count of skipped steps in the logging interval
    nan_iterations: int = 0  # Megatron's count of NaN steps in the logging interval


def _megatron_fields(text: str) -> dict[str, str]:
    out = {}
    for part in text.split("|"):
        key, sep, value = part.rpartition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _count(fields: dict[str, str], key: str) -> int:
    """A count field's value; 0 where it is absent or no finite number (a mangled `INF`)."""
    value = _field(fields, key)
    return int(value) if value is not None and math.isfinite(value) else 0


def parse_megatron(text: str) -> StepLine | None:
    """Parse one (joined) Megatron iteration line: the one parser of this format.

    `diagnosis.explain.training` judges the same values; a field that is not a number is
    left out (None), never an error.
    """
    m = MEGATRON.search(text)
    if m is None:
        return None
    ts_m = MEGATRON_TS.search(text)
    ts = datetime.strptime(ts_m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) if ts_m else None
    f = _megatron_fields(text[m.end() :])
    p = StepLine(step=int(m.group(1)), ts=ts)
    losses = [k for k in f if k.endswith("loss") and k != "loss scale"]
    p.loss = _field(f, losses[0]) if losses else None
    p.grad_norm = _field(f, "grad norm")
    p.lr = _field(f, "learning rate")
    p.loss_scale = _field(f, "loss scale")
    ms = _field(f, "elapsed time per iteration (ms)")
    p.step_time_s = ms / 1000 if ms is not None else _field(f, "elapsed time per iteration (s)")
    p.skipped_iterations = _count(f, "number of skipped iterations")
    p.nan_iterations = _count(f, "number of nan iterations")
    p.skipped = p.skipped_iterations > 0
    for key in ("throughput per GPU (TFLOP/s/GPU)", "TFLOPs", "approx flops per GPU"):
        if key in f:
            p.tflops = _field(f, key, "TFLOPS")
    samples_s = _field(f, "samples per second")
    tokens, samples = _field(f, "consumed tokens"), _field(f, "consumed samples")
    if samples_s is not None and tokens is not None and samples is not None:
        p.tokens_per_s = samples_s * tokens / max(samples, 1.0)
    return p


def parse_titan(text: str) -> StepLine | None:
    """Parse one torchtitan metrics line."""
    m = TITAN.search(text)
    if m is None or "memory:" not in m.group("rest"):
        return None
    p = StepLine(step=int(m.group(1)), ts=_logger_ts(text), loss=_num(m.group(2)))
    for key, value in TITAN_FIELD.findall(m.group("rest")):
        if key == "grad_norm":
            p.grad_norm = _num(value)
        elif key in ("tps", "wps"):
            p.tokens_per_s = _num(value)
        elif key == "tflops":
            p.tflops = _num(value)
        else:
            p.mfu = _num(value) / 100
    return p


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


class TrainLogParser:
    """Stateful parser of one job's training log (one rank's stdout, usually rank 0's)."""

    def __init__(
        self,
        job_id: str,
        node: str | None = None,
        rank: int | None = None,
        peak_tflops: float | None = None,
    ) -> None:
        self.job_id = job_id
        self.node = node
        self.rank = rank
        self.peak_tflops = peak_tflops
        self._ds_skipped: int | None = None
        self._last: tuple[int, datetime] | None = None
        self._pending = ""

    def feed(self, line: str, ts: datetime | None = None) -> TrainStep | None:
        """Take one line (a wrapped Megatron line is held until it ends); return its step."""
        text = LAUNCHER_PREFIX.sub("", ANSI.sub("", line.rstrip("\r\n")))
        if self._pending:
            glue = "" if text[:1].isspace() else " "
            text = self._pending + glue + text
            self._pending = ""
        if MEGATRON.search(text) and not text.rstrip().endswith("|"):
            self._pending = text
            return None
        parsed = parse_megatron(text) or parse_titan(text) or self._deepspeed(text)
        return None if parsed is None else self._event(parsed, ts)

    def feed_lines(self, lines: Iterable[str], ts: datetime | None = None) -> Iterator[TrainStep]:
        """Yield the steps of many lines."""
        for line in lines:
            step = self.feed(line, ts)
            if step is not None:
                yield step

    def _deepspeed(self, text: str) -> StepLine | None:
        m = DEEPSPEED.search(text)
        if m is None:
            return None
        skipped = int(m.group(2))
        grew = self._ds_skipped is not None and skipped > self._ds_skipped
        self._ds_skipped = skipped
        return StepLine(
            step=int(m.group(1)), ts=_logger_ts(text), lr=_num(m.group(3)), skipped=grew
        )

    def _event(self, p: StepLine, fallback: datetime | None) -> TrainStep | None:
        ts = p.ts or fallback or datetime.now(UTC)
        if p.step_time_s is None and self._last is not None and p.ts is not None:
            last_step, last_ts = self._last
            if p.step > last_step and ts > last_ts:
                p.step_time_s = (ts - last_ts).total_seconds() / (p.step - last_step)
        if p.ts is not None:
            self._last = (p.step, ts)
        mfu = p.mfu
        if mfu is None and p.tflops is not None and self.peak_tflops:
            mfu = p.tflops / self.peak_tflops
        return TrainStep(
            ts=ts,
            job_id=self.job_id,
            step=p.step,
            rank=self.rank,
            node=self.node,
            loss=p.loss,
            grad_norm=p.grad_norm,
            tokens_per_s=_finite(p.tokens_per_s),
            mfu=mfu,
            step_time_s=p.step_time_s,
            lr=p.lr,
            loss_scale=p.loss_scale,
            skipped=p.skipped,
        )
