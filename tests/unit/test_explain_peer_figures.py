"""Members' figures compared: a member against its peers' median in a sentence, the ranks of
Open MPI's tagged output as members, and a progress line's padding no new stream."""

from __future__ import annotations

import pytest

from diagnosis.explain.peers import step_rate_of
from diagnosis.explain.records import records
from diagnosis.model import Category
from tests.explain_helpers import alarms, first


@pytest.mark.parametrize(
    "text",
    [
        "Rank r5 backward was 412.0ms vs median rank r2 at 205.3ms.",
        "GPU 3 step time 1.9 s versus the median of 0.8 s over the other GPUs",
        "node 12 ran at 310 samples/s compared to the average 505 samples/s",
    ],
)
def test_a_member_far_off_its_peers_median_is_a_straggler(text: str) -> None:
    found = first(text)
    assert found is not None
    assert found[:2] == (Category.STRAGGLER, "straggler.member_against_the_median")


@pytest.mark.parametrize(
    "text",
    [
        "Rank r5 backward was 212.0ms vs median rank r2 at 205.3ms.",  # within the gap
        "node 12 ran at 560 samples/s compared to the average 505 samples/s",  # faster
        "GPU 3 step time 1.9 s versus 0.8 s last week",  # no median of peers
    ],
)
def test_a_member_near_or_above_its_peers_median_is_silent(text: str) -> None:
    assert alarms(text) == []


def test_open_mpi_tagged_output_names_each_line_s_rank() -> None:
    recs = list(records("[1,12]<stderr>: step 10 time = 1.2s\n[1,3]<stdout>:step 10 time = 1.1s"))
    assert [(r.rank, r.body) for r in recs] == [
        (12, "step 10 time = 1.2s"),
        (3, "step 10 time = 1.1s"),
    ]


def test_one_rank_of_tagged_output_slower_than_the_rest_is_a_straggler() -> None:
    times = {0: 52.1, 1: 53.0, 2: 84.7, 3: 52.8, 4: 51.9, 5: 53.4}
    text = "\n".join(
        f"[1,{rank}]<stderr>: Epoch[ 1 of 50]-Minibatch[{7000 + rank}01-{7000 + rank + 1}00]: "
        f"ce = 4.41 * 4929; time = {t}s; samplesPerSecond = {4929 / t:.1f}"
        for rank, t in times.items()
    )
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER
    even = text.replace("84.7s", "53.1s").replace(f"{4929 / 84.7:.1f}", f"{4929 / 53.1:.1f}")
    assert alarms(even) == []


def test_a_column_padded_for_a_wider_step_count_is_the_same_stream() -> None:
    narrow = step_rate_of("INFO:root:Epoch[6] Batch [420]  Speed: 490.41 samples/sec")
    wide = step_rate_of("INFO:root:Epoch[47] Batch [4800] Speed: 328.83 samples/sec")
    assert narrow is not None and wide is not None
    assert narrow.shape == wide.shape


def _detector(slowest_ms: list[float]) -> str:
    return "\n".join(
        f" 0: INFO:megatron.core.utils:[2024-09-18 0{n}:41:07] | MnRtt/Rnk: 3451.12ms/8 | "
        f"MxRtt/Rnk: {ms:.2f}ms/37 | MnEtpt/Rnk: 172.86TF/37 | MxEtpt/Rnk: 297.40TF/8"
        for n, ms in enumerate(slowest_ms)
    )


def test_megatron_s_detector_spread_in_its_last_interval_is_a_straggler() -> None:
    found = first(_detector([3466.4, 3466.1, 5912.6]))
    assert found is not None and found[:2] == (Category.STRAGGLER, "straggler.megatron_minmax")
    # calm intervals after it: a warm-up or a checkpoint
    assert alarms(_detector([5912.6, 3466.4, 3466.1])) == []
    assert alarms(_detector([3466.4, 5912.6, 3466.1])) == []


ETH = "rig1 start.sh[1373]: ETH: " + ", ".join(f"GPU{n} {{g{n}}} Mh/s" for n in range(6))


def _eth(*rates: float) -> str:
    return ETH.format(**{f"g{n}": rate for n, rate in enumerate(rates)})


def test_one_card_behind_identical_peers_in_every_report_is_a_straggler() -> None:
    first_report = _eth(22.71, 19.54, 22.78, 22.70, 22.76, 22.59)
    text = "\n".join([first_report, _eth(22.69, 19.58, 22.75, 22.75, 22.79, 22.6)])
    assert alarms(text) == ["peers.steady_slow_device"]


@pytest.mark.parametrize(
    "reports",
    [
        # one report only: a moment's jitter
        [(22.71, 19.54, 22.78, 22.70, 22.76, 22.59)],
        # another card behind each time
        [(22.71, 19.54, 22.78, 22.70, 22.76, 22.59), (22.71, 22.54, 19.78, 22.70, 22.76, 22.59)],
        # peers that do not agree: mixed cards, no identical peers to fall behind
        [(22.71, 19.54, 25.78, 21.0, 22.76, 24.59), (22.71, 19.54, 25.78, 21.0, 22.76, 24.59)],
        # behind by less than the steady gap
        [(22.71, 21.54, 22.78, 22.70, 22.76, 22.59), (22.71, 21.54, 22.78, 22.70, 22.76, 22.59)],
    ],
)
def test_a_card_not_steadily_behind_identical_peers_is_silent(
    reports: list[tuple[float, ...]],
) -> None:
    assert alarms("\n".join(_eth(*rates) for rates in reports)) == []
