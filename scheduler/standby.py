"""Warm-standby sizing: the P99 of server failures during a restart window (binomial model)."""

from __future__ import annotations

import math


def failure_probability(rate_per_server_day: float, window_s: float) -> float:
    """Return the chance one server fails within `window_s` at a constant hazard."""
    return 1.0 - math.exp(-rate_per_server_day * window_s / 86_400.0)


def binomial_quantile(n: int, p: float, quantile: float = 0.99) -> int:
    """Return the smallest k with P(X <= k) >= quantile for X ~ Binomial(n, p)."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    log_pmf = n * math.log1p(-p)
    cdf = math.exp(log_pmf)
    k = 0
    ratio = math.log(p) - math.log1p(-p)
    while cdf < quantile and k < n:
        log_pmf += math.log(n - k) - math.log(k + 1) + ratio
        k += 1
        cdf += math.exp(log_pmf)
    return k


def standby_size(
    servers: int, rate_per_server_day: float, window_s: float, quantile: float = 0.99
) -> int:
    """Return how many warm standbys cover `quantile` of failures during one restart window."""
    return binomial_quantile(servers, failure_probability(rate_per_server_day, window_s), quantile)
