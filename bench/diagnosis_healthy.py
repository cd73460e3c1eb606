"""The healthy day of the diagnosis bench: a 1,024-GPU job with benign noise, no fault.

Segments of `--segment-hours` run one after another (or in parallel with `--segments`);
the bench counts every incident as false. The job has step-to-step jitter and benign heat
and throttling on (`sim.generate.NOISY_WEAR`). To fit a day into the bench, telemetry is
sampled the way a fleet agent samples it: GPU metrics every 30 s, host metrics every 60 s,
and the flight recorder's collective records for 4 consecutive steps out of every 40 (the
same records, read by the same replay and detectors; steps are all logged).
"""

from __future__ import annotations

from typing import Any

from sim.generate import NOISY_WEAR

HEALTHY_TELEMETRY = {
    "metrics_interval_s": 30.0,
    "host_interval_s": 60.0,
    "collective_every_steps": 40,
    "collective_burst_steps": 4,
}
HEALTHY_STEP_JITTER = 0.01


def healthy_segments(hours: float, segment_hours: float) -> list[tuple[str, dict[str, Any]]]:
    """Return a healthy 1,024-GPU job's simulated hours, one scenario per segment."""
    out = []
    done, i = 0.0, 0
    while done < hours - 1e-9:
        length = min(segment_hours, hours - done)
        out.append(
            (
                f"healthy-hours/{i}",
                {
                    "seed": 500 + i,
                    "cluster": {"nodes": 128, "nodes_per_rack": 16},
                    "jobs": [
                        {
                            "id": "job",
                            "step_time_s": 8.0,
                            "tp": 8,
                            "pp": 4,
                            "dp": 32,
                            "step_jitter": HEALTHY_STEP_JITTER,
                        }
                    ],
                    "duration_s": length * 3600,
                    **HEALTHY_TELEMETRY,
                    "wear": NOISY_WEAR,
                    "faults": [],
                },
            )
        )
        done += length
        i += 1
    return out


def healthy_hours(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the long healthy run's totals: simulated hours actually run, false incidents."""
    segs = [r for r in runs if r["scenario"].startswith("healthy-hours/")]
    hours = sum(r["params"]["duration_s"] for r in segs) / 3600
    gpu_hours = sum(r["gpu_hours"] for r in segs)
    false = sum(r["false_incidents"] for r in segs)
    return {
        "gpus": segs[0]["gpus"] if segs else None,
        "segments": len(segs),
        "benign_noise": all(r["params"].get("benign_noise") for r in segs),
        "step_jitter": sorted({r["params"].get("step_jitter", 0.0) for r in segs}),
        "collective_sampling": sorted(
            {str(r["params"].get("collective_sample", "every step")) for r in segs}
        ),
        "simulated_hours": round(hours, 2),
        "gpu_hours": round(gpu_hours, 1),
        "false_incidents": false,
        "false_incidents_per_1000_gpu_hours": round(1000 * false / gpu_hours, 3)
        if gpu_hours
        else None,
        "sim_cpu_s": round(sum(r["sim_cpu_s"] for r in segs), 1),
        "diagnose_cpu_s": round(sum(r["diagnose_cpu_s"] for r in segs), 1),
        "wall_s": round(sum(r.get("wall_s", 0.0) for r in segs), 1),
    }
