"""One-at-a-time ablation of the paper's fifteen mechanisms, on the real coordinator.

Mapping of the paper's protocol (REFERENCE.md 3.2-3.4) onto zenbrain:

* **Data** - the protocol's synthetic distributions (``synthetic.make_workload``): F facts,
  Q queries with 1-3 relevant facts each, 20 % of facts emotional (affect words the real
  tagger reads). Facts are stored at t0 with one ``store_many`` as episodic memories.
* **"Base decay r per day"** - the Ebbinghaus initial stability ``S0 = 1 / r`` days
  (``EbbinghausParams(default_stability=1/r)``): an untouched, neutral memory's
  retrievability is ``exp(-r t)``, the protocol's per-day decay. Everything else keeps
  its default parameters.
* **Ageing** - the clock advances in sessions every ``session_every`` days up to the
  horizon. The system is *used* during ageing, because use is what zenbrain's
  mechanisms act on (the protocol's simulation has no accesses during ageing, so on the
  real system it would only measure the forgetting curve): each query of the workload is
  asked once, with ``recall(touch=True)``, in a session drawn uniformly for it; then up to
  ``reviews_per_session`` memories of ``review_queue`` are reviewed (remembered with
  probability equal to their retrievability); then the night's ``sleep()`` runs (its last
  stages are decay: STC rescue, archive, restore). Between sessions no operation runs: the
  forgetting curves are closed-form in time, so skipping idle days changes nothing except
  that sleep runs once per session instead of every night (documented trade-off).
* **Evaluation** - the morning after the last session: retention (harness), then every
  query once with ``recall(touch=False)``.
* **Configurations** - full (all mechanisms on), each of the 15 switched off alone, no-PMA
  (the six PMA mechanisms off), bare (all 15 off). Mechanisms outside the fifteen
  (Ebbinghaus, FSRS, emotional tagging, query-aware fusion, BM25 hybrid, Bayesian
  confidence, STC rescue, curiosity, global workspace, prospective memory) stay on in
  every row, bare included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from zenbrain.config import Config, MechanismParams
from zenbrain.ids import seeded_ids
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams
from zenbrain.params import Params
from zenbrain.registry import PAPER_FIFTEEN, PMA, Mechanisms

from .harness import DAY, K, eval_queries, open_run, retention_of, review_due
from .synthetic import SyntheticEmbedder, make_workload

__all__ = ["CONDITIONS", "PROTOCOL", "Condition", "Protocol", "configurations", "run_one", "stability_for"]


@dataclass(frozen=True)
class Condition:
    name: str
    n_facts: int
    n_queries: int
    aging_days: int
    base_decay: float


CONDITIONS: dict[str, Condition] = {
    "moderate": Condition("moderate", 300, 100, 45, 0.15),
    "challenging": Condition("challenging", 400, 120, 50, 0.20),
    "stress": Condition("stress", 500, 150, 60, 0.25),
}


@dataclass(frozen=True)
class Protocol:
    session_every: int = 5  # days between usage sessions (and sleeps)
    reviews_per_session: int = 5
    queries_used: float = 1.0  # times each query is asked during ageing (expected)


PROTOCOL = Protocol()


def stability_for(base_decay: float) -> float:
    """S0 in days for a per-day decay rate r: exp(-t / S0) = exp(-r t)."""
    return 1.0 / float(base_decay)


def configurations(only: Sequence[str] | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """The ablation's rows: full, each of the fifteen off alone, no-PMA, bare.

    ``only``: run just these rows besides ``full`` (mechanism names, ``no_pma``, ``bare``),
    e.g. ``["triple_copy"]`` for full against full without TripleCopy. Every row is the
    same with or without the others: each run depends only on its configuration and seed.
    """
    rows: list[tuple[str, tuple[str, ...]]] = [("full", ())]
    rows += [(f"-{name}", (name,)) for name in PAPER_FIFTEEN]
    rows.append(("no_pma", tuple(PMA)))
    rows.append(("bare", tuple(PAPER_FIFTEEN)))
    if only is None:
        return rows
    names = {"full", "no_pma", "bare", *(f"-{m}" for m in PAPER_FIFTEEN)}
    wanted = {"full"}
    for name in only:
        key = name if name in ("full", "no_pma", "bare") else f"-{name.removeprefix('-')}"
        if key not in names:
            from zenbrain.errors import ConfigError

            raise ConfigError(f"unknown ablation row {name!r}; rows are the fifteen mechanisms "
                              f"({', '.join(PAPER_FIFTEEN)}), no_pma and bare")
        wanted.add(key)
    return [r for r in rows if r[0] in wanted]


def make_config(disabled: Sequence[str], base_decay: float, seed: int, **params: Params) -> Config:
    return Config(
        mechanisms=Mechanisms(disabled=frozenset(disabled)),
        params=MechanismParams.of({"ebbinghaus_decay": EbbinghausParams(default_stability=stability_for(base_decay)),
                                   **params}),
        seed=int(seed),
    )


def session_days(aging_days: int, every: int) -> list[int]:
    out = list(range(every, aging_days + 1, every))
    if not out or out[-1] != aging_days:
        out.append(aging_days)
    return out


def usage_plan(seed: int, n_queries: int, n_sessions: int, times: float = 1.0) -> list[list[int]]:
    """Which queries are asked in which session: part of the workload, the same for every
    configuration of a seed."""
    rng = np.random.default_rng([int(seed), 1])
    plan: list[list[int]] = [[] for _ in range(n_sessions)]
    whole = int(times)
    for _ in range(whole):
        for q, s in enumerate(rng.integers(n_sessions, size=n_queries)):
            plan[int(s)].append(q)
    frac = times - whole
    if frac > 0:
        pick = rng.random(n_queries) < frac
        for q, s in zip(np.flatnonzero(pick).tolist(), rng.integers(n_sessions, size=int(pick.sum()))):
            plan[int(s)].append(int(q))
    return plan


def _graph_fiedler(run: Any) -> dict[str, float]:
    """lambda_2 of the memory graph (every association edge among active memories; provenance
    edges excluded), through the library's own spectral health routine."""
    from zenbrain.mechanisms.spectral import health
    from zenbrain.state import PROVENANCE
    from zenbrain.storage.base import Filter

    active = {i.id for i in run.coord.storage.query(run.part, Filter(contexts=None, session_id=None))}
    edges = [e for e in run.coord.storage.edges(run.part) if e.relation not in PROVENANCE
             and e.src in active and e.dst in active and e.src != e.dst]
    nodes = sorted({x for e in edges for x in (e.src, e.dst)})
    if len(nodes) < 2:
        return {"fiedler": 0.0, "nodes": len(nodes), "edges": len(edges), "components": len(nodes)}
    pos = {m: k for k, m in enumerate(nodes)}
    src = np.fromiter((pos[e.src] for e in edges), np.int64, len(edges))
    dst = np.fromiter((pos[e.dst] for e in edges), np.int64, len(edges))
    w = np.fromiter((e.weight for e in edges), float, len(edges))
    params = run.coord.config.params.spectral_kg_health
    h = health(n=len(nodes), src=src, dst=dst, weight=w, params=params)
    return {"fiedler": float(h.fiedler), "nodes": len(nodes), "edges": len(edges), "components": int(h.n_components)}


