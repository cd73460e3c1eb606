"""The API's snapshot cache: TTL, write generations shared by workers, background refresh."""

from __future__ import annotations

import threading
import time

import pytest

from api import cache as cache_module
from api.cache import Rendered, SnapshotCache
from api.generation import Generation


class Counter:
    """A build that counts its calls and returns the count."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


def test_a_value_is_reused_within_its_ttl_and_dropped_by_a_write():
    cache, build = SnapshotCache(ttl_s=60), Counter()
    assert cache.get(("k",), build) == 1
    assert cache.get(("k",), build) == 1
    cache.invalidate()
    assert cache.get(("k",), build) == 2


def test_a_write_in_one_worker_drops_the_values_of_another(tmp_path):
    path = tmp_path / "api.generation"
    one, two = SnapshotCache(60, Generation(path)), SnapshotCache(60, Generation(path))
    build = Counter()
    assert two.get(("k",), build) == 1
    assert two.get(("k",), build) == 1
    one.invalidate()  # the write happened in the other worker
    assert two.get(("k",), build) == 2
    assert Generation(path).current() == 1


def test_a_value_is_as_old_as_the_cached_data_it_was_built_from(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache, inner = SnapshotCache(ttl_s=5), Counter()
    cache.get(("inner",), inner)
    now[0] += 4
    outer = cache.get(("outer",), lambda: cache.get(("inner",), inner) * 10)
    assert outer == 10
    now[0] += 1.5  # the outer value is 1.5 s old, but built from 5.5 s old data: stale
    assert cache.get(("outer",), lambda: cache.get(("inner",), inner) * 10) == 20
    assert inner.calls == 2


def test_the_refresher_rebuilds_asked_entries_before_they_expire(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    cache, build = SnapshotCache(ttl_s=10), Counter()
    cache.get(("k",), build)
    now[0] += 5
    assert cache.refresh_due() == 0  # half-way: not yet
    now[0] += 3
    assert cache.refresh_due() == 1  # past REFRESH_AT of the TTL
    assert build.calls == 2
    now[0] += 5
    assert cache.get(("k",), build) == 2  # the refreshed value, no build on the request
    now[0] += 100
    assert cache.refresh_due() == 0  # nobody asked for a while: left to expire


def test_requests_never_build_while_the_refresher_keeps_the_value_fresh():
    cache = SnapshotCache(ttl_s=0.2)
    builders: list[str] = []

    def build() -> int:
        builders.append(threading.current_thread().name)
        return len(builders)

    cache.start()
    try:
        cache.get(("k",), build)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            cache.get(("k",), build)
            time.sleep(0.005)
    finally:
        cache.stop()
    assert len(builders) >= 4  # about every 0.14 s
    assert builders[0] != "tg-api-refresh"  # the first request builds ...
    assert set(builders[1:]) == {"tg-api-refresh"}  # ... then only the refresher


def test_the_fast_path_knows_only_keys_served_before():
    cache = SnapshotCache(ttl_s=60)
    raw = ("/v1/gpus", b"limit=5")
    assert cache.fresh(raw) is None
    body = cache.get(("json", "gpus"), lambda: Rendered.of(b'{"items":[]}'))
    cache.alias(raw, ("json", "gpus"))
    assert cache.fresh(raw) == body
    assert body.etag.startswith('"') and len(body.etag) == 26
    cache.invalidate()
    assert cache.fresh(raw) is None


def test_keys_are_typed_tuples_so_none_and_the_string_none_stay_apart():
    cache = SnapshotCache(ttl_s=60)
    assert cache.get(("gpus", None), lambda: "all") == "all"
    assert cache.get(("gpus", "None"), lambda: "node named None") == "node named None"
    assert cache.get(("gpus", None), lambda: "rebuilt") == "all"
    for bad in ("gpus:None", ["gpus", None], (), ("gpus", [1])):
        with pytest.raises(TypeError):
            cache.get(bad, lambda: 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl", [0.0])
def test_no_caching_when_the_ttl_is_zero(ttl):
    cache, build = SnapshotCache(ttl_s=ttl), Counter()
    cache.start()  # no refresher without caching
    assert cache.get(("k",), build) == 1
    assert cache.get(("k",), build) == 2
    cache.stop()
