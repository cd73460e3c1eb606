"""Classes added after the thirty-third corpus round (issue 21), written from its development
records (tests/fixtures/explain/corpus/fresh_43*.jsonl): a kernel BUG() and its invalid-opcode
trap, a double fault's panic, an NVMe drive's PCI lines when it falls off its link, an XFS
internal error, several Xids said together (the one that says most), a fatal GPU loss in words.

The positive texts are records of the development part of the corpus, read by id (the comment
names the source). The negative controls are lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_b = partial(corpus_text, "fresh_43b")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (_b("0000"), Category.HOST_HARDWARE),  # Ask Fedora: kernel BUG at lib/list_debug.c
        (_b("0004"), Category.HOST_STORAGE),  # NVMe: Failed status: ffffffff, reset controller
        (_b("0005"), Category.HOST_STORAGE),  # XFS: Internal error xfs_bmbt_read_verify
        (_b("0015"), Category.HOST_HARDWARE),  # LKML: PANIC: double fault
        (_b("0016"), Category.GPU_HARDWARE),  # NVIDIA forum: XID 137 then XID 94
        (_b("0017"), Category.GPU_HARDWARE),  # NVIDIA forum: fatal GPU loss after GC6 exit
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


@pytest.mark.parametrize(
    "text",
    [
        "The BUG tracker at bugs.example.org lists this as fixed in 6.2.",
        "nvme 0000:01:00.0: enabling device (0000 -> 0002)",
        "We measured the fatal GPU loss rate for the paper: 0.3% per 1000 GPU-hours in 2025.",
    ],
)
def test_the_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == []
