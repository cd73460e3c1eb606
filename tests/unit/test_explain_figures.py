"""Speed figures compared in a sentence, a stop told in words, a throttled GPU quoted in prose
(diagnosis/explain/rules_figures.py, rules_stalled.py; rules_gpu's clock reasons).

Written from the shapes review 17 showed (tests/fixtures/explain_review/review17.json), each
with the look-alikes that must stay silent: a speed-up, setups compared, a period that is no
step time, counts and ids that are no figures, a figure that stays, a stop on purpose.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.rules_figures import speed_figures
from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

SLOWED = [
    # a time per step that rose, with or without its unit on every figure
    "our 256-gpu run went from 11.2s/step to 14.9s/step around 3am and hasn't come back",
    "step time creeps up from 1.2 s to 3.4 s over ~6 hours, nothing changed in the config",
    "s/it grows roughly linearly, 1.3 at start -> 5.0 by step 3000",
    "mmdet log: 'time' goes 0.412 -> 0.897 between epoch 4 and epoch 6 and stays ~0.9",
    "Monitor triggered: step_time_ms > 1.5x baseline (current 2210ms, baseline 1390ms)",
    # a rate that fell, with a thousand suffix, a chain, a bare figure after a named one
    "[Bug] tokens/s after resuming: ~5.1k tok/s/gpu before, ~2.4k after resuming at step 12000",
    "tokens/s/gpu 3900 -> 2700 since step 41k, same allocation, same image",
    "samples/s curve is a staircase going down: 1100 -> 950 -> 800 -> 700",
    "FSDP: TFLOPs/GPU ~180 for the first 3k steps, then ~120 until the end.",
    "MFU went 45% -> 28% in the middle of the run and stayed there.",
    # other languages
    "32 卡任务从昨天下午开始每步从 4.1s 变成 6.8s，一直没恢复",
    "MFU fällt nach ca. 10k Schritten von 52 % auf 31 % und bleibt dort.",
    "Il throughput scende da 1800 img/s a 900 img/s dopo un paio d'ore e resta lì.",
    "Tốc độ train giảm dần, từ 3.1 it/s xuống còn 0.9 it/s sau khoảng 2000 step.",
    "Kecepatan training makin lambat, awalnya 1.1 s/it sekarang 4 s/it setelah 3 jam.",
    "처음에는 에폭당 20분이었는데 10에폭 이후로는 50분씩 걸려요",
    # in words: halved, a percentage, an ETA
    "steps/sec halves after the first hour on the same TPU slice",
    "tps dropped 18% at step ~9000 and stayed there",
    "ETA keeps growing: it said 14 hours at the start",
]


@pytest.mark.parametrize("text", SLOWED)
def test_a_speed_that_changed_for_the_worse_is_a_slowdown(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == C.STRAGGLER, text


SILENT = [
    "went from 14.9s/step to 11.2s/step after the fix",  # a speed-up
    "tokens/s/gpu 2700 -> 3900 since the new kernel",  # a rate that rose
    "Step time by batch size: bs32 -> 0.8 s/it, bs64 -> 1.5 s/it, bs128 -> 2.9 s/it",
    "A100 is 1.9 s/step vs 0.8 s/step on H100",  # hardware compared
    "Throughput recovered to 2000 samples/s from 300 samples/s after the fix.",
    "It takes 20 minutes instead of 2 hours now, great.",
    "the hashrate went from 950 kH/s to 1.2 MH/s.",  # prefixes: a rise
    "step time 1.2 s, then 1.21 s, then 1.19 s",  # steady
    "every 1000 steps one iteration takes ~40s instead of 1s, exactly when save_steps fires",
    "Step time goes up in stage 2 because seq len goes from 2k to 8k there, as designed",
    "loss went from 2.31 -> 1.87 after 3k steps",  # no speed
    "Our MFU target was 50% but after tuning we got to 38%, still short.",
]


@pytest.mark.parametrize("text", SILENT)
def test_figures_that_are_no_slowdown_stay_silent(text: str) -> None:
    found = first(text)
    assert found is None or found[0] != C.STRAGGLER, text


def test_a_period_a_count_or_an_id_is_no_figure_of_the_speed() -> None:
    figures = speed_figures("step time from 1.2 s to 3.4 s over ~6 hours on 256 GPUs at step 41k")
    assert [round(f.value, 2) for f in figures] == [1.2, 3.4]
    assert speed_figures("host a100-14 on node-03 with llama3-8b, 12h later") == []


MEMBERS = [
    "GPU4 takes 1.7s/step while the other five take 1.1s/step",
    "cluster of 4 identical nodes, node-c is always behind: 2.1 s/step vs 1.4 on the others",
    "after the reboot gpu-node-12 does ~1.4 s/step while the other 15 hosts do ~1.0 s/step",
    "host a100-14 step time 1.38s, the other 7 hosts 1.01±0.02s, consistently for 2 days",
    "DDP 8xV100: rank 0 takes 1.9s per step vs 1.2s for ranks 1-7",
    "per-rank fwd time: r0 212ms r1 209ms r2 214ms r3 355ms r4 211ms r5 210ms r6 213ms",
    "rollout worker 6 of 8 produces ~40% fewer tokens/s than its identical siblings",
    "One Ray Train worker out of 16 takes ~50% longer per epoch and the rest sit waiting",
]


@pytest.mark.parametrize("text", MEMBERS)
def test_a_member_behind_its_peers_in_figures_is_a_straggler(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == C.STRAGGLER, text


@pytest.mark.parametrize(
    "text",
    [
        "GPU4 takes 1.1s/step while the other five take 1.1s/step",  # even
        "rank 0 takes 1.25s per step vs 1.2s for ranks 1-7",  # within the peers' gap
        "per-rank fwd time: r0 212ms r1 209ms r2 214ms r3 215ms r4 211ms r5 210ms",
        "node-c does 2.1 s/step vs 1.4 on the others after we gave it twice the batch, as expected",
    ],
)
def test_members_within_their_peers_gap_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


HANGS = [
    "it/s got lower and lower and now the progress bar has been frozen at 57% for 40 minutes",
    "training got slower and then completely stopped at step 3412",
    "Datadog: no data for train.step{job:mixtral-ft} in the last 25m",
    "the job hangs at step 5000 on 64 nodes",
    "学習が遅くなったあと、step 800 で完全に止まってログが一切出なくなりました。",
    "多机训练在第 1200 步卡住，没有任何输出",
]


@pytest.mark.parametrize("text", HANGS)
def test_a_stop_told_in_words_is_a_hang(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == C.HANG, text


@pytest.mark.parametrize(
    "text",
    [
        "the training no longer hangs after the NCCL upgrade",
        "we added hang detection to the launcher",
        "I stopped the job at step 3000 to change the learning rate",
        "loss stuck at 2.3 for 2 hours",  # a figure, not progress
        "the hash rate drops to 25 MH/s. Then it's just stuck there forever.",
        "训练时而卡住，单卡GPU利用率为0",  # comes and goes: a stutter
        "early stopping stopped the training at epoch 12",
        "if the training hangs, capture py-spy stacks before restarting",
    ],
)
def test_a_stop_that_is_none_stays_no_hang(text: str) -> None:
    found = first(text)
    assert found is None or found[0] != C.HANG, text


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("GPU 5 slower; nvidia-smi -q shows 'HW Thermal Slowdown : Active'", C.GPU_DEGRADED),
        ("训练变慢了，clocks_event_reasons.hw_slowdown: Active，频率掉到 900MHz", C.GPU_DEGRADED),
        ("DCGM alert: DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=0x20 on gpu 3", C.GPU_DEGRADED),
        ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=0x4 (power cap) on gpu 3", None),
        ("DCGM_FI_DEV_CLOCK_EVENT_REASONS: 1 (idle)", None),
    ],
)
def test_a_clock_slowdown_quoted_or_masked_is_the_gpu(text: str, category: Category | None) -> None:
    found = first(text)
    assert (found[0] if found else None) == category, text
