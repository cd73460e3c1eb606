"""Name a reader's communicators the way a discovered topology names them.

Readers outside the job know communicators by their own ids: Flight Recorder dumps by process
group name (``"3"``), NCCL RAS by communicator hash. A topology discovered from the launch
command names its groups ``tp-0``, ``dp-1``, ... and the world ``"0"``. Both know the member
ranks, so a communicator is the topology's group with the same ranks; its records are renamed
to it, and get the topology's node names (RAS reports IP addresses). Records on a
communicator the topology does not have keep their id.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ingest.schema import CollectiveProgress, JobTopology


def comm_aliases(members: Mapping[str, Sequence[int]], topology: JobTopology) -> dict[str, str]:
    """Return reader id -> topology id for every communicator whose ranks the topology has."""
    by_ranks: dict[frozenset[int], str] = {}
    for c in topology.communicators:
        by_ranks.setdefault(frozenset(c.ranks), c.comm)  # the world "0" before same-size groups
    return {
        cid: by_ranks[frozenset(ranks)]
        for cid, ranks in members.items()
        if frozenset(ranks) in by_ranks
    }


def align_progress(
    progress: Iterable[CollectiveProgress],
    members: Mapping[str, Sequence[int]],
    topology: JobTopology,
) -> list[CollectiveProgress]:
    """Return the records on the topology's communicator ids and node names."""
    aliases = comm_aliases(members, topology)
    nodes = {p.rank: p.node for p in topology.ranks}
    out = []
    for p in progress:
        data = p.model_dump(exclude={"id"})  # the id hashes the communicator: computed anew
        data.update(
            job_id=topology.job_id,
            comm=aliases.get(p.comm, p.comm),
            node=nodes.get(p.rank, p.node),
        )
        out.append(CollectiveProgress.model_validate(data))
    return out


def dump_members(dumps: Mapping[int, Mapping[str, Any]]) -> dict[str, list[int]]:
    """Return each process group's ranks from per-rank Flight Recorder dumps.

    ``pg_config[name]["ranks"]`` where the recorder fills it (NCCL); otherwise the ranks whose
    dump has entries on the group (gloo in PyTorch 2.15 leaves ``pg_config`` unnamed).
    """
    configured: dict[str, set[int]] = defaultdict(set)
    seen: dict[str, set[int]] = defaultdict(set)
    for rank, dump in dumps.items():
        for name, cfg in (dump.get("pg_config") or {}).items():
            ranks = _ranks(cfg.get("ranks") if isinstance(cfg, Mapping) else None)
            if name and ranks:
                configured[str(name)].update(ranks)
        for entry in dump.get("entries") or []:
            pg = entry.get("process_group") or (str(entry.get("pg_id", "0")), "")
            seen[str(pg[0])].add(rank)
    merged = {**seen, **configured}
    return {name: sorted(ranks) for name, ranks in merged.items()}


def _ranks(value: object) -> list[int]:
    """Return the ranks of a pg_config entry (a list, or its text ``"[0, 1]"``)."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return []
    if isinstance(value, (list, tuple)) and all(isinstance(r, int) for r in value):
        return list(value)
    return []
