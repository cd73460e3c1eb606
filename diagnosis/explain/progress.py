"""Training frameworks' progress lines: each step's time, read from the field that carries it.

Frameworks print their progress every N steps in their own words; the fields that carry a step's
duration or its throughput were read from their sources (mmcv, mmengine, detectron2,
torchvision's MetricLogger, timm, PaddlePaddle, NeMo, Keras, DeepSpeed, fairseq, torchtitan,
OpenNMT, TensorFlow's hooks, Horovod's and tf_cnn_benchmarks' benchmarks). ``step_seconds``
returns one figure per line, as seconds per step: a throughput is read as its inverse (only its
changes matter to the slowdown check), a unit is honoured (Keras' ``ms/step``, ``us/step``).

Guarantees: the fields that are not a step's time are never read: an ETA (``eta: 1 day,
3:17:40``), a loader's wait inside the step (``data_time:``, ``Data:``), a cumulative clock
(fairseq's ``wall=``, OpenNMT's trailing ``N sec``); running or window means are read as they
are (they rise less than the steps but never without them). Each line's stream is told apart by
its words (``progress_stream``), so a validation loop's faster lines do not become a training
loop's history.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_NUM = r"\d+(?:\.\d+)?"
_FIELDS = re.compile(
    # seconds per step: mm*/detectron2/torchvision `time: 0.853`, timm `Time: 0.416s,`,
    # Paddle `batch_cost: 0.52`, NeMo `train_step_timing in s=0.41`, Keras `- 150ms/step`
    rf"(?<![\w.])time: ?(?P<time>\d+\.\d+)\b(?!\s*\()"
    rf"|\bTime: (?P<timm>{_NUM})s,"
    rf"|\b(?:avg_)?batch_cost: (?P<paddle>{_NUM})"
    rf"|\btrain_step_timing(?: in s)?[=:] ?(?P<nemo>{_NUM})"
    rf"|\s(?P<keras>{_NUM})(?P<keras_unit>us|ms|s)/step\b"
    # throughputs: DeepSpeed, fairseq, torchtitan, OpenNMT, Paddle, TF hooks, Horovod and
    # tf_cnn_benchmarks
    rf"|\bCurrSamplesPerSec=(?P<deepspeed>{_NUM})"
    rf"|\bwps=(?P<fairseq>{_NUM})"
    r"|\btps: (?P<titan>\d{1,3}(?:,\d{3})+|\d+)"
    rf"|;\s+(?P<onmt>\d+)/\s*\d+ tok/s;"
    rf"|\bips: (?P<ips>{_NUM})"
    rf"|\bglobal_step/sec: (?P<tf>{_NUM})"
    rf"|\b(?P<horovod>{_NUM}) img/sec per GPU"
    rf"|\bimages/sec: (?P<tfcnn>{_NUM}) \+/-"
)
_RATES = ("deepspeed", "fairseq", "titan", "onmt", "ips", "tf", "horovod", "tfcnn")
_KERAS_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_NEEDLES = (
    "time",
    "Time",
    "timing",
    "batch_cost",
    "/step",
    "PerSec",
    "wps=",
    "tps:",
    "tok/s",
    "ips:",
)
_WORD = re.compile(r"[A-Za-z_]{2,}")


class StepFigure(NamedTuple):
    """One progress line's step time: which field it came from, and seconds per step."""

    field: str
    seconds: float


def step_seconds(body: str) -> StepFigure | None:
    """Return the step time a progress line reports (a throughput as its inverse), or None."""
    if not any(needle in body for needle in _NEEDLES) and "sec" not in body:
        return None
    m = _FIELDS.search(body)
    if m is None or m.lastgroup is None:
        return None
    field = "keras" if m["keras"] is not None else m.lastgroup
    value = float(m[field].replace(",", ""))
    if value <= 0:
        return None
    if field in _RATES:
        return StepFigure(field, 1 / value)
    if field == "keras":
        return StepFigure(field, value * _KERAS_UNIT[m["keras_unit"]])
    return StepFigure(field, value)


def progress_stream(body: str, field: str) -> str:
    """Return the key of the stream a progress line belongs to: its field and its words (a
    validation loop prints other words than the training loop it interrupts)."""
    return field + ":" + " ".join(sorted(set(_WORD.findall(body))))
