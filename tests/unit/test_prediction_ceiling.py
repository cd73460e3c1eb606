"""Hindsight cuts of the recall-ceiling analysis."""

from __future__ import annotations

import numpy as np

from bench.prediction_ceiling import oracle_alerts


def test_oracle_takes_the_lowest_cut_that_still_reaches_the_precision():
    score = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    y = np.array([1, 1, 0, 1, 0, 0])
    # Top 2: 1.0; top 4: 0.75; top 3: 0.67. At 0.75 the lowest cut keeps four rows.
    assert oracle_alerts(score, y, 0.75).tolist() == [True] * 4 + [False] * 2
    assert oracle_alerts(score, y, 0.9).tolist() == [True] * 2 + [False] * 4


def test_oracle_stays_silent_when_no_cut_reaches_the_precision():
    score = np.array([0.9, 0.8, 0.7])
    y = np.array([0, 1, 0])
    assert not oracle_alerts(score, y, 0.9).any()


def test_oracle_alerts_tied_scores_together():
    score = np.array([0.9, 0.5, 0.5, 0.1])
    y = np.array([1, 1, 0, 0])
    # The tie at 0.5 brings precision to 0.67: only the top row passes 0.9.
    assert oracle_alerts(score, y, 0.9).tolist() == [True, False, False, False]
