"""Lifecycle reports (sleep, decay, consolidate, end_session) as short sentences.

``Report.as_dict()`` lists what every stage changed in the library's own terms; the CLI
and the dashboard show people ``summarize(report)`` instead: what was strengthened,
weakened, archived, consolidated or moved, and why. Stages that changed nothing are left
out; a stage this module does not know is shown by its scalar fields, so a new stage is
never silently hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["summarize"]


def _n(value: Any) -> int:
    """A count that a report gives as a number, a list or a mapping."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, (list, tuple, dict, set)):
        return len(value)
    return 0


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _moved(d: Mapping[str, Any]) -> str | None:
    moved = d.get("moved") or {}
    total = sum(int(v) for v in moved.values()) if isinstance(moved, dict) else _n(moved)
    if not total:
        return None
    where = ", ".join(f"{v} to {k}" for k, v in sorted(moved.items())) if isinstance(moved, dict) else ""
    return f"moved {_plural(total, 'memory', 'memories')} out of working/short-term memory ({where})"


def _expiry(d: Mapping[str, Any]) -> str | None:
    text = _moved(d)
    return f"{text}: older than the short-term lifetime" if text else None


def _selection(d: Mapping[str, Any]) -> str | None:
    s = d.get("summary") or {}
    ltp, ltd = _n(s.get("ltp")), _n(s.get("ltd"))
    created, pruned = _n(s.get("edges_created")), _n(s.get("edges_pruned"))
    parts = []
    if ltp:
        parts.append(f"strengthened {_plural(ltp, 'memory', 'memories')}")
    if ltd:
        parts.append(f"weakened {_plural(ltd, 'memory', 'memories')}")
    if created:
        parts.append(f"created {_plural(created, 'link')}")
    if pruned:
        parts.append(f"pruned {_plural(pruned, 'link')}")
    if not parts:
        return None
    thr = d.get("threshold")
    why = f" (replayed memories scoring above {thr:.2f} were strengthened)" if isinstance(thr, (int, float)) else ""
    return "sleep replay " + ", ".join(parts) + why


def _edge_decay(d: Mapping[str, Any]) -> str | None:
    decayed = _n(d.get("decayed_count", d.get("decayed")))
    pruned = _n(d.get("pruned"))
    if not decayed and not pruned:
        return None
    return (f"associative links: {_plural(decayed, 'link')} weakened with disuse, "
            f"{_plural(pruned, 'weak link')} removed")


def _triple_copy(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("promoted"))
    return f"moved {_plural(n, 'replayed memory', 'replayed memories')} towards long-lasting storage" if n else None


def _schemas(d: Mapping[str, Any]) -> str | None:
    created, extended = _n(d.get("schemas_created")), _n(d.get("schemas_extended"))
    folded = _n(d.get("episodes_consolidated"))
    if not (created or extended or folded):
        return None
    return (f"consolidated {_plural(folded, 'episode')} into general knowledge: "
            f"{_plural(created, 'new schema')}, {_plural(extended, 'schema')} extended")


def _budget(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("archived"))
    return f"archived {_plural(n, 'memory', 'memories')} that added too little information to its layer" if n else None


def _procedures(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("promoted"))
    return f"promoted {_plural(n, 'repeated skill')} to procedural memory" if n else None


def _bayes(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("changed_count", d.get("changed")))
    return (f"updated the confidence of {_plural(n, 'fact')} from the evidence of related facts" if n else None)


def _spectral(d: Mapping[str, Any]) -> str | None:
    bridges = _n(d.get("bridges"))
    fragmented = [c for c, v in (d.get("contexts") or {}).items()
                  if isinstance(v, dict) and isinstance(v.get("fragmented"), list) and v["fragmented"][-1]]
    parts = []
    if fragmented:
        parts.append(f"knowledge graph fragmented in {', '.join(sorted(fragmented))}")
    if bridges:
        parts.append(f"added {_plural(bridges, 'bridge link')} between fragments")
    return "; ".join(parts) or None


def _curiosity(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("queued"))
    return f"queued {_plural(n, 'uncertain fact')} for review (knowledge gaps)" if n else None


def _hyper(d: Mapping[str, Any]) -> str | None:
    changes = d.get("changes") or []
    if not changes:
        return None
    names = sorted({str(c.get("name", c.get("param", "?"))) for c in changes if isinstance(c, dict)})
    return f"retuned {_plural(len(changes), 'parameter')} from retrieval feedback" + (f" ({', '.join(names)})"
                                                                                      if names else "")


def _archive(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("count", d.get("ids")))
    if not n:
        return None
    rs = [float(v) for v in (d.get("retrievability") or {}).values() if isinstance(v, (int, float))]
    why = f" (recall probability fell to {max(rs):.2f} or below)" if rs else " (recall probability fell below threshold)"
    return f"archived {_plural(n, 'memory', 'memories')}{why}; restore brings one back"


def _restore(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("count", d.get("ids")))
    return f"restored {_plural(n, 'archived memory', 'archived memories')} whose recall probability recovered" if n else None


def _review(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("count", d.get("ids")))
    return f"{_plural(n, 'memory is', 'memories are')} fading and due for review" if n else None


def _rescue(d: Mapping[str, Any]) -> str | None:
    n = _n(d.get("rescued"))
    return f"rescued {_plural(n, 'fading memory', 'fading memories')} tagged by a strongly encoded neighbour" if n else None


def _retrievability(d: Mapping[str, Any]) -> str | None:
    n, mean = _n(d.get("memories")), d.get("mean")
    if not n or not isinstance(mean, (int, float)):
        return None
    return f"checked {_plural(n, 'memory', 'memories')}: mean recall probability {mean:.2f}"


_STAGES: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "short_term_expiry": _expiry,
    "moved": lambda d: _moved({"moved": d}),
    "two_factor_hebbian": _edge_decay,
    "simulation_selection_sleep": _selection,
    "triple_copy": _triple_copy,
    "dual_process_cot": _schemas,
    "ib_budget": _budget,
    "procedures": _procedures,
    "bayesian_confidence": _bayes,
    "spectral_kg_health": _spectral,
    "curiosity": _curiosity,
    "metacognitive_hyperagent": _hyper,
    "retrievability": _retrievability,
    "stc_rescue": _rescue,
    "archive": _archive,
    "restore": _restore,
    "review": _review,
}
# Stages that describe state rather than change: summarised only through others.
_QUIET = {"neuromodulator", "compositional_context"}


def _generic(name: str, d: Any) -> str | None:
    if not isinstance(d, Mapping):
        return None
    nums = [f"{k.replace('_', ' ')} {v:g}" for k, v in sorted(d.items())
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v]
    return f"{name.replace('_', ' ')}: " + ", ".join(nums) if nums else None


def summarize(report: Mapping[str, Any]) -> list[str]:
    """The report as sentences, most telling first; ``["nothing changed"]`` when nothing did."""
    lines: list[str] = []
    for name, detail in (report.get("stages") or {}).items():
        if name in _QUIET:
            continue
        fn = _STAGES.get(name)
        text = fn(detail) if fn is not None and isinstance(detail, Mapping) else _generic(name, detail)
        if text:
            lines.append(text)
    return lines or ["nothing changed"]
