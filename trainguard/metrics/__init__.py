"""Prometheus metrics of TrainGuard's processes (docs/metrics.md lists every series).

Each process builds its own `CollectorRegistry` in its composition root: nothing is
registered at import time, so tests and several services in one interpreter never share
series. Process counters are read from the stats objects at scrape time; fleet series
are read from the store by a cached collector (trainguard.metrics.fleet).
"""
