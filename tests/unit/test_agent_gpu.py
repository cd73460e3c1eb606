"""GPU sampler against recorded NVML behaviour (tests/fixtures/agent/fake_nvml.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pynvml
import pytest

from ingest.agent.gpu import GpuSampler
from ingest.schema import GpuMetrics, decode_event, encode_event
from tests.agent_fixtures import load_fake_nvml

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agent"


fake_nvml = load_fake_nvml()


def h100(**kwargs: Any) -> tuple[Any, GpuSampler]:
    fake = fake_nvml.FakeNvml.h100_node(**kwargs)
    return fake, GpuSampler("gpu-node-1", fake)


def scrape(sampler: GpuSampler) -> GpuMetrics:
    metrics = sampler.sample()
    assert metrics is not None
    return metrics


def test_every_field_matches_the_recorded_nvidia_smi_q() -> None:
    fake, sampler = h100()
    fake.advance(10.0)
    m = scrape(sampler)
    assert m.node == "gpu-node-1"
    assert [g.gpu for g in m.gpus] == [0, 1, 2]
    g = m.gpus[2]  # 00000000:75:00.0: busy, power-capped
    assert g.uuid == "GPU-973565ff-45cf-12ea-4e91-33386720f7bb"
    assert g.pci_bus_id == "00000000:75:00.0"
    assert (g.gpu_util, g.mem_copy_util) == (0.0, 0.0)
    assert (g.sm_clock, g.mem_clock) == (1980.0, 2619.0)
    assert (g.fb_used, g.fb_free) == (9221.0, 71786.0)  # MiB, reserved excluded (as nvidia-smi)
    assert (g.gpu_temp, g.memory_temp) == (39.0, 46.0)
    assert g.power_usage == pytest.approx(118.01)  # 118010 mW -> W
    assert g.power_limit == pytest.approx(700.0)
    assert g.total_energy == 118010 * 10  # mJ after 10 s at the recorded draw
    assert g.throttle_reasons == (
        pynvml.nvmlClocksEventReasonSwPowerCap
        | pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown
        | pynvml.nvmlClocksEventReasonSwThermalSlowdown
    )
    assert (g.ecc_sbe_vol, g.ecc_dbe_vol, g.ecc_sbe_agg, g.ecc_dbe_agg) == (0, 0, 0, 0)
    assert (g.remapped_correctable, g.remapped_uncorrectable, g.remap_pending) == (0, 0, 0)
    assert g.remap_failure == 0
    assert g.pcie_replay == 58
    assert (g.pcie_tx_throughput, g.pcie_rx_throughput) == (4113, 414)
    assert (g.nvlink_crc_flit, g.nvlink_replay, g.nvlink_recovery) == (0, 0, 0)
    assert g.nvml_error is None
    assert m.gpus[0].throttle_reasons == pynvml.nvmlClocksEventReasonGpuIdle
    assert m.gpus[0].pcie_replay == 120


def test_not_supported_fields_are_none_and_silent(caplog: pytest.LogCaptureFixture) -> None:
    _, sampler = h100()
    with caplog.at_level(logging.WARNING, logger="ingest.agent"):
        g = scrape(sampler).gpus[0]
    assert g.fan_speed is None  # "Fan Speed: N/A" on an SXM H100
    assert (g.retired_sbe, g.retired_dbe, g.retired_pending) == (None, None, None)
    assert g.nvlink_crc_data is None  # nvlink -e on H100 shows no data-CRC counter
    assert g.nvml_error is None
    assert caplog.records == []


def test_ecc_remapped_rows_and_retired_pages_from_real_excerpts() -> None:
    fake = fake_nvml.FakeNvml.from_files(
        "nvidia-smi-q_A100_xid63_remapped_rows_pending.txt",
        "nvidia-smi-q_sram_uncorrectable_ecc.txt",
        "nvidia-smi-q_remapped_rows_pending_gpud_pr80.txt",
    )
    a100, sram, pr80 = scrape(GpuSampler("n", fake)).gpus
    assert a100.pci_bus_id == "00000000:10:1C.0"
    assert (a100.ecc_sbe_vol, a100.ecc_dbe_vol, a100.ecc_sbe_agg, a100.ecc_dbe_agg) == (
        177,
        0,
        177,
        0,
    )
    assert (a100.remapped_correctable, a100.remapped_uncorrectable) == (1, 0)
    assert (a100.remap_pending, a100.remap_failure) == (1, 0)
    assert a100.retired_sbe is None and a100.retired_pending is None  # "N/A" on A100
    assert (sram.ecc_dbe_vol, sram.ecc_dbe_agg, sram.ecc_sbe_vol) == (1, 5, 0)
    assert (pr80.remapped_uncorrectable, pr80.remap_pending) == (4, 1)


def test_gpu_that_falls_off_the_bus_mid_run_does_not_stop_the_others() -> None:
    fake, sampler = h100()
    assert all(g.nvml_error is None for g in scrape(sampler).gpus)

    fake.fall_off_bus(1)
    lost = scrape(sampler)
    assert lost.gpus[1].nvml_error == "NVML_ERROR_GPU_IS_LOST"
    assert lost.gpus[1].uuid == "GPU-9930d717-21dd-7692-054e-3d0a2bae76b5"  # kept from before
    assert lost.gpus[1].gpu_temp is None and lost.gpus[1].fb_used is None
    assert [lost.gpus[0].gpu_temp, lost.gpus[2].gpu_temp] == [36.0, 39.0]
    assert lost.gpus[0].nvml_error is None and lost.gpus[2].nvml_error is None

    # Next scrape re-acquires the handle; NVML then answers UNKNOWN ("Unable to determine the
    # device handle for GPU0000:A1:00.0: Unknown Error" after Xid 79).
    again = scrape(sampler)
    assert again.gpus[1].nvml_error == "NVML_ERROR_UNKNOWN"
    assert again.gpus[2].gpu_temp == 39.0

    fake.recover(1)
    back = scrape(sampler)
    assert back.gpus[1].nvml_error is None
    assert back.gpus[1].gpu_temp == 37.0


def test_device_handles_are_kept_across_scrapes_and_reacquired_after_loss() -> None:
    fake, sampler = h100()
    for _ in range(4):
        scrape(sampler)
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 3
    assert fake.calls["nvmlDeviceGetNvLinkState"] == 3 * 19  # links found once per handle
    fake.fall_off_bus(0)
    scrape(sampler)  # GPU_IS_LOST on the kept handle
    scrape(sampler)  # re-acquire attempt -> UNKNOWN
    fake.recover(0)
    scrape(sampler)  # re-acquired
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 3 + 2


def test_nvlink_error_counters_are_summed_over_links() -> None:
    fake, sampler = h100()
    fake.set_nvlink_counter(0, 3, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT, 5)
    fake.set_nvlink_counter(0, 17, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT, 7)
    fake.set_nvlink_counter(0, 4, pynvml.NVML_NVLINK_ERROR_DL_REPLAY, 2)
    fake.set_nvlink_counter(0, 9, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY, 1)
    gpus = scrape(sampler).gpus
    assert (gpus[0].nvlink_crc_flit, gpus[0].nvlink_replay, gpus[0].nvlink_recovery) == (12, 2, 1)
    assert gpus[1].nvlink_crc_flit == 0


def test_energy_counter_grows_between_scrapes() -> None:
    fake, sampler = h100()
    fake.advance(10.0)
    first = scrape(sampler).gpus[0].total_energy
    fake.advance(1.0)
    second = scrape(sampler).gpus[0].total_energy
    assert (first, second) == (71970 * 10, 71970 * 11)


def test_old_driver_falls_back_to_v1_memory_and_throttle_reasons() -> None:
    fake, sampler = h100(
        driver_lacks=("nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetCurrentClocksEventReasons")
    )
    g = scrape(sampler).gpus[2]
    assert g.fb_used == 81559.0 - 71786.0  # v1: used = total - free, reserved included
    assert g.throttle_reasons == 0xA4
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 3


def test_function_missing_from_an_older_pynvml_leaves_its_fields_none() -> None:
    _, sampler = h100(missing=("nvmlDeviceGetRemappedRows", "nvmlDeviceGetFieldValues"))
    g = scrape(sampler).gpus[0]
    assert g.remapped_correctable is None and g.remap_pending is None
    assert g.memory_temp is None
    assert g.gpu_temp == 36.0


def test_corrupted_inforom_flags_the_gpu_and_other_errors_warn_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake, sampler = h100()
    fake.inject_error(0, "nvmlDeviceGetTotalEccErrors", pynvml.NVML_ERROR_CORRUPTED_INFOROM)
    fake.inject_error(2, "nvmlDeviceGetPowerUsage", pynvml.NVML_ERROR_NO_PERMISSION)
    with caplog.at_level(logging.WARNING, logger="ingest.agent.gpu"):
        first = scrape(sampler)
        scrape(sampler)
    assert first.gpus[0].nvml_error == "NVML_ERROR_CORRUPTED_INFOROM"
    assert first.gpus[0].ecc_sbe_vol is None and first.gpus[0].gpu_temp == 36.0
    assert first.gpus[2].nvml_error is None and first.gpus[2].power_usage is None
    assert first.gpus[2].power_limit == pytest.approx(700.0)
    permission = [r for r in caplog.records if "NVML_ERROR_NO_PERMISSION" in r.getMessage()]
    assert len(permission) == 1


def test_no_driver_logs_one_warning_and_retries_later(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    fake = fake_nvml.FakeNvml.h100_node(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    sampler = GpuSampler("n", fake, retry_init_s=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="ingest.agent.gpu"):
        assert [sampler.sample() for _ in range(3)] == [None, None, None]
        now[0] = 61.0
        assert sampler.sample() is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "NVML_ERROR_LIBRARY_NOT_FOUND" in warnings[0].getMessage()
    assert fake.calls["nvmlInit"] == 2  # once at start, once after the retry interval
    fake.init_error = None  # the driver got installed
    now[0] = 122.0
    assert sampler.sample() is not None and sampler.available


def test_real_pynvml_without_a_driver_is_unavailable_not_fatal() -> None:
    sampler = GpuSampler("n", pynvml)
    metrics = sampler.sample()
    if sampler.available:
        sampler.close()
        pytest.skip("this machine has an NVIDIA driver")
    assert metrics is None


def test_scrape_round_trips_through_the_wire_schema_with_dcgm_names() -> None:
    _, sampler = h100()
    m = scrape(sampler)
    raw = encode_event(m)
    wire = json.loads(raw)["gpus"][2]
    assert wire["DCGM_FI_DEV_FB_USED"] == 9221.0
    assert "DCGM_FI_DEV_FAN_SPEED" not in wire  # None fields are dropped
    assert decode_event(raw) == m
