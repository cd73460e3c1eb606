"""The one spike rule for a training value (loss, grad norm): far above its recent past.

A value spikes when it is at least ``factor`` times a baseline of the recent finite values
(their lowest or their median), given at least ``min_history`` of them and a baseline above
zero. Two places judge spikes, each with its own thresholds, passed in as parameters:

- the log explainer (`diagnosis.explain.training`) sees a pasted excerpt, often a few
  Megatron iteration lines: the lowest of the last ``WINDOW`` lines, from one line on, loss
  ``SPIKE_LOSS_RATIO`` (1.5) and grad norm ``SPIKE_GRAD_RATIO`` (10) times it;
- the numerical detector (`diagnosis.detectors.numerical`) sees a job's whole step stream:
  the median of the last ``history`` values that were not spikes, once ``min_history`` (10)
  are known, ``spike_factor`` (5) times it for both.

The thresholds stay two named sets because one set would change measured figures: the
detector's in the explainer miss the real BLOOM loss-spike excerpt (two iterations before its
spike; bench.explain dev accuracy 0.9916 -> 0.9895) and a 2.5x loss jump over four lines;
the explainer's in the detector miss a 3x grad-norm burst in a long stream.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence


def spike_baseline(
    value: float | None,
    recent: Iterable[float | None],
    factor: float,
    baseline: Callable[[Sequence[float]], float],
    min_history: int = 1,
) -> float | None:
    """Return the baseline `value` is at least `factor` times, or None when it is no spike.

    Only finite values count, in `recent` and for `value`; fewer than `min_history` of them,
    or a baseline of zero or less, is no spike.
    """
    if value is None or not math.isfinite(value):
        return None
    finite = [v for v in recent if v is not None and math.isfinite(v)]
    if not finite or len(finite) < min_history:
        return None
    base = baseline(finite)
    return base if base > 0 and value >= factor * base else None
