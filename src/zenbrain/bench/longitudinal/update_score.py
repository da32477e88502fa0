"""Scoring an update question: is the current statement ranked first, does a stale one outrank it?

Per question: ``current_at_1`` (the top hit states the current value), ``stale_above`` (a
stale statement ranks above every current one, or a stale one is ranked and no current
one is), ``current_at_k`` and ``current_rr`` (reciprocal rank of the first current hit
within the search depth). A hit is classified by its text when the probe names the
entity and values (generated workloads), else by its document id (LoCoMo, LongMemEval).
"""

from __future__ import annotations

from typing import Any

from .timeline import Probe

__all__ = ["UPDATE_METRICS", "classify", "score_update"]

UPDATE_METRICS = ("current_at_1", "stale_above", "current_at_k", "current_rr")


def classify(probe: Probe, doc_id: str, text: str) -> str:
    """``current``, ``stale`` or ``other`` for one hit of an update question."""
    ex = probe.extra
    if "current_value" in ex:
        low = text.lower()
        if str(ex["entity"]).lower() not in low:
            return "other"
        if str(ex["current_value"]).lower() in low:
            return "current"
        if any(str(v).lower() in low for v in ex.get("stale_values") or ()):
            return "stale"
        return "other"
    if doc_id in set(ex.get("current_ids") or ()):
        return "current"
    if doc_id in set(ex.get("stale_ids") or ()):
        return "stale"
    return "other"


def score_update(k: int):
    """A ``run_unit`` score function for update probes (top ``k`` for ``current_at_k``)."""
    def score(p: Probe, hits: list[tuple[str, str]]) -> dict[str, Any]:
        labels = [classify(p, d, t) for d, t in hits]
        cur = next((i for i, lab in enumerate(labels) if lab == "current"), None)
        stale = next((i for i, lab in enumerate(labels) if lab == "stale"), None)
        return {
            "labels": labels,
            "update_metrics": {
                "current_at_1": float(cur == 0),
                "stale_above": float(stale is not None and (cur is None or stale < cur)),
                "current_at_k": float(cur is not None and cur < k),
                "current_rr": 0.0 if cur is None else 1.0 / (cur + 1),
            },
        }
    return score
