"""Implicit detectors on hand-built event sequences: positives, negatives, warm-up, benign skips."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.detectors import (
    HangDetector,
    MfuDetector,
    NumericalDetector,
    StragglerDetector,
)
from diagnosis.model import Blame, Category, ComponentKind, Severity
from ingest.schema import (
    CollectiveProgress,
    CollectiveState,
    JobTopology,
    PortSeen,
    RankPlacement,
    TrainStep,
)

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
NAN = float("nan")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def make_step(step: int, t: float, step_time: float = 2.0, **kw: object) -> TrainStep:
    fields: dict = {"loss": 2.5, "grad_norm": 1.1, "mfu": 0.42 * 2.0 / step_time}
    fields.update(kw)
    return TrainStep(job_id="j", step=step, ts=at(t), step_time_s=step_time, **fields)


def make_coll(
    rank: int, seq: int, t: float, state: str = "completed", comm: str = "dp-p0-t0"
) -> CollectiveProgress:
    done = state == "completed"
    return CollectiveProgress(
        job_id="j",
        rank=rank,
        comm=comm,
        op="all_reduce",
        seq=seq,
        state=CollectiveState(state),
        ts=at(t),
        time_started=at(t - 0.1),
        time_completed=at(t) if done else None,
    )


def healthy_steps(n: int, step_time: float = 2.0, start: int = 0, t0: float = 0.0):
    """Yield (t, events) of n healthy steps with completed collectives on two ranks."""
    t = t0
    for k in range(start, start + n):
        t += step_time
        yield t, [make_step(k, t, step_time), make_coll(0, k, t), make_coll(1, k, t)]


def run(detector, timeline, until: float | None = None, tick: float = 1.0):
    """Feed (t, events) pairs, checking every `tick` s; return [(t, finding)]."""
    out = []
    now = 0.0
    items = list(timeline)
    end = until if until is not None else (items[-1][0] if items else 0.0)
    i = 0
    while now <= end:
        while i < len(items) and items[i][0] <= now:
            for event in items[i][1]:
                detector.observe(event)
            i += 1
        out.extend((now, f) for f in detector.check(at(now)))
        now += tick
    return out


# ----------------------------------------------------------------------------- hang


def hang_timeline(stall_at_step: int = 30):
    items = list(healthy_steps(stall_at_step))
    t = items[-1][0]
    stuck = [make_coll(0, stall_at_step, t + 1.5, "started")]  # rank 1 never arrives
    return [*items, (t + 1.5, stuck)], t


def test_hang_fires_once_within_seconds_of_the_last_step():
    timeline, last = hang_timeline()
    found = run(HangDetector("j"), timeline, until=last + 600)
    assert len(found) == 1
    t, f = found[0]
    assert t == last + 10
    assert (f.category, f.blame, f.component, f.severity) == (
        Category.HANG,
        Blame.UNKNOWN,
        ComponentKind.JOB,
        Severity.CRITICAL,
    )
    assert f.action.value == "capture_diagnostics"
    assert "1 collective(s) started" in f.line and "dp-p0-t0" in f.line and f.confidence == 0.8


def test_hang_never_fires_in_healthy_training_or_warm_up():
    warm = [(t, [make_step(k, t, 12.0)]) for k, t in ((0, 12.0), (1, 24.0))]
    rest = list(healthy_steps(100, t0=24.0, start=2))
    assert run(HangDetector("j"), [*warm, *rest]) == []


def test_hang_waits_for_the_first_steps_of_a_job():
    assert run(HangDetector("j"), [(5.0, [make_coll(0, 0, 5.0, "started")])], until=300) == []


def test_hang_during_warm_up_waits_for_the_warm_up_limit():
    timeline = [(5.0, [make_step(0, 5.0, 5.0)]), (6.0, [make_coll(0, 1, 6.0, "started")])]
    found = run(HangDetector("j"), timeline, until=300)
    assert [t for t, _ in found] == [125.0]


def test_hang_scales_with_slow_steps():
    timeline = list(healthy_steps(20, step_time=30.0))
    last = timeline[-1][0]
    found = run(HangDetector("j"), timeline, until=last + 400, tick=5.0)
    assert len(found) == 1 and found[0][0] >= last + 150  # 5 x 30 s, not the 10 s floor


def test_hang_needs_collectives_stalled_too():
    items = list(healthy_steps(30))
    last = items[-1][0]
    # Steps stop being reported but collectives keep completing: a logging gap, not a hang.
    busy = [(last + k, [make_coll(0, 100 + k, last + k)]) for k in range(1, 120)]
    assert run(HangDetector("j"), [*items, *busy], until=last + 119) == []


def test_hang_with_a_stuck_collective_while_other_groups_still_complete():
    timeline, last = hang_timeline()
    others = [(last + k, [make_coll(2, 30, last + k, comm="tp-p0-d0")]) for k in range(2, 40)]
    found = run(HangDetector("j"), [*timeline, *others], until=last + 60)
    assert len(found) == 1 and found[0][0] == last + 12 and found[0][1].confidence == 0.9


def test_hang_without_any_pending_collective_uses_silence():
    items = list(healthy_steps(30))
    last = items[-1][0]
    found = run(HangDetector("j"), items, until=last + 60)
    assert len(found) == 1 and found[0][1].confidence == 0.7
    assert "no collective completed" in found[0][1].line


def test_hang_not_reported_after_the_job_ended():
    detector = HangDetector("j")
    items = list(healthy_steps(30))
    run(detector, items)
    detector.end()
    assert detector.check(at(items[-1][0] + 600)) == []


def test_hang_reports_a_second_stall_after_progress_resumed():
    timeline, last = hang_timeline()
    later = list(healthy_steps(20, start=31, t0=last + 100))
    resumed_at = later[-1][0]
    # seq 31.. completing on rank 0 clears the pending seq-30 record.
    found = run(HangDetector("j"), [*timeline, *later], until=resumed_at + 60)
    assert [round(t) for t, _ in found] == [last + 10, resumed_at + 10]


def test_hang_ignores_other_jobs():
    detector = HangDetector("other")
    timeline, last = hang_timeline()
    assert run(detector, timeline, until=last + 100) == []


# ----------------------------------------------------------------------------- trend


def step_series(times: list[float], **kw: object):
    t = 0.0
    out = []
    for k, dt in enumerate(times):
        t += dt
        out.append((t, [make_step(k, t, dt, **kw)]))
    return out


WARMUP = [5.0, 3.5, 3.0]


@pytest.mark.parametrize("detector_cls", [StragglerDetector, MfuDetector])
def test_persistent_slowdown_fires_once_with_the_factor(detector_cls):
    times = WARMUP + [2.0] * 40 + [2.6] * 60
    found = run(detector_cls("j"), step_series(times))
    assert len(found) == 1
    f = found[0][1]
    assert f.category == Category.STRAGGLER and f.severity == Severity.WARNING
    assert f.blame == Blame.UNKNOWN and f.action.value == "capture_diagnostics"
    assert "1.30x" in f.line


def test_straggler_latency_is_a_few_steps():
    times = WARMUP + [2.0] * 40 + [2.6] * 60
    onset = sum(times[:43])
    ((t, _),) = run(StragglerDetector("j"), step_series(times))
    assert t - onset < 10 * 2.6


@pytest.mark.parametrize(
    "times",
    [
        WARMUP + [2.0] * 100,  # healthy, slow warm-up steps excluded
        WARMUP + [2.0] * 40 + [9.0] + [2.0] * 40,  # one slow step (checkpoint)
        WARMUP + ([2.0] * 7 + [3.0, 3.0]) * 10,  # sporadic slow steps stay a minority
        WARMUP + [2.0 + 0.01 * (k % 7) for k in range(100)],  # jitter
        [2.0] * 3 + [2.1] * 100,  # +5%: under the threshold
    ],
)
def test_benign_step_times_do_not_fire(times):
    assert run(StragglerDetector("j"), step_series(times)) == []


def test_skipped_steps_are_ignored():
    series = step_series(WARMUP + [2.0] * 40 + [2.6] * 30, skipped=False)
    for _, events in series[43:]:
        events[0] = events[0].model_copy(update={"skipped": True})
    assert run(StragglerDetector("j"), series) == []


def test_straggler_recovers_then_fires_for_a_new_episode():
    times = WARMUP + [2.0] * 40 + [2.6] * 30 + [2.0] * 30 + [3.0] * 30
    found = run(StragglerDetector("j"), step_series(times))
    assert len(found) == 2 and "1.50x" in found[1][1].line


# ----------------------------------------------------------------------------- numerical


def rank_norms(step: int, t: float, bad: set[int], world: int = 8):
    return [
        TrainStep(
            job_id="j",
            step=step,
            rank=r,
            ts=at(t),
            node=f"node-{r // 4:04d}",
            grad_norm=NAN if r in bad else 1.0,
        )
        for r in range(world)
    ]


def test_nan_loss_blames_the_application_once():
    series = step_series([2.0] * 30)
    series += [(62.0 + 2 * k, [make_step(30 + k, 62.0 + 2 * k, loss=NAN)]) for k in range(10)]
    found = run(NumericalDetector("j"), series)
    assert len(found) == 1
    f = found[0][1]
    assert (f.category, f.blame, f.component) == (
        Category.NUMERICAL,
        Blame.APPLICATION,
        ComponentKind.JOB,
    )
    assert f.rank is None and "step 30" in f.line


def test_inf_grad_norm_is_non_finite():
    series = step_series([2.0] * 12) + [(30.0, [make_step(12, 30.0, grad_norm=float("inf"))])]
    (found,) = run(NumericalDetector("j"), series)
    assert found[1].rule == "implicit.numerical.nonfinite"


def test_fp16_skips_are_benign():
    series = step_series([2.0] * 30)
    skip = make_step(30, 62.0, loss=NAN, grad_norm=float("inf"), skipped=True)
    series += [(62.0, [skip, *rank_norms(30, 62.0, bad=set(range(8)))])]
    series += step_series([2.0] * 5)[:0] + [(64.0, [make_step(31, 64.0)])]
    assert run(NumericalDetector("j"), series) == []


def test_one_rank_going_non_finite_first_blames_its_gpu():
    topo = JobTopology(
        job_id="j",
        ts=T0,
        world_size=8,
        ranks=[RankPlacement(rank=r, node=f"node-{r // 4:04d}", gpu=r % 4) for r in range(8)],
    )
    series = [(0.0, [topo])]
    for k in range(20):
        t = 2.0 * (k + 1)
        series.append((t, [make_step(k, t), *rank_norms(k, t, bad={6} if k == 19 else set())]))
    series.append((42.0, [make_step(20, 42.0, loss=NAN, grad_norm=NAN)]))
    series.append((42.0, rank_norms(20, 42.0, bad=set(range(8)))))
    found = run(NumericalDetector("j"), series)
    assert len(found) == 1
    t, f = found[0]
    assert t == 42.0
    assert (f.blame, f.component, f.rank, f.node, f.gpu) == (
        Blame.INFRASTRUCTURE,
        ComponentKind.GPU,
        6,
        "node-0001",
        2,
    )
    assert f.category == Category.NUMERICAL


def test_many_ranks_non_finite_together_blame_the_application():
    series = []
    for k in range(20):
        t = 2.0 * (k + 1)
        bad = set(range(8)) if k == 19 else set()
        series.append((t, [make_step(k, t), *rank_norms(k, t, bad=bad)]))
    series.append((42.0, [make_step(20, 42.0, loss=NAN)]))
    ((_, f),) = run(NumericalDetector("j"), series)
    assert f.blame == Blame.APPLICATION and f.rank is None


@pytest.mark.parametrize(
    "metric,value,factor", [("loss", 14.0, "5.6x"), ("grad_norm", 6.0, "5.5x")]
)
def test_spikes_warn_once_per_burst(metric, value, factor):
    series = step_series([2.0] * 30)
    burst = [make_step(30 + k, 62.0 + 2 * k, **{metric: value}) for k in range(3)]
    series += [(e.ts.timestamp() - T0.timestamp(), [e]) for e in burst]
    found = run(NumericalDetector("j"), series)
    assert len(found) == 1
    f = found[0][1]
    assert f.severity == Severity.WARNING and f.rule == "implicit.numerical.spike"
    assert metric in f.line and factor in f.line


def test_declining_loss_and_small_wobbles_are_not_spikes():
    series = []
    for k in range(200):
        t = 2.0 * (k + 1)
        series.append((t, [make_step(k, t, loss=10.0 * 0.99**k + 2, grad_norm=1 + 0.3 * (k % 3))]))
    assert run(NumericalDetector("j"), series) == []


def test_hang_limit_forgets_slow_warm_up_steps():
    warm = [(t, [make_step(k, t, 12.0)]) for k, t in ((0, 12.0), (1, 24.0), (2, 36.0))]
    rest = list(healthy_steps(10, t0=36.0, start=3))
    last = rest[-1][0]
    found = run(HangDetector("j"), [*warm, *rest], until=last + 60)
    assert [t for t, _ in found] == [last + 10]


def test_explicit_telemetry_rules():
    from diagnosis.detectors import explicit
    from ingest.schema import DiskSample, GpuSample

    lost = explicit.gpu_unreadable("n1", GpuSample(gpu=3, nvml_error="NVML_ERROR_GPU_IS_LOST"))
    assert lost is not None and lost.gpu == 3 and lost.category.value == "gpu.hardware"
    assert explicit.gpu_unreadable("n1", GpuSample(gpu=3)) is None
    up, down = PortSeen("ACTIVE", 3), PortSeen("DOWN", 4)
    assert explicit.nic_went_down("n1", "mlx5_2", up, down) is not None
    assert explicit.nic_went_down("n1", "mlx5_2", down, down) is None  # no transition
    assert explicit.nic_went_down("n1", "mlx5_2", None, down) is None  # first sight: unknown
    assert explicit.nic_went_down("n1", "mlx5_2", up, up) is None
    full = DiskSample(mount="/", used_bytes=995, total_bytes=1000)
    assert explicit.disk_full("n1", full) is not None
    assert explicit.disk_full("n1", DiskSample(mount="/", used_bytes=500, total_bytes=1000)) is None


def test_a_link_that_dropped_between_scrapes_is_seen_by_its_counter():
    from diagnosis.detectors import explicit

    def dropped(before: PortSeen | None, now: PortSeen) -> str | None:
        finding = explicit.nic_link_dropped("n1", "mlx5_2", before, now)
        return None if finding is None else finding.line

    # down and back up between two scrapes: only the counter shows it
    line = dropped(PortSeen("ACTIVE", 7), PortSeen("ACTIVE", 8))
    assert line is not None and "once" in line and "ACTIVE now" in line
    assert "3 times" in (dropped(PortSeen("ACTIVE", 7), PortSeen("ACTIVE", 10)) or "")
    finding = explicit.nic_link_dropped(
        "n1", "mlx5_2", PortSeen("ACTIVE", 0), PortSeen("ACTIVE", 1)
    )
    assert finding is not None and finding.category == Category.NETWORK
    assert finding.component == ComponentKind.NIC and finding.node == "n1"
    assert dropped(PortSeen("ACTIVE", 7), PortSeen("ACTIVE", 7)) is None  # no drop
    assert dropped(PortSeen("ACTIVE", 7), PortSeen("ACTIVE", 0)) is None  # reset (reboot)
    assert dropped(None, PortSeen("ACTIVE", 9)) is None  # first sight: no baseline
    assert dropped(PortSeen("ACTIVE", None), PortSeen("ACTIVE", 9)) is None  # no counter before
    assert dropped(PortSeen("ACTIVE", 9), PortSeen("ACTIVE", None)) is None  # Ethernet port
