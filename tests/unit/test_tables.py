"""Table definitions, DDL per server version, and event-to-row conversion."""

from __future__ import annotations

import pytest

from analytics.columns import ColumnBatch, split_time
from analytics.tables import ALL_TABLES, GPU_METRICS, TABLES_BY_NAME, Features
from tests.builders import at, make_gpu_metrics, make_host, one_of_each


def test_features_by_version():
    assert Features.for_version((18, 16, 1)) == Features()
    modern = Features.for_version((26, 9, 2, 1))
    assert modern.low_cardinality and modern.ttl and modern.codecs


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.name)
def test_old_server_ddl_avoids_what_18_16_rejects(table):
    ddl = table.ddl("db", Features.for_version((18, 16, 1)), retention_days=30)
    for word in ("LowCardinality", "\nTTL ", "CODEC", "DateTime64", "JSON"):
        assert word not in ddl
    assert "PARTITION BY toYYYYMMDD(ts)" in ddl
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS `db`.")


def test_modern_ddl_uses_low_cardinality_codecs_and_ttl():
    ddl = GPU_METRICS.ddl("db", Features.for_version((24, 3)), retention_days=30)
    assert "`node` LowCardinality(String)" in ddl
    assert "CODEC(" in ddl
    assert "TTL ts + INTERVAL 30 DAY DELETE" in ddl


def test_sort_keys_serve_window_queries():
    assert TABLES_BY_NAME["gpu_metrics"].order_by[:2] == ("node", "gpu")
    assert TABLES_BY_NAME["train_steps"].order_by[:2] == ("job_id", "step")
    assert TABLES_BY_NAME["collectives"].order_by[:3] == ("job_id", "comm", "seq")


@pytest.mark.parametrize("event", one_of_each(), ids=lambda e: e.kind)
def test_rows_match_table_columns(event):
    batch = ColumnBatch()
    batch.add_event(event, ("tg.x", 2, 41))
    assert batch.rows
    for name, rows in batch.rows.items():
        width = len(TABLES_BY_NAME[name].columns)
        assert all(len(r) == width for r in rows), name
        cols = batch.columns(TABLES_BY_NAME[name])
        assert cols["src_offset"] == [41] * len(rows)
        assert cols["event_id"] == [event.id] * len(rows)


def test_gpu_scrape_becomes_one_row_per_gpu_with_dcgm_columns():
    batch = ColumnBatch()
    batch.add_event(make_gpu_metrics(gpus=4), ("t", 0, 0))
    cols = batch.columns(GPU_METRICS)
    assert cols["gpu"] == [0, 1, 2, 3]
    assert cols["DCGM_FI_DEV_GPU_TEMP"] == [40.0, 41.0, 42.0, 43.0]
    assert cols["nvml_error"] == [""] * 4


def test_host_scrape_fans_out_to_nic_and_disk_tables():
    batch = ColumnBatch()
    batch.add_event(make_host(), ("t", 0, 0))
    assert len(batch.rows["host_metrics"]) == 1
    assert len(batch.rows["nic_metrics"]) == 2
    assert len(batch.rows["disk_metrics"]) == 1


def test_split_time_is_exact():
    assert split_time(at(0)) == (1796040000, 250_000)
    assert split_time(at(0.749999)) == (1796040000, 999_999)