def simulate(
    cond: Condition,
    disabled: Sequence[str],
    seed: int,
    protocol: Protocol = PROTOCOL,
    *,
    checkpoints: Sequence[float] = (),
    eval_days: Sequence[float] | None = None,
    fiedler: bool = False,
    per_query: bool = False,
    noise: float = 0.1,
) -> dict[str, Any]:
    """Store, use and age one configuration through the real coordinator.

    ``checkpoints``: days at which retention (all, emotional, neutral) is read, before any
    event of that moment. ``eval_days``: days at which every query is evaluated with
    ``recall(touch=False)`` (default: the morning after the horizon). ``fiedler``: lambda_2
    of the memory graph just before and just after the last sleep.
    """
    work = make_workload(seed, cond.n_facts, cond.n_queries, noise=noise)
    emb = SyntheticEmbedder(work.table())
    config = make_config(disabled, cond.base_decay, seed)
    sessions = session_days(cond.aging_days, protocol.session_every)
    plan = usage_plan(seed, cond.n_queries, len(sessions), protocol.queries_used)
    review_rng = np.random.default_rng([int(seed), 2])
    evals = [float(cond.aging_days + 1)] if eval_days is None else [float(d) for d in eval_days]
    # (day, order, kind, payload); order puts reads before writes at the same moment
    events: list[tuple[float, int, str, Any]] = []
    events += [(float(c), 0, "checkpoint", None) for c in checkpoints]
    events += [(d, 1, "eval", None) for d in evals]
    for i, (session_day, asked) in enumerate(zip(sessions, plan)):
        events.append((float(session_day), 2, "use", asked))
        events.append((session_day + 0.5, 3, "sleep", i == len(sessions) - 1))
    events.sort(key=lambda e: (e[0], e[1]))
    emo = work.emotional
    timeline: list[dict[str, float]] = []
    evaluations: list[dict[str, Any]] = []
    graph: dict[str, Any] = {}
    reviewed = good = 0
    sleep_summary = {"ltp": 0, "ltd": 0, "counterfactuals": 0, "edges_created": 0, "edges_pruned": 0,
                     "archived": 0, "rescued": 0, "schemas": 0}
    with seeded_ids(seed):
        run = open_run(emb, config)
        try:
            run.store_facts(work.fact_texts)
            t0 = run.clock.now()
            for day, _, kind, payload in events:
                run.advance_to(t0 + day * DAY)
                if kind == "checkpoint":
                    r = retention_of(run)
                    kept = r["retained"]
                    timeline.append({"day": day, "retention": r["retention"], "mean_retrievability": r["mean_r"],
                                     "emotional": float(kept[emo].mean()) if emo.any() else float("nan"),
                                     "neutral": float(kept[~emo].mean()) if (~emo).any() else float("nan")})
                elif kind == "eval":
                    r = retention_of(run)
                    kept = r["retained"]
                    m = eval_queries(run, work, per_query=per_query)
                    evaluations.append({
                        "day": day, "retention": r["retention"], "mean_retrievability": r["mean_r"],
                        "archived": r["archived"],
                        "retention_emotional": float(kept[emo].mean()) if emo.any() else float("nan"),
                        "retention_neutral": float(kept[~emo].mean()) if (~emo).any() else float("nan"),
                        **m, "quality": r["retention"] * m["recall5"],
                    })
                elif kind == "use":
                    for q in payload:
                        run.coord.recall(work.query_texts[q], run.scope, k=K, touch=True)
                    rv = review_due(run, review_rng, protocol.reviews_per_session)
                    reviewed += rv["reviewed"]
                    good += rv["good"]
                else:  # sleep
                    if fiedler and payload:
                        graph["before"] = _graph_fiedler(run)
                    rep = run.coord.sleep(run.scope)
                    _add_sleep_summary(sleep_summary, rep.stages)
                    if fiedler and payload:
                        graph["after"] = _graph_fiedler(run)
            stats = run.coord.stats(run.scope)
        finally:
            run.close()
    final = evaluations[-1] if evaluations else {}
    return {
        **final,
        "evaluations": evaluations,
        "timeline": timeline,
        "graph": graph,
        "reviews": reviewed,
        "reviews_good": good,
        "sleep": sleep_summary,
        "memories": stats["memories"],
        "archived_memories": stats["archived"],
        "edges": stats["edges"],
    }


