"""ServerStore against the real ClickHouse server: closing while another thread queries."""

from __future__ import annotations

import threading
import time

import pytest

from analytics.store import ServerStore
from tests.integration.conftest import Services

pytestmark = pytest.mark.integration


def test_close_waits_for_a_query_another_thread_is_running(services: Services, unique: str):
    # an API's lease heartbeat may be mid-query when the API closes its store
    store = ServerStore(services.clickhouse_host, services.clickhouse_port, f"it_{unique}")
    answer: dict[str, object] = {}

    def query() -> None:
        try:
            answer["rows"] = len(store.query_df("SELECT sleep(1) AS s"))
        except Exception as exc:  # noqa: BLE001 (the test reports what the query met)
            answer["error"] = exc

    running = threading.Thread(target=query)
    running.start()
    time.sleep(0.3)  # the query is on the server now
    store.close()
    running.join(timeout=30)
    assert answer == {"rows": 1}
    assert int(store.query_df("SELECT 1 AS one").iloc[0, 0]) == 1  # usable after close
    store.close()
