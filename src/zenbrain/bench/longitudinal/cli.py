"""Command line of the longitudinal benchmarks.

``register(bench_subs, locomo=...)`` (called by :func:`zenbrain.bench.commands.register`) adds

* ``--timeline`` and its options to ``zenbrain bench locomo``;
* ``zenbrain bench updates``: knowledge that changes (generated, LoCoMo pairs, LongMemEval);
* ``zenbrain bench noise``: chatter beside the facts that matter;
* ``zenbrain bench mechanisms``: every mechanism switched off in turn on these workloads.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...cli_support import (
    CACHE_FILE,
    EXIT_OK,
    cache_dir,
    command,
    embedder_spec,
    make_config,
    off_names,
    parse_ints,
    split_list,
    status,
)
from ...errors import ConfigError
from ..embedding import bench_embedder
from ..inputs import load_conversations
from ..names import BENCH_SYSTEMS
from ..systems import make_systems

__all__ = ["register"]

QUICK_CONVERSATIONS = ("conv-26",)
QUICK_UPDATES = {"entities": 30, "pairs": 40, "static": 20, "days": 45}
TIMELINE_SYSTEMS = ("zenbrain", "bm25", "dense", "hybrid")


# --------------------------------------------------------------------------- options
def _protocol_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("timeline protocol")
    g.add_argument("--context-k", type=int, default=5, metavar="K",
                   help="before storing each turn the agent recalls with it, k hits, read-write (default 5; 0: no use)")
    g.add_argument("--nightly", default="decay,sleep", metavar="OPS",
                   help="what runs every simulated night, in order (default decay,sleep; 'none' for nothing)")
    g.add_argument("--flat", action="store_true",
                   help="also run zenbrain storing every turn as an episode in the episodic layer ('zenbrain-flat')")


def _protocol(args: argparse.Namespace) -> Any:
    from .timeline import Protocol

    nightly = () if args.nightly.strip() in ("", "none") else tuple(split_list(args.nightly))
    try:
        return Protocol(context_k=args.context_k, nightly=nightly)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


Runner = Callable[[argparse.Namespace], int]


def register(bench_subs: Any, *, locomo: argparse.ArgumentParser, checked: Callable[[Runner], Runner]) -> None:
    """Add the longitudinal options and commands; ``checked`` wraps each runner with the
    check that the 'bench' extra is installed."""
    g = locomo.add_argument_group("longitudinal mode")
    g.add_argument("--timeline", action="store_true",
                   help="store each session at its own date on a simulated clock, decay and sleep every night, ask "
                        "questions after the last session and right after their last evidence; static mode runs beside")
    g.add_argument("--no-static", action="store_true", help="with --timeline: skip the static run")
    g.add_argument("--no-views", action="store_true",
                   help="with --timeline: skip the read-only diagnostic re-rankings of the final store")
    g.add_argument("--no-update-pairs", action="store_true", help="with --timeline: skip the curated LoCoMo update questions")
    _protocol_options(locomo)
    static_func = locomo.get_default("func")
    timeline_func = checked(cmd_locomo_timeline)
    locomo.set_defaults(func=lambda args: timeline_func(args) if args.timeline else static_func(args))

    p = command(bench_subs, "updates", checked(cmd_updates),
                "knowledge that changes: is the current fact ranked first, does the stale one outrank it?", scope=False)
    p.add_argument("--systems", default="zenbrain,bm25,dense", metavar="S[,S]", help="zenbrain, bm25, dense, hybrid")
    p.add_argument("--modes", default="new,supersede", metavar="M[,M]",
                   help="how zenbrain receives a new value: new (a new memory with its event time; zenbrain may "
                        "detect the change), supersede (store(..., supersedes=old id)), update (update() on the old "
                        "one), revise (revise()), correct (revise(correction=True)); default new,supersede")
    p.add_argument("--seeds", default="0", metavar="N[,N]", help="generator seeds (default 0)")
    p.add_argument("--entities", type=int, default=None, metavar="N")
    p.add_argument("--pairs", type=int, default=None, metavar="N", help="chains of changing values (default 120)")
    p.add_argument("--static", type=int, default=None, metavar="N", help="facts that never change (default 60)")
    p.add_argument("--days", type=int, default=None, metavar="N", help="simulated days (default 90)")
    p.add_argument("--filler-per-day", type=int, default=None, metavar="N", help="unrelated statements a day (default 6)")
    p.add_argument("--quick", action="store_true", help="a smaller workload: 30 entities, 40 chains, 20 static, 45 days")
    p.add_argument("--locomo", action="store_true", help="also the curated LoCoMo update pairs (lives through their conversations)")
    p.add_argument("--longmemeval", metavar="PATH", help="also the knowledge-update items of this LongMemEval file")
    p.add_argument("--lme-types", default="knowledge-update", metavar="T[,T]",
                   help="LongMemEval question types to run (default knowledge-update)")
    p.add_argument("--lme-limit", type=int, default=None, metavar="N", help="at most N LongMemEval items")
    p.add_argument("--data", metavar="PATH", help="LoCoMo file or data folder (for --locomo)")
    p.add_argument("--no-views", action="store_true", help="skip the read-only diagnostic re-rankings of the final stores")
    p.add_argument("--out", default=os.path.join("results", "updates"), metavar="DIR")
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk embedding cache")
    p.add_argument("--no-progress", action="store_true")
    _protocol_options(p)

    p = command(bench_subs, "noise", checked(cmd_noise), "low-value chatter beside the facts that matter, over simulated weeks",
                scope=False)
    p.add_argument("--data", metavar="PATH", help="LoCoMo file or data folder")
    p.add_argument("--conversations", default="all", metavar="N|all|ID[,ID]")
    p.add_argument("--systems", default="zenbrain,bm25,dense", metavar="S[,S]")
    p.add_argument("--ablate", metavar="NAME", nargs="+", action="extend", default=[],
                   help="add zenbrain with mechanism NAME off (NAME+NAME: several off in one system)")
    p.add_argument("--per-day", type=int, default=6, metavar="N", help="chatter turns on each day without a session")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_CONVERSATIONS)}")
    p.add_argument("--out", default=os.path.join("results", "noise"), metavar="DIR")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    _protocol_options(p)

    p = command(bench_subs, "mechanisms", checked(cmd_mechanisms),
                "every mechanism switched off in turn on the longitudinal workloads, paired statistics", scope=False)
    p.add_argument("--data", metavar="PATH", help="LoCoMo file or data folder")
    p.add_argument("--workloads", default="timeline,updates,noise", metavar="W[,W]")
    p.add_argument("--only", metavar="ROW[,ROW]", help="only these rows besides full (e.g. -triple_copy,bare,bm25)")
    p.add_argument("--conversations", default="all", metavar="N|all|ID[,ID]")
    p.add_argument("--update-seeds", default="0", metavar="N[,N]")
    p.add_argument("--update-mode", default="new", metavar="MODE",
                   help="how zenbrain receives a changed value in the updates workload (see 'bench updates --modes'; "
                        "default new)")
    p.add_argument("--noise-per-day", type=int, default=6, metavar="N")
    p.add_argument("--seed", type=int, default=42, help="Config.seed and the seeded ids of every run")
    p.add_argument("--quick", action="store_true",
                   help=f"only {', '.join(QUICK_CONVERSATIONS)} and the smaller update workload")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: one per CPU)")
    p.add_argument("--context-k", type=int, default=5, metavar="K")
    p.add_argument("--out", default=os.path.join("results", "mechanisms"), metavar="DIR")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in DIR/runs.jsonl (same plan) and run only the missing ones")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--no-progress", action="store_true")


# --------------------------------------------------------------------------- helpers
def _prewarm(embedder: Any, texts: Sequence[str], chunk: int = 1024) -> dict[str, Any]:
    texts = list(dict.fromkeys(t for t in texts if t.strip()))
    before = embedder.stats.misses
    t0 = time.perf_counter()
    for i in range(0, len(texts), chunk):
        embedder.embed(texts[i : i + chunk])
    fresh = embedder.stats.misses - before
    sec = time.perf_counter() - t0
    status(f"embeddings: {len(texts)} distinct texts, {fresh} embedded in {sec:.1f} s, {len(texts) - fresh} from the cache")
    return {"texts": len(texts), "embedded": fresh, "seconds": sec}


def _timeline_systems(names: Sequence[str], ablations: Sequence[str], embedder: Any, config: Any, protocol: Any,
                      *, flat: bool, views: Sequence[str] = ()) -> list[Any]:
    from ..baselines import BM25System, DenseSystem, HybridRRFSystem
    from .timeline import LifeStore, StaticTimeline

    unknown = [n for n in names if n not in TIMELINE_SYSTEMS]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)} for the timeline; systems are {', '.join(TIMELINE_SYSTEMS)}")
    from ...registry import check_names

    for a in ablations:
        check_names(a.split("+"))  # "a+b" switches both off in one system
    out: list[Any] = []
    for n in names:
        if n == "zenbrain":
            out.append(LifeStore(embedder, config=config, protocol=protocol, name="zenbrain", views=views))
        elif n == "bm25":
            out.append(StaticTimeline(BM25System()))
        elif n == "dense":
            out.append(StaticTimeline(DenseSystem(embedder, name="dense")))
        else:
            out.append(StaticTimeline(HybridRRFSystem(BM25System(), DenseSystem(embedder), name="hybrid-rrf")))
    if flat:
        out.append(LifeStore(embedder, config=config, protocol=replace(protocol, routed=False), name="zenbrain-flat",
                             views=views))
    for a in ablations:
        out.append(LifeStore(embedder, config=config.without(*a.split("+")), protocol=protocol, name=f"zenbrain-{a}",
                             views=views))
    return out


def _close(systems: Sequence[Any]) -> None:
    for s in systems:
        s.close()


def _load_timed(data: str | None, which: str) -> list[Any]:
    return load_conversations(data, which)


# --------------------------------------------------------------------------- bench locomo --timeline
def cmd_locomo_timeline(args: argparse.Namespace) -> int:
    from ..runner import run_locomo
    from .locomo_timeline import run_locomo_timeline
    from .report import timeline_details, timeline_table, write_files
    from .timeline import DIAGNOSTIC_VIEWS

    t0 = time.perf_counter()
    if args.mode != "per_conversation":
        raise ConfigError("--timeline runs per conversation (one store each); drop --mode pooled")
    names = list(dict.fromkeys(split_list(args.systems)))
    ablations = [a for item in args.ablate for a in split_list(item)]
    ks = parse_ints(args.ks, "--ks")
    if not ks or min(ks) < 1:
        raise ConfigError("--ks must be positive integers")
    categories = parse_ints(args.categories, "--categories") or None
    protocol = _protocol(args)
    convs = _load_timed(args.data, args.conversations)
    progress = not args.no_progress
    status(f"LoCoMo timeline: {len(convs)} conversation(s), {sum(len(c.docs) for c in convs)} turns; "
                 f"protocol {protocol.as_dict()}; load average {os.getloadavg()[0]:.2f}")
    embedder = bench_embedder(args, progress=progress)
    config = make_config(args)
    static_res = None
    try:
        _prewarm(embedder, [d.text for c in convs for d in c.docs] + [q.question for c in convs for q in c.questions])
        if not args.no_static:
            static_names = [n for n in names if n in BENCH_SYSTEMS]
            systems = make_systems(static_names, [], embedder, config)
            try:
                static_res = run_locomo(systems, convs, ks=ks, progress=progress, categories=categories)
            finally:
                _close(systems)
        views = () if args.no_views else DIAGNOSTIC_VIEWS
        systems = _timeline_systems(names, ablations, embedder, config, protocol, flat=args.flat, views=views)
        try:
            results = run_locomo_timeline(systems, convs, ks=ks, categories=categories, views=views,
                                          update_pairs=not args.no_update_pairs, progress=progress, protocol=protocol)
        finally:
            _close(systems)
    finally:
        embedder.close()
    results["embedder"] = embedder.name
    results["mechanisms_off"] = sorted(off_names(args))
    results["load_average_end"] = os.getloadavg()[0]
    if static_res is not None:
        results["static"] = static_res
    print(timeline_table(results, ci=args.ci))
    md = "# LoCoMo through time\n\n" + timeline_table(results, markdown=True, ci=True) + "\n\n" + timeline_details(results)
    paths = write_files(results, md, args.out, "locomo_timeline")
    print(f"\nwrote {paths['json']} and {paths['markdown']}")
    status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- bench updates
def _update_spec(args: argparse.Namespace, seed: int) -> Any:
    from .update_gen import UpdateSpec

    base: dict[str, Any] = dict(QUICK_UPDATES) if args.quick else {}
    for key in ("entities", "pairs", "static", "days", "filler_per_day"):
        v = getattr(args, key)
        if v is not None:
            base[key] = v
    try:
        return UpdateSpec(seed=seed, **base)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad update workload: {exc}") from None


def _update_systems(args: argparse.Namespace, embedder: Any, protocol: Any) -> list[Any]:
    from .timeline import UPDATE_MODES, LifeStore

    names = split_list(args.systems)
    modes = split_list(args.modes) or ["new"]
    bad = [m for m in modes if m not in UPDATE_MODES]
    if bad:
        raise ConfigError(f"unknown update mode(s) {bad}; modes are {', '.join(UPDATE_MODES)}")
    config = make_config(args)
    out: list[Any] = []
    for n in names:
        if n == "zenbrain":
            for m in modes:
                out.append(LifeStore(embedder, config=config, protocol=protocol, update_mode=m,
                                     name="zenbrain" if m == "new" else f"zenbrain[{m}]"))
        else:
            out += _timeline_systems([n], [], embedder, config, protocol, flat=False)
    if args.flat and "zenbrain" in names:
        out.append(LifeStore(embedder, config=config, protocol=replace(protocol, routed=False), name="zenbrain-flat"))
    return out


def cmd_updates(args: argparse.Namespace) -> int:
    from .report import update_views_table, updates_table, write_files
    from .timeline import DIAGNOSTIC_VIEWS
    from .update_gen import generate
    from .updates import run_generated_updates, summarize_updates

    t0 = time.perf_counter()
    seeds = parse_ints(args.seeds, "--seeds")
    if not seeds:
        raise ConfigError("--seeds needs at least one seed")
    protocol = _protocol(args)
    workloads = [generate(_update_spec(args, s)) for s in seeds]
    progress = not args.no_progress
    embedder = bench_embedder(args, progress=progress)
    results: dict[str, Any] = {"benchmark": "updates", "protocol": protocol.as_dict(),
                               "spec": workloads[0].spec.as_dict(), "seeds": seeds, "sources": {}}
    status(f"updates: {len(workloads)} generated workload(s), "
                 f"{sum(len(w.probes) for w in workloads)} questions; load average {os.getloadavg()[0]:.2f}")
    try:
        texts = [d.text for w in workloads for s in w.sessions for d in s.docs] + \
                [p.question for w in workloads for p in w.probes]
        convs: list[Any] = []
        if args.locomo:
            from .locomo_updates import LOCOMO_UPDATE_PAIRS

            wanted = sorted({p.sample_id for p in LOCOMO_UPDATE_PAIRS})
            convs = [c for c in _load_timed(args.data, "all") if c.sample_id in wanted]
            texts += [d.text for c in convs for d in c.docs] + [p.question for p in LOCOMO_UPDATE_PAIRS]
        items: list[Any] = []
        if args.longmemeval:
            from ..longmemeval import load_longmemeval

            try:
                items = load_longmemeval(args.longmemeval, question_types=split_list(args.lme_types) or None,
                                         limit=args.lme_limit, include_abstention=False)
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read LongMemEval data: {exc}") from None
            status(f"LongMemEval: {len(items)} item(s) of type {args.lme_types}")
            texts += [d.text for it in items for d in it.docs] + [it.question for it in items]
        _prewarm(embedder, texts)
        systems = _update_systems(args, embedder, protocol)
        try:
            views = () if args.no_views else DIAGNOSTIC_VIEWS
            results["sources"]["generated"] = run_generated_updates(systems, workloads, progress=progress, views=views)
            if convs:
                results["sources"]["locomo"] = _locomo_updates(systems, convs, progress)
            if items:
                results["sources"]["longmemeval"] = _lme_updates(systems, items, progress)
        finally:
            _close(systems)
    finally:
        embedder.close()
    for block in results["sources"].values():
        for s in block["systems"].values():
            s.setdefault("summary", summarize_updates(s["questions"]))
    results["embedder"] = embedder.name
    results["load_average_end"] = os.getloadavg()[0]
    print(updates_table(results))
    md = ("# Knowledge that changes\n\n" + updates_table(results, markdown=True) + "\n\n" + _revision_lines(results)
          + "\n\n" + update_views_table(results))
    paths = write_files(results, md, args.out, "updates")
    print(f"\nwrote {paths['json']} and {paths['markdown']}")
    status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


def _revision_lines(results: dict[str, Any]) -> str:
    lines = []
    for source, block in results["sources"].items():
        for name, s in block["systems"].items():
            revs: dict[str, int] = {}
            lost = 0
            for life in (s.get("lifecycle") or {}).values():
                for k, v in (life.get("revisions") or {}).items():
                    revs[k] = revs.get(k, 0) + v
                lost += len(life.get("revision_lost_docs") or [])
            if revs:
                lines.append(f"- {name} ({source}): revisions {revs}; new statements stored nowhere: {lost}")
    return "\n".join(lines)


def _locomo_updates(systems: Sequence[Any], convs: Sequence[Any], progress: bool) -> dict[str, Any]:
    from .locomo_timeline import locomo_workload
    from .locomo_updates import locomo_update_probes
    from .updates import run_updates_unit

    out: dict[str, Any] = {"systems": {}}
    for system in systems:
        if getattr(system, "update_mode", "new") != "new":
            continue  # the pairs are whole conversations; only "new" is how they arrive
        recs: list[dict[str, Any]] = []
        life = {}
        for c in convs:
            sessions, _ = locomo_workload(c, fresh=False)
            res = run_updates_unit(system, sessions, locomo_update_probes(c), k=5, depth=10)
            recs += res["records"]
            life[c.sample_id] = res["lifecycle"]
        out["systems"][system.name] = {"questions": recs, "lifecycle": life}
    return out


def _lme_updates(systems: Sequence[Any], items: Sequence[Any], progress: bool) -> dict[str, Any]:
    from .updates import longmemeval_update_workload, run_updates_unit

    out: dict[str, Any] = {"systems": {}, "skipped_without_gold": 0}
    work = [longmemeval_update_workload(it) for it in items]
    out["skipped_without_gold"] = sum(1 for w in work if not w[1])
    for system in systems:
        if getattr(system, "update_mode", "new") != "new":
            continue
        recs: list[dict[str, Any]] = []
        life = {}
        for it, (sessions, probes, end) in zip(items, work):
            if not probes:
                continue
            res = run_updates_unit(system, sessions, probes, k=5, depth=10, end_time=end)
            recs += res["records"]
            life[it.question_id] = res["lifecycle"]
        out["systems"][system.name] = {"questions": recs, "lifecycle": life}
    return out


# --------------------------------------------------------------------------- bench noise
def cmd_noise(args: argparse.Namespace) -> int:
    from .noise import noise_pool, noise_workload, run_noise
    from .report import noise_table, noise_trace, write_files

    t0 = time.perf_counter()
    which = ",".join(QUICK_CONVERSATIONS) if args.quick else args.conversations
    all_convs = _load_timed(args.data, "all")
    convs = _load_timed(args.data, which)
    protocol = _protocol(args)
    progress = not args.no_progress
    embedder = bench_embedder(args, progress=progress)
    pools = noise_pool(all_convs)
    status(f"noise: {len(convs)} conversation(s), {args.per_day} chatter turns a day; "
                 f"load average {os.getloadavg()[0]:.2f}")
    try:
        texts = []
        for c in convs:
            sessions, probes, _ = noise_workload(c, pools[c.sample_id], per_day=args.per_day, seed=args.seed)
            texts += [d.text for s in sessions for d in s.docs] + [p.question for p in probes]
        _prewarm(embedder, texts)
        names = split_list(args.systems)
        ablations = [a for item in args.ablate for a in split_list(item)]
        systems = _timeline_systems(names, ablations, embedder, make_config(args), protocol, flat=args.flat)
        try:
            # The chatter is drawn from every conversation of the file, whichever are run.
            results = run_noise(systems, convs, pool_from=all_convs, per_day=args.per_day, seed=args.seed,
                                progress=progress)
        finally:
            _close(systems)
    finally:
        embedder.close()
    results["protocol"] = protocol.as_dict()
    results["embedder"] = embedder.name
    results["load_average_end"] = os.getloadavg()[0]
    print(noise_table(results))
    md = "# Noise and forgetting\n\n" + noise_table(results, markdown=True) + "\n\n" + noise_trace(results)
    paths = write_files(results, md, args.out, "noise")
    print(f"\nwrote {paths['json']} and {paths['markdown']}")
    status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- bench mechanisms
def _load_runs(path: Path, plan: Any) -> tuple[dict[Any, Any], dict[Any, float]]:
    """The runs of an earlier (interrupted) invocation with the same plan."""
    results: dict[Any, Any] = {}
    seconds: dict[Any, float] = {}
    if not path.exists():
        return results, seconds
    want = json.loads(json.dumps(plan.as_dict()))
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by the interruption
        if row.get("plan") == want and "error" not in (row.get("result") or {}):  # failed runs are run again
            key = tuple(row["key"])
            results[key] = row["result"]
            seconds[key] = float(row.get("seconds", 0.0))
    return results, seconds


def cmd_mechanisms(args: argparse.Namespace) -> int:
    from ...experiments.real.pool import run_jobs
    from ..locomo import LOCOMO_FILES, resolve_data_file
    from .ablation import (
        WORKLOADS,
        Plan,
        make_rows,
        plan_jobs,
        summarize,
        texts_to_embed,
    )
    from .report import mechanisms_markdown, write_files

    t0 = time.perf_counter()
    workloads = split_list(args.workloads)
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad or not workloads:
        raise ConfigError(f"unknown workload(s) {bad}; workloads are {', '.join(WORKLOADS)}")
    try:
        rows = make_rows(split_list(args.only) or None)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    data = args.data
    try:
        file = resolve_data_file(None, LOCOMO_FILES, data_dir=data) if data and Path(data).is_dir() else \
            resolve_data_file(data, LOCOMO_FILES)
    except FileNotFoundError as exc:
        raise ConfigError(f"LoCoMo data not found: {exc}") from None
    convs = _load_timed(str(file), ",".join(QUICK_CONVERSATIONS) if args.quick else args.conversations)
    seeds = parse_ints(args.update_seeds, "--update-seeds") or [0]
    from .timeline import UPDATE_MODES

    if args.update_mode not in UPDATE_MODES:
        raise ConfigError(f"unknown --update-mode {args.update_mode!r}; modes are {', '.join(UPDATE_MODES)}")
    if args.context_k < 0 or args.noise_per_day < 0:
        raise ConfigError("--context-k and --noise-per-day must not be negative")
    progress = not args.no_progress
    if args.no_cache:
        raise ConfigError("bench mechanisms needs the embedding cache (its workers read vectors from it)")
    cache = str(cache_dir() / CACHE_FILE)
    embedder = bench_embedder(args, progress=progress)
    try:
        plan = Plan(data=str(file), conversations=tuple(c.sample_id for c in convs), embedder_spec=embedder_spec(args),
                    embedder_name=embedder.name, embedder_dim=embedder.dim, cache_path=cache,
                    update_seeds=tuple(seeds), update_spec=dict(QUICK_UPDATES) if args.quick else {},
                    update_mode=args.update_mode,
                    noise_per_day=args.noise_per_day, protocol={"context_k": args.context_k}, seed=args.seed)
        status(f"mechanisms: workloads {', '.join(workloads)}; {len(rows)} rows; conversations "
                     f"{', '.join(plan.conversations)}; load average {os.getloadavg()[0]:.2f}")
        _prewarm(embedder, texts_to_embed(plan, workloads))
    finally:
        embedder.close()
    jobs = plan_jobs(plan, workloads, rows)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "runs.jsonl"
    done, done_s = _load_runs(log, plan) if args.resume else ({}, {})
    todo = [j for j in jobs if j.key not in done]
    if done:
        status(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} runs already in {log}")
    with open(log, "a" if args.resume else "w", encoding="utf-8") as fh:
        def save(key: Any, result: Any, sec: float) -> None:
            fh.write(json.dumps({"key": list(key), "plan": plan.as_dict(), "seconds": sec, "result": result}) + "\n")
            fh.flush()

        results, seconds = run_jobs(todo, workers=args.workers, progress=progress, desc="mechanisms", on_result=save)
    results.update({k: v for k, v in done.items() if any(j.key == k for j in jobs)})
    seconds.update({k: v for k, v in done_s.items() if k in results})
    summary = summarize(results, plan, workloads, rows, seconds)
    summary["wall_seconds"] = time.perf_counter() - t0
    summary["job_seconds"] = float(sum(seconds.values()))
    summary["load_average_end"] = os.getloadavg()[0]
    runs = [{"workload": key[0], "row": key[1], "unit": key[2], **v}  # type: ignore[index]
            for key, v in results.items()]
    raw = {"summary": summary, "runs": runs}
    md = mechanisms_markdown(summary)
    md += (f"\n\nWall time {summary['wall_seconds']:.0f} s, {summary['job_seconds']:.0f} job seconds, "
           f"load average {summary['load_average_end']:.2f} at the end.")
    print(md)
    paths = write_files(raw, md, args.out, "mechanisms")
    print(f"\nwrote {paths['json']} and {paths['markdown']}")
    return EXIT_OK