def _add_sleep_summary(acc: dict[str, int], stages: dict[str, Any]) -> None:
    sel = stages.get("simulation_selection_sleep") or {}
    summ = sel.get("summary") or {}
    acc["ltp"] += int(summ.get("ltp", 0))
    acc["ltd"] += int(summ.get("ltd", 0))
    acc["counterfactuals"] += int(summ.get("counterfactuals", 0))
    acc["edges_created"] += int(summ.get("edges_created", 0)) + len((stages.get("spectral_kg_health") or {}).get("bridges", []) or [])
    acc["edges_pruned"] += int(summ.get("edges_pruned", 0)) + len((stages.get("two_factor_hebbian") or {}).get("pruned", []) or [])
    acc["archived"] += int((stages.get("archive") or {}).get("count", 0))
    acc["rescued"] += int((stages.get("stc_rescue") or {}).get("rescued", 0))
    acc["schemas"] += len((stages.get("dual_process_cot") or {}).get("schemas_created", []) or [])


def run_one(cond: Condition, disabled: Sequence[str], seed: int, protocol: Protocol = PROTOCOL) -> dict[str, Any]:
    """One configuration, one seed of the ablation: the metrics of the final evaluation."""
    out = simulate(cond, disabled, seed, protocol)
    out.pop("evaluations", None)
    out.pop("timeline", None)
    out.pop("graph", None)
    out["protocol"] = asdict(protocol)
    return out


