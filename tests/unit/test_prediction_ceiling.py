"""Hindsight cuts of the recall-ceiling analysis."""

from __future__ import annotations

import numpy as np
import pytest

from bench.prediction_ceiling import onset_oracle, oracle_alerts, twin_precursor_share


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


def test_onset_oracle_is_exact_once_every_precursor_is_a_horizon_old():
    h = 3600.0
    rules = {r["alert_from_age_h"]: r for r in onset_oracle((24 * h, 48 * h), 24 * h, 1.0)}
    assert rules[24.0]["precision"] == 1.0  # 24 h into a precursor of <= 48 h: fails within 24 h
    assert rules[0.0]["failure_recall"] == 1.0 and rules[0.0]["precision"] < 0.8
    precisions = [r["precision"] for r in rules.values()]
    assert precisions == sorted(precisions)  # older precursors are surer
    silent = onset_oracle((24 * h, 48 * h), 24 * h, 0.5)
    assert silent[0]["failure_recall"] == 0.5  # silent failures are never caught


def test_twin_precursor_share_counts_only_kinds_with_a_precursor_style():
    assert twin_precursor_share() == pytest.approx(0.7 * (148 + 91) / (148 + 91 + 17))
