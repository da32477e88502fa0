"""The benchmark commands, a plugin of the ``zenbrain`` command line.

``register(subparsers)`` (entry point ``bench`` of the ``zenbrain.commands`` group) adds

* ``zenbrain bench locomo``: LoCoMo turn-level evidence retrieval;
* ``zenbrain bench longmemeval``: LongMemEval retrieval, each question's haystack in its
  own store (abstention questions kept out of retrieval metrics);
* ``zenbrain demo``: one LoCoMo conversation, zenbrain against BM25 and dense cosine;
* the longitudinal benchmarks of :mod:`zenbrain.bench.longitudinal.cli` (``bench locomo
  --timeline``, ``bench updates``, ``bench noise``, ``bench mechanisms``).

Both ``bench`` commands run zenbrain, the baselines, zenbrain ablations and the peer
systems of :mod:`zenbrain.bench.peers`, and the optional answer-quality step of
:mod:`zenbrain.bench.answers` (``--answer-model SPEC --judge-model SPEC``). They need the
``bench`` extra; without it they say so and stop. Building the parser imports nothing
beyond the standard library, so ``zenbrain --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from ..cli_support import CACHE_ENV, EXIT_USAGE, command, require_extra
from .demo import DEMO_CONVERSATION, cmd_demo
from .longitudinal.cli import register as register_longitudinal
from .names import BENCH_SYSTEMS, PEER_SYSTEMS
from .retrieval_commands import cmd_bench_locomo, cmd_bench_longmemeval

__all__ = ["BENCH_EXTRA_MODULES", "add_answer_options", "register"]

# What the 'bench' extra installs, by import name: the BM25 baseline, progress bars, plots.
BENCH_EXTRA_MODULES = ("bm25s", "Stemmer", "tqdm", "matplotlib")

_PEER_EPILOG = (
    " Peers (extra 'peers'): mem0 (Mem0 open source, infer=False, local Qdrant), mem0-faiss (the same on FAISS), "
    "chroma (ChromaDB with the --embedder vectors). Mem0 embeds with its own HuggingFace embedder over the "
    "local MiniLM weights."
)


def _needs_bench_extra(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``run``, after checking that the 'bench' extra is installed."""

    def checked(args: argparse.Namespace) -> int:
        require_extra("bench", BENCH_EXTRA_MODULES, f"'zenbrain {args.command}'")
        return run(args)

    return checked


def register(subparsers: Any) -> None:
    """Add ``bench locomo``, ``bench longmemeval`` and ``demo`` to the ``zenbrain`` parser."""
    bench = subparsers.add_parser("bench", help="retrieval benchmarks", description="Retrieval benchmarks.")
    bench_subs = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    bench.set_defaults(func=lambda args: _missing_subcommand(bench))
    locomo = _add_locomo(bench_subs)
    _add_longmemeval(bench_subs)
    register_longitudinal(bench_subs, locomo=locomo, checked=_needs_bench_extra)  # --timeline, updates, noise, mechanisms
    _add_demo(subparsers)


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _add_locomo_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", metavar="PATH",
                   help="LoCoMo JSON file or data folder (default: $ZENBRAIN_DATA or ../shared/data)")
    p.add_argument("--ks", metavar="K[,K]", default="5,10", help="cut-offs (default 5,10)")
    p.add_argument("--categories", metavar="C[,C]", help="only these QA categories (1-5)")
    p.add_argument("--ci", action="store_true", help="show bootstrap intervals in the table")
    p.add_argument("--no-cache", action="store_true", help=f"do not use the on-disk embedding cache (${CACHE_ENV})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--store", metavar="URL",
                   help="where zenbrain systems keep their memories: temporary SQLite files (default) or a "
                        "postgresql:// URL (each store in a fresh schema, dropped afterwards)")


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


def _add_locomo(bench_subs: Any) -> argparse.ArgumentParser:
    p = command(
        bench_subs, "locomo", _needs_bench_extra(cmd_bench_locomo), "LoCoMo turn-level evidence retrieval", scope=False,
        epilog="Systems: " + ", ".join(BENCH_SYSTEMS) + ". Each '--ablate NAME' adds 'zenbrain-NAME' with that "
               "mechanism off; '--ablate layer:episodic' switches a layer off." + _PEER_EPILOG,
    )
    _add_locomo_data_options(p)
    p.add_argument("--systems", metavar="S[,S]", default="zenbrain,bm25,dense",
                   help="systems to compare (default: zenbrain,bm25,dense; also hybrid, no-memory)")
    p.add_argument("--conversations", metavar="N|all|ID[,ID]", default="all",
                   help="the first N conversations, all of them (default), or sample ids")
    p.add_argument("--mode", choices=("per_conversation", "pooled"), default="per_conversation",
                   help="one store per conversation (default) or all conversations in one store")
    p.add_argument("--ablate", metavar="NAME", nargs="+", action="extend", default=[],
                   help="add zenbrain with mechanism NAME off (or layer:LAYER off); repeatable")
    p.add_argument("--out", metavar="DIR", default=os.path.join("results", "locomo"),
                   help="where JSON, markdown and plots go (default: results/locomo)")
    p.add_argument("--no-plots", action="store_true", help="write JSON and markdown only")
    add_answer_options(p)
    return p


def _add_longmemeval(bench_subs: Any) -> argparse.ArgumentParser:
    p = command(
        bench_subs, "longmemeval", _needs_bench_extra(cmd_bench_longmemeval),
        "LongMemEval retrieval: each question's haystack in its own store", scope=False,
        epilog="Systems: " + ", ".join((*BENCH_SYSTEMS, *PEER_SYSTEMS)) + ". Each '--ablate NAME' adds "
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
    p.add_argument("--no-cache", action="store_true", help=f"do not use the on-disk embedding cache (${CACHE_ENV})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--store", metavar="URL",
                   help="where zenbrain systems keep their memories: temporary SQLite files (default) or a "
                        "postgresql:// URL (each store in a fresh schema, dropped afterwards)")
    p.add_argument("--out", metavar="DIR", default=os.path.join("results", "longmemeval"),
                   help="where JSON, markdown and plots go (default: results/longmemeval)")
    p.add_argument("--no-plots", action="store_true", help="write JSON and markdown only")
    add_answer_options(p)
    p.set_defaults(categories=None)  # LoCoMo-only; the shared option checks read it
    return p


def _add_demo(subparsers: Any) -> argparse.ArgumentParser:
    p = command(
        subparsers, "demo", _needs_bench_extra(cmd_demo),
        "ingest one LoCoMo conversation, answer its questions from memory, compare with BM25 and dense cosine",
        scope=False,
    )
    _add_locomo_data_options(p)
    p.add_argument("--conversation", metavar="ID", default=DEMO_CONVERSATION,
                   help=f"LoCoMo sample id (default: {DEMO_CONVERSATION})")
    p.add_argument("--examples", type=int, default=3, metavar="N", help="example questions to show (default 3)")
    p.add_argument("--out", metavar="DIR", default=None, help="also write JSON, markdown and plots here")
    return p
