"""`trainguard diagnose DIR [--out incidents.json]`: replay a sim run and write its incidents."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from diagnosis.fabric import FabricError
from diagnosis.incidents import Incident
from diagnosis.replay import ReplayError, diagnose_dir
from ingest.schema import SchemaError

SUSPECT_FIELDS: tuple[str, ...] = ("component", "node", "gpu", "nic", "switch", "rank", "score")


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `diagnose`."""
    p = sub.add_parser(
        "diagnose",
        help="diagnose a `sim run` directory into incidents",
        description="Replay a telemetry directory (from `trainguard sim run`) through diagnosis.",
    )
    p.add_argument("dir", type=Path, help="directory written by `trainguard sim run`")
    p.add_argument("--out", type=Path, help="write the incidents here (default: stdout)")
    p.set_defaults(func=cmd_diagnose)


def incident_json(incident: Incident) -> dict[str, object]:
    """Return one incident as the CLI's JSON object."""
    data = incident.model_dump(mode="json")
    data["suspects"] = [
        {name: s[name] for name in SUSPECT_FIELDS} | {"explanation": s["explanation"]}
        for s in data["suspects"]
    ]
    return data


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Diagnose a directory; exit 2 when it is missing or not a readable sim run."""
    try:
        incidents = diagnose_dir(args.dir)
    except (ReplayError, FabricError, SchemaError) as exc:
        print(f"trainguard diagnose: {exc}", file=sys.stderr)
        return 2
    except (OSError, EOFError) as exc:
        print(f"trainguard diagnose: cannot read {args.dir}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps([incident_json(i) for i in incidents], indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"wrote {len(incidents)} incident(s) to {args.out}")
    return 0
