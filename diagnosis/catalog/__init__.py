"""The Xid catalog: NVIDIA's and gpud's text per code, with TrainGuard's documented choice.

Sources: ``xid_catalog.csv`` in this package is a verbatim copy of
``../shared/data/xid_catalog.csv`` (NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors, and
leptonai/gpud ``components/accelerator/nvidia/xid/catalog_generated.go`` / ``xid.go``);
``xid_source.py`` is generated from it by ``python -m diagnosis.catalog.build``, so nothing
reads ../shared at run time. TrainGuard's choices live in ``xid_policy.py`` and are rendered
in diagnosis/CATALOG.md.
"""

from __future__ import annotations

from functools import cache

from diagnosis.catalog.model import Verdict, XidEntry, XidPolicy, XidSource
from diagnosis.catalog.xid_policy import UNKNOWN_XID, xid_policies
from diagnosis.catalog.xid_source import XID_SOURCES

__all__ = [
    "Verdict",
    "XidEntry",
    "XidPolicy",
    "XidSource",
    "all_xid_entries",
    "xid_entry",
]


@cache
def _entries() -> dict[int, XidEntry]:
    """Return every catalogued code joined with its policy; a code without one is an error."""
    policies = xid_policies()
    sources = {s.xid: s for s in XID_SOURCES}
    missing = sorted(set(sources) - set(policies))
    extra = sorted(set(policies) - set(sources))
    if missing or extra:
        raise ValueError(f"Xid policies out of step with the CSV: missing {missing}, extra {extra}")
    return {code: XidEntry(source, policies[code]) for code, source in sorted(sources.items())}


def all_xid_entries() -> tuple[XidEntry, ...]:
    """Return every catalog entry in code order."""
    return tuple(_entries().values())


def xid_entry(code: int) -> XidEntry:
    """Return the entry for `code`; an uncatalogued code gets the documented fallback."""
    entry = _entries().get(code)
    if entry is not None:
        return entry
    return XidEntry(XidSource(code, "", "", "", "", "", "", ""), UNKNOWN_XID)
