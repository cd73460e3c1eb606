"""Streaming implicit detectors: per-job symptoms read from step and collective progress."""

from diagnosis.detectors.base import Detector
from diagnosis.detectors.failslow import FailSlowConfig, FailSlowDetector
from diagnosis.detectors.hang import HangConfig, HangDetector
from diagnosis.detectors.numerical import NumericalConfig, NumericalDetector
from diagnosis.detectors.trend import MfuDetector, StragglerDetector, TrendConfig

__all__ = [
    "Detector",
    "FailSlowConfig",
    "FailSlowDetector",
    "HangConfig",
    "HangDetector",
    "MfuDetector",
    "NumericalConfig",
    "NumericalDetector",
    "StragglerDetector",
    "TrendConfig",
]
