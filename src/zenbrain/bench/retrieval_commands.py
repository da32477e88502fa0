"""``zenbrain bench locomo`` and ``zenbrain bench longmemeval``: retrieval of the evidence
turns by zenbrain, the baselines and the peers, with an optional answer-quality step."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..cli_support import (
    EXIT_OK,
    embedder_spec,
    make_config,
    off_names,
    parse_ints,
    status,
)
from .embedding import bench_embedder, cache_note, prewarm, prewarm_items
from .inputs import load_conversations, load_items
from .names import EMBEDDING_SYSTEMS
from .systems import build_systems, check_options, peer_notes, system_names

__all__ = [
    "cmd_bench_locomo",
    "cmd_bench_longmemeval",
    "locomo_results",
    "print_tables",
    "run_systems",
    "write_outputs",
]


# --------------------------------------------------------------------------- answers


def _chats(args: argparse.Namespace) -> tuple[Any, Any]:
    if not args.answer_model:
        return None, None
    from ..providers.factory import make_chat

    answer = make_chat(args.answer_model)
    judge = make_chat(args.judge_model) if args.judge_model and args.judge_model != args.answer_model else answer
    return answer, judge


def _close_chats(*chats: Any) -> None:
    for c in {id(c): c for c in chats if c is not None}.values():
        close = getattr(c, "close", None)
        if callable(close):
            close()


def _run_answers(args: argparse.Namespace, results: dict[str, Any], chats: tuple[Any, Any], make_tasks: Callable) -> None:
    from .answers import add_answers

    answer, judge = chats
    k = args.answer_k or min(results["ks"])
    t0 = time.perf_counter()
    add_answers(results, make_tasks(k), answer, judge, k=k, limit=args.answer_limit, progress=not args.no_progress)
    n = sum(len(s["answers"]["questions"]) for s in results["systems"].values())
    errors = sum(s["answers"]["summary"]["errors"] for s in results["systems"].values())
    status(f"answers: {n} answered and judged in {time.perf_counter() - t0:.1f} s"
           + (f"; {errors} failed (see 'error' in the JSON)" if errors else ""))


# --------------------------------------------------------------------------- output


def write_outputs(results: dict[str, Any], out: str, *, title: str, plots: bool) -> None:
    """JSON, markdown (with the answers section, if any) and plots under ``out``."""
    from .answers import answers_markdown
    from .report import write_report

    paths = write_report(results, Path(out), title=title, plots=plots)
    extra = answers_markdown(results)
    if extra:
        md = paths["markdown"]
        md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + extra, encoding="utf-8")
    print(f"\nwrote {paths['json']} and {paths['markdown']}" + (f" (+{len(paths) - 2} plots)" if len(paths) > 2 else ""))


def print_tables(results: dict[str, Any], ci: bool) -> None:
    """The retrieval table, how embedding was done, the peers' notes, the answers table."""
    from .answers import answers_table
    from .report import results_table

    print(results_table(results, ci=ci))
    emb = results.get("embedding")
    if emb:
        mem0 = any(n in ("mem0", "mem0-faiss") for n in results.get("peers", {}))
        print(f"(embedder {results['embedder']}: {emb['texts_embedded']} texts embedded in {emb['seconds']:.1f} s before "
              f"the run, {emb['texts_from_cache']} from the cache; ingest_s and search latencies exclude embedding"
              + (", except for mem0, which embeds with its own model)" if mem0 else ")"))
    for name, note in results.get("peers", {}).items():
        print(f"({name}: {note})")
    table = answers_table(results)
    if table:
        print("\n" + table)


def run_systems(
    args: argparse.Namespace, names: Sequence[str], ablations: Sequence[str], *,
    warm: Callable[[Any], dict[str, Any]], run: Callable[[list[Any]], dict[str, Any]],
) -> dict[str, Any]:
    """Build the systems on the cached embedder, ``warm`` its cache (when a system embeds),
    ``run`` the benchmark, close everything; the results say how it was run."""
    spec = embedder_spec(args)
    embedder = bench_embedder(args, progress=not args.no_progress)
    try:
        systems = build_systems(names, ablations, embedder, make_config(args), embedder_spec=spec,
                                progress=not args.no_progress, store=getattr(args, "store", None))
        try:
            embedding = warm(embedder) if any(n in EMBEDDING_SYSTEMS for n in names) or ablations else None
            results = run(systems)
        finally:
            for s in systems:
                s.close()
    finally:
        embedder.close()
    results["embedder"] = embedder.name
    if embedding is not None:
        results["embedding"] = embedding
    results["mechanisms_off"] = sorted(off_names(args))
    notes = peer_notes(names, embedder.name, spec)
    if notes:
        results["peers"] = notes
    return results


