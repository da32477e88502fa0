"""``zenbrain demo``: one LoCoMo conversation stored by zenbrain, BM25 and dense cosine, each
question answered from memory; a few examples shown, the turns kept in ``--path`` if given."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from ..cli_support import (
    CACHE_FILE,
    EXIT_OK,
    USER_ENV,
    cache_dir,
    embedder_spec,
    make_config,
    one_line,
    parse_ints,
    status,
    store_exists,
    store_path,
)
from ..errors import ConfigError
from .embedding import cache_note
from .inputs import load_conversations
from .names import DEMO_SYSTEMS
from .retrieval_commands import locomo_results, print_tables, write_outputs
from .systems import check_bench_options

__all__ = ["DEMO_CONVERSATION", "cmd_demo"]

DEMO_CONVERSATION = "conv-26"


def cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    keep = args.path is not None
    if keep and store_exists(store_path(args)):
        raise ConfigError(f"demo writes a fresh store; {store_path(args)} already exists (choose another --path)")
    check_bench_options(args, DEMO_SYSTEMS, [])
    conv = load_conversations(args.data, [args.conversation])[0]
    scored = sum(1 for q in conv.questions if q.evidence)
    print(f"zenbrain demo: LoCoMo conversation {conv.sample_id} between {' and '.join(conv.speakers) or '?'}: "
          f"{len(conv.docs)} turns in {len(conv.session_times)} sessions, {scored} questions with evidence.")
    print(f"Each system stores every turn, then answers every question with its top {max(parse_ints(args.ks, '--ks') or [10])} turns; "
          "a question counts as answered when the evidence turns are among them.")
    status(f"embedder {embedder_spec(args)}; cache {cache_note(args)}")
    results = locomo_results(args, [conv], DEMO_SYSTEMS, [])
    print()
    print_tables(results, args.ci)
    _print_examples(results, conv, args.examples)
    if args.out:
        title = f"LoCoMo turn-level retrieval ({results['mode']}), embedder {results['embedder']}"
        write_outputs(results, args.out, title=title, plots=True)
    if keep:
        _persist_conversation(args, conv)
    print(f"\nfinished in {time.perf_counter() - t0:.0f} s")
    return EXIT_OK


def _print_examples(results: dict[str, Any], conv: Any, n: int) -> None:
    """A few questions with zenbrain's top turns; '*' marks an evidence turn."""
    if n <= 0 or "zenbrain" not in results["systems"]:
        return
    text = {d.id: d.text for d in conv.docs}
    answers = {q.qid: q.answer for q in conv.questions}
    records = [r for r in results["systems"]["zenbrain"]["questions"] if r["gold"]]
    chosen: list[dict[str, Any]] = []
    for group in ("single-hop", "temporal", "multi-hop", "open-domain", "adversarial"):
        for r in records:
            if r["group"] == group:
                chosen.append(r)
                break
    chosen = (chosen + [r for r in records if r not in chosen])[:n]
    if not chosen:
        return
    print("\nExamples (zenbrain's top 3 turns; * = evidence turn):")
    for r in chosen:
        print(f"\n  Q ({r['group']}): {r['question']}")
        if answers.get(r["qid"]):
            print(f"  reference answer: {answers[r['qid']]}")
        gold = set(r["gold"])
        for rank, doc_id in enumerate(r["ranked"][:3], start=1):
            mark = "*" if doc_id in gold else " "
            print(f"   {mark}{rank}. [{doc_id}] {one_line(text.get(doc_id, ''), 100)}")
        found = [g for g in r["gold"] if g in r["ranked"]]
        print(f"    evidence {', '.join(r['gold'])}: {len(found)}/{len(gold)} in the top {len(r['ranked'])}")


def _persist_conversation(args: argparse.Namespace, conv: Any) -> None:
    """Store the conversation's turns as episodic memories in the store at ``--path``."""
    from ..api import open_memory
    from ..model import Kind, Layer, Scope
    from ..providers.cache import CachedEmbedder
    from ..providers.factory import make_embedder

    path = store_path(args)
    inner = make_embedder(embedder_spec(args))
    emb = CachedEmbedder(inner, None if args.no_cache else cache_dir() / CACHE_FILE)
    user = os.environ.get(USER_ENV) or "default"
    records = [
        {"content": d.text, "kind": Kind.EPISODE, "layer": Layer.EPISODIC, "event_time": d.time,
         "metadata": {"doc_id": d.id, "speaker": d.speaker, "session": d.session, "sample_id": conv.sample_id}}
        for d in conv.docs
    ]
    try:
        with open_memory(path, embedder=emb, config=make_config(args)) as mem:
            mem.store_many(records, Scope(user))
    finally:
        emb.close()
    q = next((q.question for q in conv.questions if q.evidence), "what happened?")
    print(f"\nstored the {len(records)} turns in {path}; try:\n  zenbrain --path {path} recall {json.dumps(q)} --why")
