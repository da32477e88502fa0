"""Which mechanisms change an outcome through time: every mechanism switched off in turn.

**Rows.** ``full`` (every mechanism on), ``bare`` (``Mechanisms.none()``), ``-NAME`` for every
name of ``zenbrain.registry.ALL_MECHANISMS``, and four rows that change more than one
switch: ``-forgetting`` (both forgetting curves, ``ebbinghaus_decay`` and ``triple_copy``,
off), ``no-sleep`` (the nightly ``sleep`` is not run; ``decay`` still is), ``no-nightly``
(nothing runs at night) and ``flat`` (every turn stored as an episode in the episodic
layer instead of routed). Beside them the baselines ``bm25`` and ``dense``.

**Workloads** (one job per workload, row and unit):

* ``timeline``: longitudinal LoCoMo, one unit per conversation; primary metric
  evidence_recall@5 of the end questions; also the fresh/end pairs and the curated
  update pairs;
* ``updates``: the generated update workload, one unit per seed; primary metric
  ``current_at_1``, secondary ``stale_above``;
* ``noise``: LoCoMo plus injected chatter, one unit per conversation; primary metric
  evidence_recall@5; archived share of noise and of evidence.

**Statistics.** Each row against ``full`` on the same questions (paired): Wilcoxon
signed-rank, exact or conditional where the nonzero differences are few
(``zenbrain.experiments.stats.compare_paired``), a paired BCa bootstrap interval of the
mean difference and Bonferroni over all rows compared with ``full``. ``full`` is also
compared with ``bm25`` and ``dense`` (unadjusted). Each row runs with ``Config(seed=...)``
and ``zenbrain.ids.seeded_ids(seed)``: the same plan gives the same numbers whatever the
number of workers.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ...config import Config
from ...ids import seeded_ids
from ...registry import ALL_MECHANISMS, Mechanisms
from .locomo_timeline import locomo_workload
from .locomo_updates import locomo_update_probes
from .noise import class_shares, noise_pool, noise_workload
from .timeline import (
    LifeStore,
    Probe,
    Protocol,
    StaticTimeline,
    TimedSession,
    TimelineSystem,
    run_unit,
)
from .update_gen import UpdateSpec, generate
from .update_score import score_update

__all__ = [
    "BASELINES",
    "EXTRA_ROWS",
    "PRIMARY",
    "WORKLOADS",
    "Plan",
    "Row",
    "job",
    "make_rows",
    "plan_jobs",
    "summarize",
    "texts_to_embed",
]

WORKLOADS = ("timeline", "updates", "noise")
BASELINES = ("bm25", "dense")
EXTRA_ROWS = ("-forgetting", "no-sleep", "no-nightly", "flat")
PRIMARY = {"timeline": "evidence_recall@5", "updates": "current_at_1", "noise": "evidence_recall@5"}
SECONDARY = {"timeline": ("evidence_recall@10", "hit@5", "ndcg@10", "mrr@10", "precision@5"),
             "updates": ("stale_above", "current_at_k", "current_rr"),
             "noise": ("evidence_recall@10", "precision@5", "ndcg@10")}
KS = (5, 10)
LOCOMO_KEEP = ("evidence_recall@5", "evidence_recall@10", "hit@5", "ndcg@10", "mrr@10", "precision@5")
COUNTERS = ("archived", "restored", "rescued", "schemas_created", "episodes_consolidated", "ib_archived",
            "counterfactuals", "replay_strengths_changed", "deep_promoted", "confidence_changed", "bridges",
            "hyperagent_changes", "edges_decay_pruned")


@dataclass(frozen=True)
class Row:
    name: str
    kind: str = "zenbrain"  # or "baseline"
    disabled: frozenset[str] = frozenset()
    protocol: tuple[tuple[str, Any], ...] = ()  # overrides of Protocol fields


def make_rows(only: Sequence[str] | None = None) -> list[Row]:
    """Every row (see the module docstring), or ``full`` plus those named in ``only``
    (a mechanism's bare name stands for its removal row)."""
    rows = [Row("full"), Row("bare", disabled=frozenset(ALL_MECHANISMS))]
    rows += [Row(f"-{m}", disabled=frozenset({m})) for m in ALL_MECHANISMS]
    rows += [
        Row("-forgetting", disabled=frozenset({"ebbinghaus_decay", "triple_copy"})),
        Row("no-sleep", protocol=(("nightly", ("decay",)),)),
        Row("no-nightly", protocol=(("nightly", ()),)),
        Row("flat", protocol=(("routed", False),)),
    ]
    rows += [Row(b, kind="baseline") for b in BASELINES]
    if only:
        # A mechanism's name stands for its removal ("triple_copy" = "-triple_copy").
        wanted = {f"-{n}" if n in ALL_MECHANISMS else n for n in only}
        known = {r.name for r in rows}
        unknown = sorted(wanted - known)
        if unknown:
            raise ValueError(f"unknown row(s) {unknown}; rows are {sorted(known)}")
        rows = [r for r in rows if r.name == "full" or r.name in wanted]
    return rows


@dataclass(frozen=True)
class Plan:
    """Everything a job needs (plain data, so it crosses process boundaries)."""

    data: str  # the LoCoMo file
    conversations: tuple[str, ...]
    embedder_spec: str
    embedder_name: str
    embedder_dim: int
    cache_path: str | None
    update_seeds: tuple[int, ...] = (0,)
    update_spec: dict[str, Any] = field(default_factory=dict)
    update_mode: str = "new"  # how zenbrain receives a changed value (timeline.UPDATE_MODES)
    noise_per_day: int = 6
    protocol: dict[str, Any] = field(default_factory=dict)
    seed: int = 42

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["conversations"] = list(self.conversations)
        d["update_seeds"] = list(self.update_seeds)
        return d


class _LazyEmbedder:
    """The plan's embedder, built only if a text is missing from the cache (the parent
    embeds every text before the jobs start, so workers normally never load a model)."""

    def __init__(self, spec: str, name: str, dim: int) -> None:
        self.spec, self.name, self.dim = spec, name, dim
        self._inner: Any = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._inner is None:
            from ...providers.factory import make_embedder

            self._inner = make_embedder(self.spec)
        return self._inner.embed(texts)


def plan_embedder(plan: Plan) -> Any:
    from ...providers.cache import CachedEmbedder

    return CachedEmbedder(_LazyEmbedder(plan.embedder_spec, plan.embedder_name, plan.embedder_dim),
                          plan.cache_path, memory_items=1 << 15)


def _protocol(plan: Plan, row: Row) -> Protocol:
    base = dict(plan.protocol)
    if "nightly" in base:
        base["nightly"] = tuple(base["nightly"])
    p = Protocol(**base)
    over = dict(row.protocol)
    return replace(p, **over) if over else p


def _system(plan: Plan, row: Row, embedder: Any) -> TimelineSystem:
    if row.kind == "baseline":
        from ..baselines import BM25System, DenseSystem

        inner: Any = BM25System() if row.name == "bm25" else DenseSystem(embedder, name="dense")
        return StaticTimeline(inner, name=row.name)
    config = Config(mechanisms=Mechanisms(disabled=row.disabled), seed=plan.seed)
    return LifeStore(embedder, config=config, protocol=_protocol(plan, row), name=row.name,
                     update_mode=plan.update_mode)


def _conversations(plan: Plan) -> list[Any]:
    from ..locomo import load_locomo

    return load_locomo(plan.data)


def _workload(plan: Plan, workload: str, unit: str, convs: list[Any] | None = None
              ) -> tuple[list[TimedSession], list[Probe], dict[str, Any]]:
    """(sessions, probes, extras: uses, end_time, classes) of one unit."""
    if workload == "updates":
        spec = UpdateSpec(**{**plan.update_spec, "seed": int(unit.removeprefix("seed"))})
        w = generate(spec)
        return w.sessions, w.probes, {"uses": w.uses, "end_time": w.end_time}
    convs = convs if convs is not None else _conversations(plan)
    conv = next(c for c in convs if c.sample_id == unit)
    if workload == "timeline":
        sessions, probes = locomo_workload(conv)
        _, _, classes = noise_workload(conv, [], per_day=0)  # evidence, low_value, other: no chatter
        return sessions, probes + locomo_update_probes(conv), {"classes": classes}
    if workload == "noise":
        pool = noise_pool(convs)[unit]
        sessions, probes, classes = noise_workload(conv, pool, per_day=plan.noise_per_day, seed=plan.seed)
        return sessions, probes, {"classes": classes}
    raise ValueError(f"unknown workload {workload!r}; workloads are {WORKLOADS}")


def texts_to_embed(plan: Plan, workloads: Sequence[str]) -> list[str]:
    """Every text the plan's jobs will embed (documents and questions), without repeats."""
    convs = _conversations(plan)
    texts: list[str] = []
    units = {w: _units(plan, w) for w in workloads}
    for w in workloads:
        for u in units[w]:
            sessions, probes, _ = _workload(plan, w, u, convs)
            texts += [d.text for s in sessions for d in s.docs]
            texts += [p.question for p in probes]
    return list(dict.fromkeys(t for t in texts if t.strip()))


def _units(plan: Plan, workload: str) -> list[str]:
    if workload == "updates":
        return [f"seed{s}" for s in plan.update_seeds]
    return list(plan.conversations)


def _score(workload: str):
    from ..metrics import locomo_question_metrics

    updates = score_update(5)

    def score(p: Probe, hits: list[tuple[str, str]]) -> dict[str, Any]:
        if "current_ids" in p.extra or "current_value" in p.extra:
            out = updates(p, hits)
            return {"values": out["update_metrics"]}
        m = locomo_question_metrics([d for d, _ in hits], p.gold, KS)
        return {"values": {k: m[k] for k in LOCOMO_KEEP}}
    return score


def job(workload: str, row: str, unit: str, plan: dict[str, Any]) -> dict[str, Any]:
    """One row on one unit of one workload; compact, JSON-safe results. A run that fails
    returns ``{"error": ...}`` instead of raising, so one broken row never costs the others."""
    try:
        return _job(workload, row, unit, plan)
    except Exception as exc:  # noqa: BLE001 - reported in the summary, with its traceback
        import traceback

        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}


