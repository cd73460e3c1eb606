"""Classes of the thirty-sixth round's development misses (fresh_46*), each read as a class:
collectives that do not match across ranks, Open MPI's crash handler, an EIO the RDMA stack
returns, one member against one named peer or called the bottleneck, a slowdown told by a
factor, and a rate quoted `a second` that falls `down to` a bare figure."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("fresh_46b", "0005"),
        corpus_text("fresh_46b", "0006"),
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
        "collective: CollectiveFingerPrint(OpType=ALLREDUCE), but Rank 1 is running collective: "
        "CollectiveFingerPrint(OpType=BROADCAST).",
    ],
)
def test_collectives_that_do_not_match_across_ranks_are_the_program_s_bug(text: str) -> None:
    assert first(text)[:2] == (Category.APPLICATION, "dist.collective_mismatch")


def test_open_mpi_s_crash_handler_alone_is_a_crash_and_its_signal_line_wins() -> None:
    assert first(corpus_text("fresh_46b", "0001"))[:2] == (
        Category.APPLICATION,
        "process.crash_signal",
    )
    named = "[n1:4051] *** Process received signal ***\n[n1:4051] Signal: Bus error (7)"
    assert first(named)[1] == "process.sigbus"


def test_an_eio_of_the_rdma_stack_is_no_disk_error() -> None:
    assert first(corpus_text("fresh_46b", "0014"))[0] == Category.NETWORK
    disk = "OSError: [Errno 5] Input/output error: '/data/shard-0007.bin'"
    assert first(disk)[:2] == (Category.HOST_STORAGE, "host.io_error")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (corpus_text("fresh_46", "0019"), "straggler.member_against_a_peer"),
        ("GPU 3 took 950 ms vs GPU 2 at 410 ms", "straggler.member_against_a_peer"),
        ("node 3 does 120 samples/s vs node 1 300 samples/s", "straggler.member_against_a_peer"),
        (corpus_text("fresh_46", "0015"), "straggler.member_is_the_bottleneck"),
        (
            "GPU 2 (the one on riser 4) is clearly the bottleneck",
            "straggler.member_is_the_bottleneck",
        ),
    ],
)
def test_one_member_named_behind_a_peer_or_as_the_bottleneck_is_a_straggler(
    text: str, rule: str
) -> None:
    assert first(text)[:2] == (Category.STRAGGLER, rule)


@pytest.mark.parametrize(
    "text",
    [
        "rank 1 at 410 ms vs rank 2 at 400 ms",  # within a peer's jitter
        "GPU 0 at 300 ms vs GPU 1 at 600 ms",  # the named member is the faster one
        "rank 3 is not the bottleneck",
        "the data loader is the bottleneck",
    ],
)
def test_a_near_peer_a_faster_member_or_no_member_is_silent(text: str) -> None:
    assert alarms(text) == []


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("fresh_46", "0018"),
        corpus_text("fresh_46", "0017"),
        "throughput dropped by 2x after the update",
        "throughput going from 300 samples a second down to 30",
    ],
)
def test_a_slowdown_told_by_a_factor_or_down_to_a_bare_figure_is_read(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER


@pytest.mark.parametrize(
    "text",
    [
        "there was no 3x increase in step time",
        "speed decreased by 1.2 times",  # under the factor
        "Enabling activation checkpointing gives a 1.6x increase in step time",  # a trade-off
        "I get 300 samples/s and batch size down to 16.",  # another quantity falls
        "scaled down to 4 GPUs at 300 samples/s",
    ],
)
def test_a_denied_small_or_explained_factor_and_other_quantities_are_silent(text: str) -> None:
    assert alarms(text) == []


def test_an_indented_exception_line_ends_a_pasted_traceback() -> None:
    frames = (
        "    Traceback (most recent call last):\n"
        '      File "train.py", line 88, in <module>\n'
        "        dist.barrier()\n"
    )
    found = first(frames + "    RuntimeError: Detected mismatch between collectives on ranks.")
    assert found is not None and found[1] == "dist.collective_mismatch"
    # a frame's source line that names an exception is still the frame's
    assert first(frames + "        raise RuntimeError(msg)\n") is None
