"""Benchmark commands beyond LoCoMo retrieval: ``bench longmemeval``, peer systems, answer quality.

``register_bench_commands`` is called by ``zenbrain.cli.build_parser``. It

* adds ``zenbrain bench longmemeval`` (per-question haystacks, session- and turn-level
  metrics, abstention questions kept out of retrieval metrics);
* lets both ``bench locomo`` and ``bench longmemeval`` run the peer systems of
  :mod:`zenbrain.bench.peers` (``mem0``, ``mem0-faiss``, ``chroma``) beside zenbrain
  and the baselines;
* adds the optional answer-quality step of :mod:`zenbrain.bench.answers` to both
  (``--answer-model SPEC --judge-model SPEC --answer-limit N --answer-k K``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import cli as _cli
from ..errors import ConfigError
from .peers import PEER_SYSTEMS

__all__ = [
    "add_answer_options",
    "build_systems",
    "cmd_bench_locomo",
    "cmd_bench_longmemeval",
    "register_bench_commands",
]

EMBEDDING_SYSTEMS = ("zenbrain", "dense", "hybrid", "chroma")
_PEER_EPILOG = (
    " Peers (extra 'peers'): mem0 (Mem0 open source, infer=False, local Qdrant), mem0-faiss (the same on FAISS), "
    "chroma (ChromaDB with the --embedder vectors). Mem0 embeds with its own HuggingFace embedder over the "
    "local MiniLM weights."
)


# --------------------------------------------------------------------------- parser


def add_answer_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("answer quality (optional; needs a chat model)")
    g.add_argument("--answer-model", metavar="SPEC",
                   help="answer each question from the retrieved turns with this chat model "
                        "(openai:MODEL[@URL], anthropic:MODEL[@URL], ollama:MODEL[@URL])")
    g.add_argument("--judge-model", metavar="SPEC", help="judge the answers with this chat model (default: the answer model)")
    g.add_argument("--answer-limit", metavar="N", type=int, default=None,
                   help="answer only the first N questions (default: all)")
    g.add_argument("--answer-k", metavar="K", type=int, default=None,
                   help="turns given to the answer model (default: the smallest --ks)")


def register_bench_commands(
    bench_subs: Any,
    *,
    locomo: argparse.ArgumentParser,
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """Extend ``bench locomo`` (peers, answers) and add ``bench longmemeval``."""
    add_answer_options(locomo)
    locomo.epilog = (locomo.epilog or "") + _PEER_EPILOG
    locomo.set_defaults(func=cmd_bench_locomo)

    p = command(
        bench_subs, "longmemeval", cmd_bench_longmemeval,
        "LongMemEval retrieval: each question's haystack in its own store", scope=False,
        epilog="Systems: " + ", ".join((*_cli.BENCH_SYSTEMS, *PEER_SYSTEMS)) + ". Each '--ablate NAME' adds "
               "'zenbrain-NAME' with that mechanism off." + _PEER_EPILOG,
    )
    p.add_argument("--data", metavar="PATH",
                   help="LongMemEval JSON file (S, M or oracle) or data folder (default: $ZENBRAIN_DATA or ../shared/data)")
    p.add_argument("--systems", metavar="S[,S]", default="zenbrain,bm25,dense",
                   help="systems to compare (default: zenbrain,bm25,dense)")
    p.add_argument("--ablate", metavar="NAME", nargs="+", action="extend", default=[],
                   help="add zenbrain with mechanism NAME off (or layer:LAYER off); repeatable")
    p.add_argument("--limit", metavar="N", type=int, default=None, help="only the first N questions")
    p.add_argument("--question-types", metavar="T[,T]", help="only these question types")
    p.add_argument("--user-only", action="store_true", help="index user turns only (the official retrieval key)")
    p.add_argument("--include-abstention", action="store_true",
                   help="also run abstention questions (never in retrieval metrics; on with --answer-model)")
    p.add_argument("--ks", metavar="K[,K]", default="5,10", help="cut-offs (default 5,10)")
    p.add_argument("--ci", action="store_true", help="show bootstrap intervals in the table")
    p.add_argument("--no-cache", action="store_true", help=f"do not use the on-disk embedding cache (${_cli.CACHE_ENV})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--out", metavar="DIR", default=os.path.join("results", "longmemeval"),
                   help="where JSON, markdown and plots go (default: results/longmemeval)")
    p.add_argument("--no-plots", action="store_true", help="write JSON and markdown only")
    add_answer_options(p)
    p.set_defaults(categories=None)  # LoCoMo-only; the shared option checks read it


# --------------------------------------------------------------------------- systems


def _names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    names = list(dict.fromkeys(_cli._split(args.systems)))
    ablations = [a for item in args.ablate for a in _cli._split(item)]
    return names, ablations


def check_options(args: argparse.Namespace, names: Sequence[str], ablations: Sequence[str]) -> None:
    """Refuse bad options (systems, cut-offs, answer flags, missing peer libraries) before any work."""
    from .peers import check_peer_available

    known = (*_cli.BENCH_SYSTEMS, *PEER_SYSTEMS)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(known)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    core = [n for n in names if n not in PEER_SYSTEMS]
    if core or ablations:
        _cli.check_bench_options(args, core, ablations)
    else:
        ks = _cli._ints(args.ks, "--ks")
        if not ks or min(ks) < 1:
            raise ConfigError("--ks must be positive integers")
        if getattr(args, "categories", None) is not None:
            _cli._ints(args.categories, "--categories")
        _cli._off_names(args)
    for n in names:
        if n in PEER_SYSTEMS:
            check_peer_available(n)
    if "mem0" in names or "mem0-faiss" in names:
        from .peers import mem0_embedder_config

        mem0_embedder_config(_cli.embedder_spec(args))  # ConfigError for embedders Mem0 cannot use
    if args.answer_limit is not None and args.answer_limit < 0:
        raise ConfigError("--answer-limit must be 0 or more")
    if args.answer_k is not None and args.answer_k < 1:
        raise ConfigError("--answer-k must be at least 1")
    if args.answer_model is None and (args.judge_model or args.answer_limit is not None or args.answer_k is not None):
        raise ConfigError("--judge-model, --answer-limit and --answer-k need --answer-model")


def build_systems(
    names: Sequence[str], ablations: Sequence[str], embedder: Any, config: Any, *, embedder_spec: str, progress: bool,
    store: str | None = None,
) -> list[Any]:
    """Core systems (``zenbrain.cli.make_systems``), then peers, then zenbrain ablations."""
    from .peers import make_peer

    core = [n for n in names if n not in PEER_SYSTEMS]
    systems: list[Any] = []
    try:
        if core:
            systems += _cli.make_systems(core, [], embedder, config, store=store)
        for n in names:
            if n in PEER_SYSTEMS:
                systems.append(make_peer(n, embedder, embedder_spec=embedder_spec, progress=progress))
        if ablations:
            systems += _cli.make_systems([], ablations, embedder, config, store=store)
    except BaseException:
        for s in systems:
            s.close()
        raise
    return systems


def _peer_notes(names: Sequence[str], embedder_name: str, spec: str) -> dict[str, str]:
    notes = {}
    for n in names:
        if n in ("mem0", "mem0-faiss"):
            store = "FAISS" if n == "mem0-faiss" else "Qdrant (local, on disk)"
            emb = "Mem0's HuggingFace embedder over the local all-MiniLM-L6-v2" if spec.startswith(("minilm", "onnx")) else spec
            notes[n] = (f"mem0ai, Memory.add(infer=False) per turn, {store}, {emb}; search(threshold=0); "
                        "ingest time includes embedding")
        elif n == "chroma":
            notes[n] = f"chromadb PersistentClient, cosine HNSW, embedding function over {embedder_name}"
    return notes


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
    _cli._status(f"answers: {n} answered and judged in {time.perf_counter() - t0:.1f} s"
                 + (f"; {errors} failed (see 'error' in the JSON)" if errors else ""))


def _write(results: dict[str, Any], out: str, *, title: str, plots: bool) -> None:
    from .answers import answers_markdown
    from .report import write_report

    paths = write_report(results, Path(out), title=title, plots=plots)
    extra = answers_markdown(results)
    if extra:
        md = paths["markdown"]
        md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + extra, encoding="utf-8")
    print(f"\nwrote {paths['json']} and {paths['markdown']}" + (f" (+{len(paths) - 2} plots)" if len(paths) > 2 else ""))


def _print_tables(results: dict[str, Any], ci: bool) -> None:
    from .answers import answers_table
    from .report import results_table

    print(results_table(results, ci=ci))
    emb = results.get("embedding")
    if emb:
        print(f"(embedder {results['embedder']}: {emb['texts_embedded']} texts embedded in {emb['seconds']:.1f} s before "
              f"the run, {emb['texts_from_cache']} from the cache; ingest_s and search latencies exclude embedding, "
              "except for mem0, which embeds with its own model)")
    for name, note in results.get("peers", {}).items():
        print(f"({name}: {note})")
    table = answers_table(results)
    if table:
        print("\n" + table)


# --------------------------------------------------------------------------- LoCoMo


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    """``bench locomo`` with peers and the optional answer step."""
    from .answers import locomo_answer_tasks
    from .runner import run_locomo

    t0 = time.perf_counter()
    names, ablations = _names(args)
    check_options(args, names, ablations)
    chats = _chats(args)
    convs = _cli.load_conversations(args.data, args.conversations)
    spec = _cli.embedder_spec(args)
    _cli._status(f"LoCoMo: {len(convs)} conversation(s), {sum(len(c.docs) for c in convs)} turns; "
                 f"embedder {spec}; cache {'off' if args.no_cache else _cli.cache_dir() / _cli.CACHE_FILE}")
    ks = _cli._ints(args.ks, "--ks")
    categories = _cli._ints(args.categories, "--categories") or None
    progress = not args.no_progress
    embedder = _cli.bench_embedder(args, progress=progress)
    try:
        systems = build_systems(names, ablations, embedder, _cli.make_config(args), embedder_spec=spec, progress=progress,
                                store=getattr(args, "store", None))
        try:
            embedding = None
            if any(n in EMBEDDING_SYSTEMS for n in names) or ablations:
                embedding = _cli.prewarm(embedder, convs, categories)
            results = run_locomo(systems, convs, ks=ks, mode=args.mode, progress=progress, categories=categories)
        finally:
            for s in systems:
                s.close()
    finally:
        embedder.close()
    results["embedder"] = embedder.name
    if embedding is not None:
        results["embedding"] = embedding
    results["mechanisms_off"] = sorted(_cli._off_names(args))
    notes = _peer_notes(names, embedder.name, spec)
    if notes:
        results["peers"] = notes
    try:
        if chats[0] is not None:
            _run_answers(args, results, chats,
                         lambda k: (lambda recs: locomo_answer_tasks(recs, convs, k=k, mode=args.mode, limit=args.answer_limit)))
    finally:
        _close_chats(*chats)
    _print_tables(results, args.ci)
    title = f"LoCoMo turn-level retrieval ({results['mode']}), embedder {results['embedder']}"
    _write(results, args.out, title=title, plots=not args.no_plots)
    _cli._status(f"done in {time.perf_counter() - t0:.1f} s")
    return _cli.EXIT_OK


# --------------------------------------------------------------------------- LongMemEval


def load_items(args: argparse.Namespace, *, include_abstention: bool = True) -> list[Any]:
    """LongMemEval items from ``--data`` (file or folder), filtered by ``--question-types`` and ``--limit``."""
    from .longmemeval import load_longmemeval

    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1")
    types = _cli._split(args.question_types) or None
    data = args.data
    try:
        if data is not None and Path(data).expanduser().is_dir():
            items = load_longmemeval(None, data_dir=data, question_types=types, limit=args.limit,
                                     include_abstention=include_abstention, user_only=args.user_only)
        else:
            if data is not None and not Path(data).expanduser().exists():
                raise FileNotFoundError(f"LongMemEval file {data} does not exist")
            items = load_longmemeval(data, question_types=types, limit=args.limit,
                                     include_abstention=include_abstention, user_only=args.user_only)
    except FileNotFoundError as exc:
        raise ConfigError(f"LongMemEval data not found: {exc}") from None
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot read LongMemEval data: {exc}") from None
    if not items:
        raise ConfigError("no LongMemEval questions to run (check --data, --question-types and --limit)")
    return items


def prewarm_items(embedder: Any, items: Sequence[Any], *, progress: bool, chunk: int = 2048) -> dict[str, Any]:
    """Embed every turn and question of ``items`` once (in chunks), so the run reads vectors from the cache."""
    from tqdm.auto import tqdm

    texts = list(dict.fromkeys(t for it in items for t in [*(d.text for d in it.docs), it.question] if t.strip()))
    before = embedder.stats.misses
    t0 = time.perf_counter()
    with tqdm(total=len(texts), desc="prewarm embeddings", unit="text", disable=not progress or len(texts) < chunk) as bar:
        for i in range(0, len(texts), chunk):
            embedder.embed(texts[i : i + chunk])
            bar.update(len(texts[i : i + chunk]))
    seconds = time.perf_counter() - t0
    fresh = embedder.stats.misses - before
    _cli._status(f"embeddings: {len(texts)} distinct texts, {fresh} embedded in {seconds:.1f} s"
                 + (f" ({fresh / seconds:.0f}/s)" if fresh and seconds > 0 else "")
                 + f", {len(texts) - fresh} from the cache")
    return {
        "seconds": seconds,
        "texts": len(texts),
        "texts_embedded": fresh,
        "texts_from_cache": len(texts) - fresh,
        "note": "turns and questions were embedded before the run; search latencies exclude it",
    }


def cmd_bench_longmemeval(args: argparse.Namespace) -> int:
    """``bench longmemeval``: reset, ingest one haystack, ask its question; for every question and system."""
    from .answers import longmemeval_answer_tasks
    from .runner import run_longmemeval

    t0 = time.perf_counter()
    names, ablations = _names(args)
    check_options(args, names, ablations)
    chats = _chats(args)
    include_abs = bool(args.include_abstention or chats[0] is not None)
    items = load_items(args)
    run_items = [it for it in items if include_abs or not it.is_abstention]
    spec = _cli.embedder_spec(args)
    n_abs = sum(1 for it in items if it.is_abstention)
    _cli._status(f"LongMemEval: {len(items)} question(s) ({n_abs} abstention{'' if include_abs else ', skipped'}), "
                 f"{sum(len(it.docs) for it in run_items)} turns; embedder {spec}; "
                 f"cache {'off' if args.no_cache else _cli.cache_dir() / _cli.CACHE_FILE}")
    ks = _cli._ints(args.ks, "--ks")
    progress = not args.no_progress
    embedder = _cli.bench_embedder(args, progress=progress)
    try:
        systems = build_systems(names, ablations, embedder, _cli.make_config(args), embedder_spec=spec, progress=progress,
                                store=getattr(args, "store", None))
        try:
            embedding = None
            if any(n in EMBEDDING_SYSTEMS for n in names) or ablations:
                embedding = prewarm_items(embedder, run_items, progress=progress)
            results = run_longmemeval(systems, items, ks=ks, progress=progress, include_abstention=include_abs)
        finally:
            for s in systems:
                s.close()
    finally:
        embedder.close()
    results["embedder"] = embedder.name
    if embedding is not None:
        results["embedding"] = embedding
    results["mechanisms_off"] = sorted(_cli._off_names(args))
    results["dataset"]["user_only"] = bool(args.user_only)
    notes = _peer_notes(names, embedder.name, spec)
    if notes:
        results["peers"] = notes
    try:
        if chats[0] is not None:
            _run_answers(args, results, chats,
                         lambda k: (lambda recs: longmemeval_answer_tasks(recs, items, k=k, limit=args.answer_limit)))
    finally:
        _close_chats(*chats)
    _print_tables(results, args.ci)
    title = f"LongMemEval retrieval ({len(run_items)} questions, per-question haystacks), embedder {results['embedder']}"
    _write(results, args.out, title=title, plots=not args.no_plots)
    _cli._status(f"done in {time.perf_counter() - t0:.1f} s")
    return _cli.EXIT_OK
