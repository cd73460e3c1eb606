"""Failure prediction: features, labels, models, walk-forward evaluation, risk and alerts."""