def _job(workload: str, row: str, unit: str, plan: dict[str, Any]) -> dict[str, Any]:
    p = Plan(**{**plan, "conversations": tuple(plan["conversations"]), "update_seeds": tuple(plan["update_seeds"])})
    r = next(x for x in make_rows() if x.name == row)
    emb = plan_embedder(p)
    t0 = time.perf_counter()
    try:
        sessions, probes, extra = _workload(p, workload, unit)
        system = _system(p, r, emb)
        try:
            with seeded_ids(p.seed):
                out = run_unit(system, sessions, probes, k=max(KS), uses=extra.get("uses", ()),
                               score=_score(workload), end_time=extra.get("end_time"),
                               after_end=_states if "classes" in extra else None)
        finally:
            system.close()
    finally:
        emb.close()
    records = [{"qid": rec["qid"], "checkpoint": rec["checkpoint"], "group": rec["group"], **rec["values"]}
               for rec in out["records"]]
    life = out["lifecycle"]
    compact = {k: life.get(k) for k in ("nights", "memories", "archived", "active", "edges", "file_bytes",
                                        "lifecycle_seconds", "lifecycle_cpu_seconds", "monitor_hit_rate_last",
                                        "revisions", "cpu_seconds")}
    compact["totals"] = {c: (life.get("totals") or {}).get(c, 0.0) for c in COUNTERS} if r.kind == "zenbrain" else {}
    compact["seconds"] = life.get("seconds")
    result: dict[str, Any] = {"records": records, "lifecycle": compact, "wall_seconds": time.perf_counter() - t0}
    if "doc_states" in out:
        result["shares"] = class_shares(out["doc_states"], extra["classes"])
    if workload == "noise" and "doc_states" in out:
        trace = life.get("trace") or []
        result["active_trace"] = [[round(n["t"]), n["active"], n["archived_total"]] for n in trace[::7]]
    return result


def _states(system: TimelineSystem) -> dict[str, Any]:
    if isinstance(system, LifeStore):
        return {"doc_states": system.doc_states()}
    return {}


def plan_jobs(plan: Plan, workloads: Sequence[str], rows: Sequence[Row]) -> list[Any]:
    """One pool job per (workload, row, unit), the costliest first."""
    from ...experiments.real.pool import Job

    convs = {c.sample_id: c for c in _conversations(plan)}
    jobs = []
    for w in workloads:
        for u in _units(plan, w):
            if w == "updates":
                size = float(UpdateSpec(**plan.update_spec).days * 20)
            else:
                c = convs[u]
                size = float(len(c.docs) + len(c.session_times) * 30)
            for r in rows:
                cost = size * (0.01 if r.kind == "baseline" else 1.0)
                jobs.append(Job((w, r.name, u), f"{__name__}:job",
                                {"workload": w, "row": r.name, "unit": u, "plan": plan.as_dict()}, cost=cost))
    return jobs


# ---------------------------------------------------------------------------- summary
def _paired(results: dict[Hashable, Any], workload: str, row: str, units: Sequence[str], metric: str,
            checkpoint: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for u in units:
        res = results.get((workload, row, u))
        if res is None:
            continue
        for rec in res["records"]:
            if rec["checkpoint"] == checkpoint and metric in rec:
                out[f"{u}/{rec['qid']}"] = float(rec[metric])
    return out


def _mean(values: dict[str, float]) -> float | None:
    return float(np.mean(list(values.values()))) if values else None


def summarize(results: dict[Hashable, Any], plan: Plan, workloads: Sequence[str], rows: Sequence[Row],
              seconds: dict[Hashable, float] | None = None) -> dict[str, Any]:
    """Per workload and row: primary and secondary metrics, lifecycle figures, and the
    paired comparison with ``full`` (Bonferroni over the rows compared). Failed runs are
    left out and listed under ``errors``."""
    from ...experiments.stats import compare_paired

    errors = {"/".join(str(x) for x in k) if isinstance(k, tuple) else str(k): v["error"]
              for k, v in results.items() if "error" in v}
    results = {k: v for k, v in results.items() if "error" not in v}
    out: dict[str, Any] = {"plan": plan.as_dict(), "rows": [r.name for r in rows], "workloads": {}, "errors": errors}
    contrasts = [r.name for r in rows if r.kind == "zenbrain" and r.name != "full"]
    for w in workloads:
        units = _units(plan, w)
        primary = PRIMARY[w]
        checkpoint = "end"
        full = _paired(results, w, "full", units, primary, checkpoint)
        table: dict[str, Any] = {}
        for i, r in enumerate(rows):
            vals = _paired(results, w, r.name, units, primary, checkpoint)
            entry: dict[str, Any] = {"kind": r.kind, primary: _mean(vals), "n": len(vals)}
            for m in SECONDARY[w]:
                entry[m] = _mean(_paired(results, w, r.name, units, m, checkpoint))
            if w == "timeline":
                entry["fresh_" + primary] = _mean(_paired(results, w, r.name, units, primary, "fresh"))
                entry["update_current_at_1"] = _mean(_paired(results, w, r.name, units, "current_at_1", "update"))
                entry["update_stale_above"] = _mean(_paired(results, w, r.name, units, "stale_above", "update"))
            lifes = [results[(w, r.name, u)]["lifecycle"] for u in units if (w, r.name, u) in results]
            if r.kind == "zenbrain" and lifes:
                entry["memories"] = int(sum(x.get("memories") or 0 for x in lifes))
                entry["active"] = int(sum(x.get("active") or 0 for x in lifes))
                entry["archived"] = int(sum(x.get("archived") or 0 for x in lifes))
                entry["lifecycle_seconds"] = float(sum(x.get("lifecycle_seconds") or 0.0 for x in lifes))
                entry["lifecycle_cpu_seconds"] = float(sum(x.get("lifecycle_cpu_seconds") or 0.0 for x in lifes))
                entry["file_bytes"] = int(sum(x.get("file_bytes") or 0 for x in lifes))
                entry["totals"] = {c: float(sum((x.get("totals") or {}).get(c, 0.0) for x in lifes)) for c in COUNTERS}
                rates = [x["monitor_hit_rate_last"] for x in lifes if x.get("monitor_hit_rate_last") is not None]
                entry["monitor_hit_rate"] = float(np.mean(rates)) if rates else None
                revs: dict[str, int] = {}
                for x in lifes:
                    for k, v in (x.get("revisions") or {}).items():
                        revs[k] = revs.get(k, 0) + int(v)
                if revs:
                    entry["revisions"] = revs
            if w in ("noise", "timeline"):
                entry["shares"] = _merge_shares([results[(w, r.name, u)].get("shares") or {} for u in units
                                                 if (w, r.name, u) in results])
            if seconds is not None:
                entry["job_seconds"] = float(sum(seconds.get((w, r.name, u), 0.0) for u in units))
            if r.name != "full" and full:
                keys = sorted(set(full) & set(vals))
                m_tests = len(contrasts) if r.kind == "zenbrain" else 1
                cmp = compare_paired([vals[k] for k in keys], [full[k] for k in keys], seed=100 + i, m_tests=m_tests)
                entry["vs_full"] = _slim(cmp)
            table[r.name] = entry
        out["workloads"][w] = {"primary": primary, "units": units, "rows": table}
    return out


def _slim(cmp: dict[str, Any]) -> dict[str, Any]:
    ci = cmp.get("ci95_difference") or {}
    return {"n": cmp["n"], "difference": cmp["difference"], "p": cmp["p"], "p_bonferroni": cmp["p_bonferroni"],
            "m_tests": cmp["m_tests"], "ci95": [ci.get("low"), ci.get("high")], "cohens_dz": cmp["cohens_dz"],
            "n_nonzero": (cmp.get("wilcoxon") or {}).get("n_nonzero")}


def _merge_shares(parts: list[dict[str, Any]]) -> dict[str, Any]:
    acc: dict[str, dict[str, Any]] = {}
    for part in parts:
        for cls, v in part.items():
            slot = acc.setdefault(cls, {"n": 0, "archived": 0})
            slot["n"] += int(v["n"])
            slot["archived"] += int(v["archived"])
    for slot in acc.values():
        slot["share"] = slot["archived"] / slot["n"] if slot["n"] else None
    return acc
