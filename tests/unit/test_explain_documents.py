"""A line that describes a message (a runbook's condition, a symptom, a changelog's fix, a
question of its meaning) is no event (diagnosis/explain/documents.py); a person's report that
quotes the error they got, a log line, and any line that says the event is live, still are."""

from __future__ import annotations

import pytest

from diagnosis.explain.documents import describes_a_message
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
    assert describes_a_message(line)
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
    assert not describes_a_message(line)


def test_a_runbooks_quote_does_not_hide_the_log_pasted_under_it() -> None:
    text = (
        'Runbook EFA-3: if NCCL prints "couldn\'t get EFA as provider", check the device.\n'
        "Here is what we got tonight:\n"
        "NCCL WARN NET/OFI Couldn't find any optimal provider"
    )
    assert alarms(text) == ["nic.efa_provider_missing"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        # a document's name opens the line, but the event is live (review34)
        (
            "- Fixed: drained gpu-b07 at 14:20; but gpu-b09 is now logging 'NVRM: Xid "
            "(PCI:0000:ca:00): 79, pid=2231, GPU has fallen off the bus.' since 14:35",
            "gpu.xid",
        ),
        (
            'FAQ #4 (recreate the pod) did not help, rank 5 still dies with "NCCL WARN NET/IB : '
            "Got completion from peer 10.0.3.14<50213> with status=12 opcode=0 len=0 vendor err "
            '129 (Recv)" after ~20 min.',
            "nccl.ib_completion_error",
        ),
    ],
)
def test_a_live_event_in_a_documents_words_is_read(text: str, rule: str) -> None:
    assert alarms(text)[:1] == [rule], text
