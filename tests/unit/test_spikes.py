import math
from statistics import median

from diagnosis.spikes import spike_baseline

NAN = math.nan


def test_a_spike_is_at_least_factor_times_the_baseline_of_finite_values():
    recent = [2.0, NAN, 3.0, None, 4.0]
    assert spike_baseline(3.0, recent, 1.5, min) == 2.0
    assert spike_baseline(2.9, recent, 1.5, min) is None
    assert spike_baseline(15.0, recent, 5.0, median) == 3.0
    assert spike_baseline(14.9, recent, 5.0, median) is None


def test_no_spike_without_history_a_positive_baseline_or_a_finite_value():
    assert spike_baseline(100.0, [1.0] * 9, 5.0, median, min_history=10) is None
    assert spike_baseline(100.0, [1.0] * 10, 5.0, median, min_history=10) == 1.0
    assert spike_baseline(100.0, [], 1.5, min) is None
    assert spike_baseline(100.0, [0.0, 1.0], 1.5, min) is None
    assert spike_baseline(NAN, [1.0], 1.5, min) is None
    assert spike_baseline(None, [1.0], 1.5, min) is None
