"""Stop long-running processes cleanly on SIGTERM and SIGINT."""

from __future__ import annotations

import logging
import signal
import threading

log = logging.getLogger(__name__)


def stop_on_signals() -> threading.Event:
    """Return an event that SIGTERM or SIGINT sets."""
    stop = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        log.info("received signal %d, stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop
