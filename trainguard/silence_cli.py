"""`trainguard act silence`: maintenance windows the action engine honours, from a shell.

    trainguard act silence add --node 'gpu-01*' --for 2h --author alice --reason "rack 1 fw"
    trainguard act silence list [--all]
    trainguard act silence delete mw-0123456789abcdef --author alice

Writes go straight to the store (TG_CLICKHOUSE_* settings), like the engine itself; the API's
/v1/silences does the same for callers with an operator token.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError

from ingest.schema import validation_reason

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(text: str) -> timedelta:
    """Parse `90m`, `2h`, `1d` into a timedelta (argparse type)."""
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration like 30m, 2h or 1d")
    return timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def moment(text: str) -> datetime:
    """Parse an ISO 8601 time with a zone (argparse type)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: an ISO 8601 time") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r}: give a time zone (e.g. Z or +01:00)")
    return value


def add_silence_parser(act_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `act silence add|list|delete`."""
    p = act_sub.add_parser(
        "silence",
        help="maintenance windows: actions they match are skipped",
        description="Maintenance windows (silences): the engine executes no action they match.",
    )
    sub = p.add_subparsers(dest="silence_command", required=True)
    add = sub.add_parser("add", help="create a window")
    for matcher in ("node", "job", "cluster", "category"):
        add.add_argument(f"--{matcher}", default="", help=f"{matcher} glob (fnmatch)")
    add.add_argument("--start", type=moment, help="ISO 8601 with zone (default: now)")
    end = add.add_mutually_exclusive_group(required=True)
    end.add_argument("--end", type=moment, help="ISO 8601 with zone")
    end.add_argument("--for", dest="length", type=duration, help="e.g. 90m, 2h, 1d")
    add.add_argument("--author", required=True, help="who (recorded in the audit)")
    add.add_argument("--reason", required=True, help="why (recorded in the audit)")
    listing = sub.add_parser("list", help="windows not over yet (--all: every one)")
    listing.add_argument("--all", action="store_true", help="also ended and deleted windows")
    delete = sub.add_parser("delete", help="delete a window: it stops matching at once")
    delete.add_argument("window_id")
    delete.add_argument("--author", required=True, help="who deletes it")
    p.set_defaults(func=cmd_silence)


def cmd_silence(args: argparse.Namespace) -> int:
    """Run one silence subcommand; print JSON; 2 on bad input, 1 on an unknown window."""
    from actions.silences import (
        WindowNotFound,
        WindowSpec,
        create_window,
        delete_window,
        list_windows,
    )
    from analytics.migrations import migrate
    from trainguard.settings import StoreSettings
    from trainguard.wiring import build_store

    store = build_store(StoreSettings())
    try:
        migrate(store)
        now = datetime.now(UTC)
        if args.silence_command == "add":
            start = args.start or now
            try:
                spec = WindowSpec(
                    node=args.node,
                    job=args.job,
                    cluster=args.cluster,
                    category=args.category,
                    starts_at=start,
                    ends_at=args.end or start + args.length,
                    reason=args.reason,
                )
            except ValidationError as exc:
                print(f"trainguard act silence: {validation_reason(exc)}")
                return 2
            print(create_window(store, spec, author=args.author).model_dump_json())
            return 0
        if args.silence_command == "delete":
            try:
                gone = delete_window(store, args.window_id, actor=args.author)
            except WindowNotFound as exc:
                print(f"trainguard act silence: {exc}")
                return 1
            print(gone.model_dump_json())
            return 0
        windows = list_windows(store, include_deleted=args.all)
        shown = [w for w in windows if args.all or w.ends_at > now]
        print(json.dumps([w.model_dump(mode="json") for w in shown], indent=2))
        return 0
    finally:
        store.close()
