"""Short reports written by reviewers who saw neither the rules nor the corpus
(tests/fixtures/explain_review/review17.json, review18.json, review19.json): people's words in
thirteen languages, monitors' alerts, tools' output, each labelled with the category a careful
on-call engineer would give it.

Review 17 (120 short reports of speed) was read 61/120 with the session's first rules; the
figure readers (diagnosis/explain/rules_figures.py, rules_member_figures.py) were written from
it. Review 18 (120 with figures) was written blind after them: 69/120 before any rule was
written for it. Review 19 (120 across eight categories) was written blind after review 18's
rules: 68/120 before any rule was written for it. Review 20 (100 across ten categories, on-call
forms) was written blind after review 19's rules: 64/100 before any rule was written for it.
What they still miss is listed with its reason (a family-wide choice for setups compared; a few
tool formats no reader has).

Labels: a category; `benign` must stay silent; `other` (two setups compared) must not be read
as a straggler.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/explain_review"
_SETUPS = "two setups compared, read as a slowdown"
KNOWN_LIMITS = {
    "r17-004": "a Megatron line quoted inside a sentence is read as one healthy iteration",
    "r17-006": "a power cap with the power draw low: the cap is normal alone (read: a slowdown)",
    "r17-024": f"{_SETUPS}: DDP against FSDP",
    "r17-026": f"{_SETUPS}: two PyTorch versions",
    "r17-028": f"{_SETUPS}: Docker against bare metal",
    "r17-047": "French `deux fois plus de temps ... que les autres`: a member's factor in words",
    "r17-082": f"{_SETUPS}: a cloud instance against a DGX",
    "r17-103": f"{_SETUPS}: Windows against Ubuntu",
    "r17-108": "two quoted MXNet lines split by an ellipsis: one figure a sentence",
    "r17-118": f"{_SETUPS}: two nodes against one, in Spanish",
    "r18-019": "members given as a range (`rank 0-6: 412ms/step, rank 7: 655ms/step`)",
    "r18-041": "`step_time_ms=` key-value lines: the generic step stream reads `step_time` only",
    "r18-046": f"{_SETUPS}: Slurm against Kubernetes",
    "r18-057": "an ETA on a clock (`03:12:00` then `07:40:00`) as progress grows",
    "r18-101": "a list of members' MFU with the member named once after it (`(node 4)`)",
    "r19-018": "an mlx5 link down and up a few times: a link down once or twice is a boot",
    "r19-037": "a job's elapsed time per night, one clock a line",
    "r19-055": "nccl-tests' busbw per host, one host a line",
    "r19-063": "a table of ranks with gaps in their numbers (`0 1 5 6`)",
    "r19-066": "two ranks' timer lines and a sentence saying the others match one of them",
    "r19-069": "Spanish `un 30% más en cada paso que el resto`: a member's percentage in words",
    "r19-075": "iostat's table: a write await of 862 ms on one device",
    "r19-088": "a Vietnamese report of packet loss",
    "r19-092": "the one rank that waits least in the barrier is the slow one",
    "r19-104": "a StatefulSet's pods, the slow one on its own line and the rest as a range",
    "r19-108": "dcgmi health's NVLink CRC errors past a threshold, wrapped over lines",
    "r19-115": "tokens per day, this week against last week (`35B ... vs 41B`)",
    "r20-003": "sar's EDEV table: receive errors per second on one interface",
    "r20-023": "a runbook's heading names Xid 79 (`fallen off the bus`): a heading says nothing of "
    "a condition, a symptom or a fix, so it is read as the event",
    "r20-016": "scontrol's RUNNING state and a dmesg clean: the stop is in the next lines' words",
    "r20-017": "French `le rang 14 arrive ... 200 ms après les autres`: a member's lag in words",
    "r20-026": "MFU below its SLO target: a target missed reads as setups compared",
    "r20-029": "CloudWatch's datapoints above a threshold",
    "r20-037": "kubectl logs of one worker: compute against wait, two lines",
    "r20-039": "py-spy's idle barrier and a last log line hours before: two times to subtract",
    "r20-041": "the one rank that waits least in NCCL is the slow one",
    "r20-043": "three `| s/it | tok/s |` step lines: too short a stream to call a trend",
    "r20-047": "LustreError `rc = -107` on an OST write (a lost connection)",
    "r20-050": "a Turkish report of a flapping InfiniBand port",
    "r20-051": "a per-rank table with ranges of ranks",
    "r20-064": "sacct's elapsed times of four runs, one a line",
    "r20-071": "Datadog's value below a threshold (`= 982 is below the threshold of 1200`)",
    "r20-081": "a chat: `used to finish in ~40 min ... it's 65`, the speed in another line",
    "r20-086": "an mlx5 link down and up a few times: a link down once or twice is a boot",
    "r20-088": "a burn-in's TFLOPS per node, one node a line",
    "r20-094": "dcgmi diag's memory test failed, in a wrapped table",
}
_OTHER = "other"


def _cases(label: str) -> list[dict[str, str]]:
    cases = []
    for name in ("review17", "review18", "review19", "review20"):
        review = json.loads((_FIXTURES / f"{name}.json").read_text())
        cases += [c for c in review if c["label"] == label]
    return cases


def _read(label: str) -> list[dict[str, str]]:
    return [c for c in _cases(label) if c["id"] not in KNOWN_LIMITS]


@pytest.mark.parametrize("case", _read("straggler"), ids=lambda c: c["id"])
def test_each_report_of_a_slowdown_is_a_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category.STRAGGLER, case["why"]


@pytest.mark.parametrize("case", _read("benign"), ids=lambda c: c["id"])
def test_each_look_alike_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


@pytest.mark.parametrize("case", _read(_OTHER), ids=lambda c: c["id"])
def test_two_setups_compared_are_no_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is None or found[0] != Category.STRAGGLER, case["why"]


@pytest.mark.parametrize(
    "case",
    [
        c
        for label in ("hang", "network", "host.storage", "gpu.degraded", "gpu.hardware")
        + ("numerical", "host.memory", "application")
        for c in _read(label)
    ],
    ids=lambda c: c["id"],
)
def test_each_report_of_another_category_is_read_as_it(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category(case["label"]), case["why"]


def test_the_known_limits_are_still_misses() -> None:
    """A reader that learns one moves it out of the list."""
    labels = ("straggler", "benign", _OTHER, "network", "gpu.degraded", "host.storage", "hang")
    labels += ("gpu.hardware", "application", "numerical", "host.memory")
    known = [c for label in labels for c in _cases(label) if c["id"] in KNOWN_LIMITS]
    assert len(known) == len(KNOWN_LIMITS)
    for case in known:
        found = first(case["text"])
        if case["label"] == _OTHER:
            assert found is not None and found[0] == Category.STRAGGLER, case["id"]
        elif case["label"] == "benign":
            assert alarms(case["text"]) != [], case["id"]
        else:
            assert found is None or found[0].value != case["label"], case["id"]
