"""The log and event explainer: turn raw log text into typed findings.

``explain(text, node=None)`` reads any mix of kernel, NCCL, PyTorch and training lines and
multi-line tracebacks and returns ``Finding`` objects, most severe first. Rules are pure
functions over text (diagnosis/explain/rules*.py); the Xid codes come from diagnosis/catalog.
Every choice is documented in diagnosis/CATALOG.md. ``explain(text, hint=True)`` (the CLI's
``--hint``) adds, where no rule speaks, the learned hint of hint.py: one info finding
(docs/explain.md).
"""

from __future__ import annotations

from diagnosis.explain.engine import explain, explain_records

__all__ = ["explain", "explain_records"]