# --------------------------------------------------------------------------- LoCoMo


def locomo_results(
    args: argparse.Namespace, convs: Sequence[Any], names: Sequence[str], ablations: Sequence[str],
    *, mode: str = "per_conversation",
) -> dict[str, Any]:
    """Run the LoCoMo retrieval benchmark for the systems ``names`` and ``ablations`` (checked before)."""
    from .runner import run_locomo

    ks = parse_ints(args.ks, "--ks")
    categories = parse_ints(args.categories, "--categories") or None
    return run_systems(
        args, names, ablations,
        warm=lambda embedder: prewarm(embedder, convs, categories),
        run=lambda systems: run_locomo(systems, convs, ks=ks, mode=mode, progress=not args.no_progress,
                                       categories=categories),
    )


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    """``bench locomo``: zenbrain, baselines, peers and ablations; the optional answer step."""
    from .answers import locomo_answer_tasks

    t0 = time.perf_counter()
    names, ablations = system_names(args)
    check_options(args, names, ablations)
    chats = _chats(args)
    convs = load_conversations(args.data, args.conversations)
    status(f"LoCoMo: {len(convs)} conversation(s), {sum(len(c.docs) for c in convs)} turns; "
           f"embedder {embedder_spec(args)}; cache {cache_note(args)}")
    results = locomo_results(args, convs, names, ablations, mode=args.mode)
    try:
        if chats[0] is not None:
            _run_answers(args, results, chats,
                         lambda k: (lambda recs: locomo_answer_tasks(recs, convs, k=k, mode=args.mode, limit=args.answer_limit)))
    finally:
        _close_chats(*chats)
    print_tables(results, args.ci)
    title = f"LoCoMo turn-level retrieval ({results['mode']}), embedder {results['embedder']}"
    write_outputs(results, args.out, title=title, plots=not args.no_plots)
    status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- LongMemEval


def cmd_bench_longmemeval(args: argparse.Namespace) -> int:
    """``bench longmemeval``: reset, ingest one haystack, ask its question; for every question and system."""
    from .answers import longmemeval_answer_tasks
    from .runner import run_longmemeval

    t0 = time.perf_counter()
    names, ablations = system_names(args)
    check_options(args, names, ablations)
    chats = _chats(args)
    include_abs = bool(args.include_abstention or chats[0] is not None)
    items = load_items(args)
    run_items = [it for it in items if include_abs or not it.is_abstention]
    spec = embedder_spec(args)
    n_abs = sum(1 for it in items if it.is_abstention)
    status(f"LongMemEval: {len(items)} question(s) ({n_abs} abstention{'' if include_abs else ', skipped'}), "
           f"{sum(len(it.docs) for it in run_items)} turns; embedder {spec}; cache {cache_note(args)}")
    ks = parse_ints(args.ks, "--ks")
    progress = not args.no_progress
    results = run_systems(
        args, names, ablations,
        warm=lambda embedder: prewarm_items(embedder, run_items, progress=progress),
        run=lambda systems: run_longmemeval(systems, items, ks=ks, progress=progress, include_abstention=include_abs),
    )
    results["dataset"]["user_only"] = bool(args.user_only)
    try:
        if chats[0] is not None:
            _run_answers(args, results, chats,
                         lambda k: (lambda recs: longmemeval_answer_tasks(recs, items, k=k, limit=args.answer_limit)))
    finally:
        _close_chats(*chats)
    print_tables(results, args.ci)
    title = f"LongMemEval retrieval ({len(run_items)} questions, per-question haystacks), embedder {results['embedder']}"
    write_outputs(results, args.out, title=title, plots=not args.no_plots)
    status(f"done in {time.perf_counter() - t0:.1f} s")
    return EXIT_OK
