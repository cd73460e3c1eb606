"""Streaming diagnosis of several clusters: one `DiagnosisEngine` per cluster.

A node or job name is unique only within its cluster, so every piece of diagnosis state (job
topologies, GPU placements, NIC states, the correlator's open incidents) is kept per cluster;
nothing found in one cluster can attach to, explain or close an incident of another.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from diagnosis.engine import DiagnosisEngine, Fed
from diagnosis.fabric import Fabric
from diagnosis.incidents import Incident, OpenState
from ingest.schema import JobTopology


class ClusterEngines:
    """The diagnosis engine of each cluster heard from, created on its first event."""

    def __init__(self, home: str, fabric: Fabric | None = None) -> None:
        self.home = home  # this worker's own cluster (TG_CLUSTER): the fabric describes it
        self.fabric = fabric
        self.by_cluster: dict[str, DiagnosisEngine] = {}

    def get(self, cluster: str) -> DiagnosisEngine:
        """Return the diagnosis of one cluster."""
        engine = self.by_cluster.get(cluster)
        if engine is None:
            fabric = self.fabric if cluster == self.home else None
            engine = self.by_cluster[cluster] = DiagnosisEngine(fabric, cluster=cluster)
        return engine

    def feed(self, event: Fed, clock: datetime | None = None) -> None:
        """Feed one event to its cluster's diagnosis; move the others' clocks with it.

        Diagnosis time is shared: a cluster gone silent (every rank hung) still has its
        detectors checked while another cluster's telemetry flows.
        """
        target = self.get(event.cluster)
        target.feed(event, clock)
        now = event.ts if clock is None else clock
        for engine in self.by_cluster.values():
            if engine is not target:
                engine.advance(now)

    def advance(self, now: datetime) -> None:
        """Let diagnosis time pass in every cluster."""
        for engine in self.by_cluster.values():
            engine.advance(now)

    def restore_topology(self, topology: JobTopology) -> DiagnosisEngine:
        """Take back a running job's topology into its cluster; return that cluster's engine."""
        engine = self.get(topology.cluster)
        engine.restore(topology)
        return engine

    def restore_states(self, states: Iterable[OpenState], closed: set[str]) -> None:
        """Give each cluster's correlator back its incidents."""
        grouped: dict[str, list[OpenState]] = {}
        for st in states:
            grouped.setdefault(st.cluster, []).append(st)
        for cluster, mine in grouped.items():
            self.get(cluster).correlator.restore(mine, closed)

    def drain_updates(self) -> list[Incident]:
        """Return every cluster's new and changed incidents, in detection order."""
        changed = [i for r in self.by_cluster.values() for i in r.correlator.drain_updates()]
        return sorted(changed, key=lambda i: i.detected_at)

    def states(self, ids: Iterable[str]) -> list[OpenState]:
        """Return the restart state of these incidents, whichever cluster holds them."""
        wanted = list(ids)
        return [st for r in self.by_cluster.values() for st in r.correlator.states(wanted)]

    def close(self, incident_id: str) -> None:
        """Stop attaching to an incident (its id names one cluster's incident at most)."""
        for engine in self.by_cluster.values():
            engine.correlator.close(incident_id)
