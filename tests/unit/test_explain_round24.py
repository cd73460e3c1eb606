"""Classes added in the twenty-fourth corpus round (issue 21): md's failure line in older
kernels' wording (``raid1: Disk failure on sdb1, disabling device.``), ParaStation MPI's verbs
errors, a rate's fall judged by the figures of its own clause (``goes down (from 43 to 17) and
won't go back to 43``), and a ``time:51.8`` progress field without a space.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_34.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.progress import step_seconds
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_34")

OLD_RAID1 = _real("0005")  # a blog: raid1: Disk failure on sdb1, disabling device.
PSCOM = _real(
    "0006"
)  # FESOM2 on Juwels: PSP ... ibv_poll_cq(): Infiniband returned the wrong Opcode
WONT_GO_BACK = _real("0013")  # nanominer: 43 MH/s down to 17 and won't go back to 43


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (OLD_RAID1, Category.HOST_STORAGE),
        (PSCOM, Category.NETWORK),
        (WONT_GO_BACK, Category.STRAGGLER),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


def test_a_bare_time_field_needs_the_fields_frameworks_print_with_it() -> None:
    # BasicSR's `time:84.443` carries no `eta` or `data_time`: a loop's own clock looks the
    # same (`[step 100] loss: 2.9 | time: 42.00`), so it is not read as a step time
    line = "21-08-10 11:33:07.015 - INFO: <epoch:193, iter: 505,200, lr:5.000e-05, , time:84.443>"
    assert step_seconds(line) is None
    with_eta = line.replace(", , time", ", eta: 2:00:00, time")
    figure = step_seconds(with_eta)
    assert figure is not None and figure.seconds == pytest.approx(84.443)


@pytest.mark.parametrize(
    "text",
    [
        WONT_GO_BACK.replace("from about 43mhs to 17mhs", "from about 43mhs to 42mhs"),
        "md: md0: resync done.\nraid1: raid set md0 active with 2 out of 2 mirrors",
        "<PSP:r0000359:pscom version 5.4.7 started, plugins: openib, psm2>",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
