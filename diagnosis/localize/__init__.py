"""Communication-graph localization: pure functions from a job's graph and progress to suspects."""

from diagnosis.localize.failslow import localize_change
from diagnosis.localize.hang import Stall, find_stalls, latest_records, localize_hang
from diagnosis.localize.network import localize_network
from diagnosis.localize.straggler import localize_straggler

__all__ = [
    "Stall",
    "find_stalls",
    "latest_records",
    "localize_change",
    "localize_hang",
    "localize_network",
    "localize_straggler",
]
