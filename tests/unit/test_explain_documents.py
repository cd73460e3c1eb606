"""A document's line that quotes a message is no event (diagnosis/explain/documents.py); a
person's report that quotes the error they got, or a log line, still is."""

from __future__ import annotations

import pytest

from diagnosis.explain.documents import quotes_in_document
from tests.explain_helpers import alarms


@pytest.mark.parametrize(
    "line",
    [
        'Runbook EFA-3: if NCCL prints "couldn\'t get EFA as provider", add the device',
        "KB-2231 (docs): Symptom - dmesg shows 'XFS: Internal error XFS_WANT_CORRUPTED_RETURN at "
        "line 342 of file fs/xfs/xfs_alloc.c'.",
        'FAQ: What does "error polling LP CQ with -2 errno says Success" mean?',
        'UCX 1.15.0 changelog: Fixed spurious "UCX ERROR IB Async event on mlx5_0:1: port error"',
        "dcgm-exporter README: if the exporter logs 'Error connecting to nv-hostengine', start it",
        '- Fixed: the reader no longer aborts on a "Stale File Handle" after a remount.',
        "commit 1a2b3c4d: xfs: stop printing 'XFS (sda): xfs_log_force: error -5 returned.'",
        "Review comment: the check at prov/efa/src/efa_device.c:120 looks fine to me.",
    ],
)
def test_a_documents_quote_is_no_event(line: str) -> None:
    assert quotes_in_document(line)
    assert alarms(line) == [], line


@pytest.mark.parametrize(
    "line",
    [
        # a person quoting the error they got; a log line; a document marker not at the start
        'Since this morning I get "NCCL error: unhandled system error" on every launch.',
        "[ 4121.3] XFS (sda1): xfs_log_force: error -5 returned.",
        "Runbook says nothing about this: UCX ERROR Endpoint timeout on mlx5_0:1",
        'kernel: pcieport 0000:00:01.0: AER: see the readme "Uncorrected (Fatal) error received"',
    ],
)
def test_a_report_or_a_log_line_is_no_document(line: str) -> None:
    assert not quotes_in_document(line)


def test_a_runbooks_quote_does_not_hide_the_log_pasted_under_it() -> None:
    text = (
        'Runbook EFA-3: if NCCL prints "couldn\'t get EFA as provider", check the device.\n'
        "Here is what we got tonight:\n"
        "NCCL WARN NET/OFI Couldn't find any optimal provider"
    )
    assert alarms(text) == ["nic.efa_provider_missing"]