# ---------------------------------------------------------------------------- jobs and summary
QUICK_SCALE = 5  # --quick divides facts and queries by this


def condition_for(name: str, quick: bool = False) -> Condition:
    c = CONDITIONS[name]
    if not quick:
        return c
    return Condition(c.name, max(20, c.n_facts // QUICK_SCALE), max(8, c.n_queries // QUICK_SCALE), c.aging_days, c.base_decay)


def jobs(seeds: Sequence[int], quick: bool = False, conditions: Sequence[str] = tuple(CONDITIONS),
         only: Sequence[str] | None = None) -> list:
    from .pool import Job

    out = []
    for cname in conditions:
        cond = condition_for(cname, quick)
        for cfg, disabled in configurations(only):
            for seed in seeds:
                out.append(Job(("ablation", cname, cfg, int(seed)), f"{__name__}:run_one",
                               dict(cond=cond, disabled=disabled, seed=int(seed)), cost=cond.n_facts * cond.aging_days))
    return out


METRICS = ("retention", "mean_retrievability", "recall5", "precision5", "ndcg5", "mrr5", "recall5_schema_credit", "quality")


def summarize(results: dict, seeds: Sequence[int], quick: bool = False,
              conditions: Sequence[str] = tuple(CONDITIONS), only: Sequence[str] | None = None) -> dict[str, Any]:
    from ..stats import compare_paired, describe

    out: dict[str, Any] = {}
    m = len(PAPER_FIFTEEN)
    for cname in conditions:
        cond = condition_for(cname, quick)
        chosen = configurations(only)
        per = {cfg: [results[("ablation", cname, cfg, int(s))] for s in seeds] for cfg, _ in chosen}
        # A row's bootstrap seed is its place among all rows, so a row reads the same in any selection.
        place = {cfg: i for i, (cfg, _) in enumerate(configurations())}
        full_q = [r["quality"] for r in per["full"]]
        rows: dict[str, Any] = {}
        for cfg, disabled in chosen:
            idx = place[cfg]
            runs = per[cfg]
            row: dict[str, Any] = {"disabled": list(disabled)}
            for key in METRICS:
                row[key] = describe([r[key] for r in runs])
            row["retention_emotional"] = describe([r["retention_emotional"] for r in runs])
            row["retention_neutral"] = describe([r["retention_neutral"] for r in runs])
            row["sleep"] = {k: float(np.mean([r["sleep"][k] for r in runs])) for k in runs[0]["sleep"]}
            row["reviews"] = float(np.mean([r["reviews"] for r in runs]))
            row["edges"] = float(np.mean([r["edges"] for r in runs]))
            if cfg != "full":
                q = [r["quality"] for r in runs]
                single = len(disabled) == 1
                cmp_q = compare_paired(q, full_q, seed=1000 + idx, m_tests=m if single else 1)
                row["vs_full"] = {
                    "quality": cmp_q,
                    "delta_q_rel": cmp_q["relative_change"],
                    "delta_retention": row["retention"]["mean"] - float(np.mean([r["retention"] for r in per["full"]])),
                    "delta_recall5": row["recall5"]["mean"] - float(np.mean([r["recall5"] for r in per["full"]])),
                    "bonferroni_family": m if single else None,
                }
            rows[cfg] = row
        out[cname] = {"condition": asdict(cond), "stability_days": stability_for(cond.base_decay),
                      "seeds": [int(s) for s in seeds], "protocol": asdict(PROTOCOL), "rows": rows}
    return out
