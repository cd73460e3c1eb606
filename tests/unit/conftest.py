"""Unit tests that cost seconds of CPU each are marked `heavy`, so `make unit` can leave them out.

Every unit test runs without services; most take milliseconds. The ones listed here run the
digital twin over whole jobs, fit prediction models, push hundreds of thousands of lines
through the explainer, or start `python -m trainguard` in a subprocess. `make unit` runs
`-m "not slow and not heavy"` (feedback in seconds); `make test` and CI run them all.
The list is checked by `tests/unit/test_heavy_list.py`: every entry names a test that exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# module (under tests/unit) -> test functions, or None for every test of the module
HEAVY: dict[str, tuple[str, ...] | None] = {
    # the twin run for whole jobs per case
    "test_detectors_twin.py": None,
    "test_sim_faults.py": (
        "test_healthy_scenarios_show_no_fault_signature_for_any_seed_or_layout",
        "test_gpu_fault_signatures",
        "test_nan_turns_the_loss_nan_and_rank_grad_norms_show_the_culprit_first",
        "test_straggler_slows_the_job_and_shows_thermal_throttling",
        "test_host_faults_are_visible_on_the_host",
        "test_property_healthy_runs_never_look_faulty",
    ),
    "test_failslow.py": (
        "test_a_slow_gpu_under_each_tp_size_is_found_and_named_with_benign_noise_on",
    ),
    # model fits over simulated fleets
    "test_prediction_walkforward.py": None,
    "test_prediction_pipeline.py": (
        "test_vote_trains_on_known_history_and_alerts_the_gpus_about_to_fail",
    ),
    "test_prediction_models.py": (
        "test_parallel_ensemble_alerts_are_a_subset_of_each_member_top_set",
        "test_cascade_only_scores_what_the_filter_passes",
    ),
    "test_prediction_titan.py": ("test_snapshot_uses_only_the_past_and_labels_the_future",),
    # the explainer over floods, mangled lines and the whole corpus
    "test_explain.py": (
        "test_800k_repeated_xid95_lines_collapse_into_one_finding",
        "test_mangled_real_lines_never_crash_and_stay_well_formed",
        "test_binary_garbage_gives_nothing",
    ),
    "test_explain_corpus.py": (
        "test_committed_benchmark_figures_are_reproduced",
        "test_benchmark_scores_the_corpus_without_false_alarms",
    ),
    # every corpus record under each perturbation (minutes); the learned hint's model fits
    "test_explain_properties.py": None,
    "test_explain_hint.py": (
        "test_a_refit_reads_as_the_shipped_model",
        "test_the_exported_model_reads_texts_as_the_fitted_one_does",
    ),
    # `python -m trainguard ...` in a subprocess per case
    "test_scheduler_cli.py": None,
    "test_scheduler_elastic.py": ("test_cli_takes_the_share_and_the_old_fraction",),
    "test_metrics.py": (
        "test_the_cli_imports_no_prometheus_client_before_a_command_runs",
        "test_requests_are_timed_by_route_template_and_status",
    ),
}
# every test named test_twin_* in these modules runs the twin for a whole job
TWIN_PREFIXED = ("test_localize_hang.py", "test_localize_network.py", "test_localize_straggler.py")


def is_heavy(module: str, function: str) -> bool:
    """Say whether a unit test (its file name and function name) is in the heavy set."""
    if module in TWIN_PREFIXED and function.startswith("test_twin_"):
        return True
    if module not in HEAVY:
        return False
    names = HEAVY[module]
    return names is None or function in names


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "heavy: a unit test that costs seconds of CPU (the twin, model fits, subprocesses); "
        "make unit leaves it out",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent != HERE:
            continue  # the hook sees the whole session's items: only tests/unit's are ours
        function = getattr(item, "originalname", None) or item.name.split("[")[0]
        if is_heavy(item.path.name, function):
            item.add_marker(pytest.mark.heavy)
