"""The cluster's network inventory: which rack a node is in and which leaf switch each NIC uses.

This is what a real cluster's inventory, UFM or LLDP gives. GPU i sends its inter-node
traffic through NIC (rail) i % nics, the rail-optimized convention of GPU clusters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ingest.schema import validation_reason


class FabricError(ValueError):
    """An inventory that cannot describe the fabric (the message says why)."""


class NodeLinks(BaseModel):
    """One node's place in the fabric: its rack and the leaf switch of each rail."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rack: str = Field(min_length=1, description="Rack name.")
    leaves: list[str] = Field(
        min_length=1, description="Leaf switch of each rail, indexed by NIC (rail) number."
    )
    nics: list[str] | None = Field(
        None, description="NIC device name of each rail; default mlx5_<rail>."
    )

    @model_validator(mode="after")
    def _one_nic_per_rail(self) -> NodeLinks:
        if self.nics is not None and len(self.nics) != len(self.leaves):
            raise ValueError(f"{len(self.nics)} NIC names for {len(self.leaves)} rails")
        return self

    def nic_name(self, rail: int) -> str:
        """Return the device name of a rail's NIC."""
        return self.nics[rail] if self.nics is not None else f"mlx5_{rail}"


class Fabric(BaseModel):
    """Node -> rack, and per node and rail the leaf switch it is cabled to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: dict[str, NodeLinks] = Field(description="Every node the inventory knows.")

    def links(self, node: str) -> NodeLinks:
        """Return a node's links, or raise FabricError if the inventory lacks it."""
        try:
            return self.nodes[node]
        except KeyError:
            raise FabricError(f"node {node} is not in the fabric inventory") from None

    def rail_of(self, node: str, gpu: int) -> int:
        """Return the rail (NIC index) a GPU's inter-node traffic uses."""
        return gpu % len(self.links(node).leaves)

    def nic_of(self, node: str, gpu: int) -> str:
        """Return the NIC device a GPU's inter-node traffic uses."""
        return self.links(node).nic_name(self.rail_of(node, gpu))

    def leaf_of(self, node: str, gpu: int) -> str:
        """Return the leaf switch a GPU's inter-node traffic goes through."""
        links = self.links(node)
        return links.leaves[gpu % len(links.leaves)]

    def rack_of(self, node: str) -> str:
        """Return a node's rack."""
        return self.links(node).rack

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Fabric:
        """Validate an inventory mapping, or raise FabricError naming the bad key."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise FabricError(f"fabric inventory {validation_reason(exc)}") from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Fabric:
        """Parse an inventory from JSON, or raise FabricError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FabricError(f"fabric inventory is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise FabricError("fabric inventory must be a JSON object")
        return cls.from_mapping(data)

    @classmethod
    def rail_optimized(
        cls, nodes: Sequence[str], nodes_per_rack: int, nics_per_node: int = 8
    ) -> Fabric:
        """Return the rail-optimized fabric of nodes listed in cabling order.

        Node i is in rack i // nodes_per_rack; rail r of a rack is on `leaf-r{rack:03d}-rail{r}`.
        """
        if nodes_per_rack < 1 or nics_per_node < 1:
            raise FabricError("nodes_per_rack and nics_per_node must be at least 1")
        out: dict[str, NodeLinks] = {}
        for index, node in enumerate(nodes):
            rack = index // nodes_per_rack
            leaves = [leaf_name(rack, rail) for rail in range(nics_per_node)]
            out[node] = NodeLinks(rack=f"rack-{rack:03d}", leaves=leaves)
        return cls(nodes=out)


def leaf_name(rack: int, rail: int) -> str:
    """Return the rail-optimized name of a rack's leaf switch for one rail."""
    return f"leaf-r{rack:03d}-rail{rail}"
