"""Speed figures compared in a sentence, a stop told in words, a throttled GPU quoted in prose
(diagnosis/explain/rules_figures.py, rules_member_figures.py, rules_stalled.py; rules_gpu's clock
reasons).

Written from the shapes review 17 showed (tests/fixtures/explain_review/review17.json), each
with the look-alikes that must stay silent: a speed-up, setups compared, a period that is no
step time, counts and ids that are no figures, a figure that stays, a stop on purpose.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.speed_figures import speed_figures
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
    assert speed_figures("host a100-14 on node-03 with llama3-8b, 12h later") == ()


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


ALERTS_AND_LISTS = [
    # a figure against its baseline, in the forms monitors print
    "[Grafana] ALERT train_throughput_tokens_per_sec current=381k baseline=512k (-25.6%) for 45m",
    "[FIRING] StepTimeRegression job=gpt-neox-20b p50 step_time_ms=1840 (7d baseline 1210)",
    "Alert: tflops_per_gpu current 198, baseline 301 (-34%), job llama3-70b-pretrain, duration 2h",
    # past and present in either order
    "Step time is 2.1s now; it was 1.3s yesterday.",
    "yesterday: 1.2 s/it, today: 2.6 s/it",
    # a figure first, then its past, in other languages
    "Seit Schritt 25k liegt die Schrittzeit bei 2,4 s statt 1,6 s, Setup unverändert.",
    "Od wczoraj ten sam job robi 1.7 s/it zamiast 1.1 s/it i tak zostaje.",
    # thousands separators and a unit switch
    "started at 5,200 samples/sec, since day 2 stuck at 3,400 samples/sec",
    "tqdm went from 3.2it/s to 1.4s/it overnight",
    # lists over time and per member
    "sec/epoch: 301, 298, 305, 460, 472, 468, 471",
    "per-rank step (s): [1.21, 1.20, 1.22, 1.21, 1.98, 1.20, 1.21, 1.22]",
    "per-host samples/sec: host-a 1480, host-b 1475, host-c 1490, host-d 910",
    # members in other languages, a factor, a lag
    "Satu node (node-09) lebih lambat: 2,8 s/step, node lain 1,9 s/step.",
    "Ранг 13 стабильно отстаёт: 1.9 с на шаг против 1.2 с у остальных 63.",
    "8GPU中、GPU5だけ1イテレーション 640ms、他は 410ms 前後です。",
    "GPU 3 on node-44 takes 1.7x longer in backward than its 7 siblings, every step",
    "worker-3 consistently finishes its forward 180-220ms after workers 0,1,2,4..15",
    "rank 5 runs at 1.7 s/step; all others at 1.1",
    "we see a 40% drop in tokens/s since yesterday",
]


@pytest.mark.parametrize("text", ALERTS_AND_LISTS)
def test_alerts_lists_and_other_word_orders_are_read(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == C.STRAGGLER, text


QUIET_FIGURES = [
    "RESOLVED: StepTimeHigh job=vit-h current 402ms baseline 405ms, auto-resolved 03:14",
    "MFU was 40% before, now it is 55% after the fix.",
    "I set the NCCL timeout to 60 min instead of 30 min for the large job.",
    "raised the NCCL timeout from 600s to 1800s",
    "step time has been flat at ~1.1s since June 3",
    "step time ~1.1s, unchanged after upgrading torch to 2.4",
    "GPU utilization went from 98% to 0% after training finished",
    "MFU went from 52% on the 8B to 38% on the 70B model",
    "8200 tok/s with FP8, then 5400 tok/s after switching back to BF16 for stability",
    "step time doubled when we went from bs 16 to bs 32",
    "GPU 5 takes 25% less time per step than the others",
    "GPU7 has 30% lower temperature than the others",
    "ckpt save: rank0 45s rank1 2s rank2 2s rank3 2s",
    "doubled global batch 1024 -> 2048 so step time went 1.1s -> 2.1s, tokens/s basically "
    "unchanged",
    "enabled gradient checkpointing to fit bs=16, throughput 5.1k -> 3.9k tok/s, the usual ~25% "
    "recompute cost",
    "Fixed in #4412: the 2.1s -> 3.0s/step slowdown was the logging callback",
]


@pytest.mark.parametrize("text", QUIET_FIGURES)
def test_figures_of_setups_settings_and_other_quantities_are_no_slowdown(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (
            "nccl-tests all_reduce_perf busbw 38 GB/s across nodes vs ~190 GB/s expected; training "
            "step 1.1s -> 2.6s",
            C.NETWORK,
        ),
        (
            "ibstat: mlx5_3 port 1 flapped 14 times in the last hour; tokens/s 9.2k -> 5.5k",
            C.NETWORK,
        ),
        (
            "NCCL INFO NET/Socket : Using [0]eth0 (NET/IB not found) and the job is 3x slower than "
            "usual",
            C.NETWORK,
        ),
        (
            "GPU util drops to 10-20% and it/s falls from 5 to 1 when reading the dataset from our "
            "NFS share; nfsiostat shows ~200ms read latency",
            C.HOST_STORAGE,
        ),
        (
            "dcgm.power_violation high on node-31 GPU0, enforced power limit 300W (default 700W), "
            "step 1.9s vs 1.3s",
            C.GPU_DEGRADED,
        ),
    ],
)
def test_a_slowdown_told_with_its_cause_is_the_cause(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, text


@pytest.mark.parametrize(
    "text",
    [
        "GPU temps 71-76°C on all 8 cards, SM clocks 1980 MHz, step time 690ms steady",
        "    GPU Slowdown Temp                 : 90 C",
        "Mean busbw: 365.2 GB/s",
        "A single thermally throttled GPU can cut your distributed training throughput by 5x.",
    ],
)
def test_a_cause_without_a_slowdown_or_in_general_words_names_no_cause(text: str) -> None:
    found = first(text)
    assert found is None or found[0] not in (C.NETWORK, C.HOST_STORAGE, C.GPU_DEGRADED), text


@pytest.mark.parametrize(
    "text",
    [
        "training has been stuck for the last 40 minutes",
        "training has been stuck for half an hour",
        "the job hasn't logged anything in 45 minutes",
        "stuck at step 18432 for 47 minutes, GPU util 100% on all 8 cards",
        "rank 12 never returns from all_reduce; others sit in ncclKernel for 30+ min",
        "[PagerDuty] NoProgress job=llama-70b: last step logged 02:11, now 03:40 (89 min without a "
        "step)",
        "o treino travou no passo 3000 e não sai nada no log",
        "训练卡在 epoch 3 的第 1200 个 batch，已经 2 个小时没有任何输出了。",
    ],
)
def test_more_stops_told_in_words_are_hangs(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == C.HANG, text


@pytest.mark.parametrize(
    "text",
    [
        "Soak test: training ran 48h, no hangs, no NCCL errors",
        "Training stopped at step 100000: reached max_steps.",
        "we fixed the training hang at step 5000 by upgrading NCCL to 2.21",
        "my job has been stuck in PENDING for 2 hours",
        "training hangs for ~30 s every 500 steps while the checkpoint is saved",
        "logs stopped for 20 minutes while wandb was down, training kept going",
        "no new log lines for 10 minutes, expected: the eval loop only logs at the end",
        "训练没有卡住，只是比较慢",
        "学習は止まっていない、ログは普通に出ている",
        "3号卡在跑的时候利用率只有 30%，其他卡都是 100%",
    ],
)
def test_stops_that_are_none_or_denied_are_no_hang(text: str) -> None:
    found = first(text)
    assert found is None or found[0] != C.HANG, text
