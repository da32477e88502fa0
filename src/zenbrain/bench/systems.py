"""Benchmark systems by name, and the checks of the options that choose them.

``zenbrain``, the baselines (``bm25``, ``dense``, ``hybrid``, ``no-memory``), the peers
(``mem0``, ``mem0-faiss``, ``chroma``) and ablations: each ``--ablate NAME`` adds
``zenbrain-NAME`` with mechanism NAME off, ``--ablate layer:LAYER`` one with a layer off.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..cli_support import off_names, parse_ints, split_list
from ..errors import ConfigError
from .names import BENCH_SYSTEMS, PEER_SYSTEMS

__all__ = [
    "build_systems",
    "check_bench_options",
    "check_options",
    "make_systems",
    "peer_notes",
    "system_names",
]


def system_names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """``--systems`` (each once, in order) and the ``--ablate`` names."""
    names = list(dict.fromkeys(split_list(args.systems)))
    ablations = [a for item in args.ablate for a in split_list(item)]
    return names, ablations


def _check_ablation(name: str) -> None:
    from ..model import Layer
    from ..registry import check_names

    if name.startswith("layer:"):
        Layer.parse(name.split(":", 1)[1])
    else:
        check_names([name])


def check_bench_options(args: argparse.Namespace, names: Sequence[str], ablations: Sequence[str]) -> None:
    """Refuse bad options of zenbrain and the baselines before any data is read or any model is loaded."""
    ks = parse_ints(args.ks, "--ks")
    if not ks or min(ks) < 1:
        raise ConfigError("--ks must be positive integers")
    parse_ints(args.categories, "--categories")
    unknown = [n for n in names if n not in BENCH_SYSTEMS]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(BENCH_SYSTEMS)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    for a in ablations:
        _check_ablation(a)
    off_names(args)


def check_options(args: argparse.Namespace, names: Sequence[str], ablations: Sequence[str]) -> None:
    """Refuse bad options (systems, cut-offs, answer flags, missing peer libraries) before any work."""
    from .peers import check_peer_available

    known = (*BENCH_SYSTEMS, *PEER_SYSTEMS)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(known)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    core = [n for n in names if n not in PEER_SYSTEMS]
    if core or ablations:
        check_bench_options(args, core, ablations)
    else:
        ks = parse_ints(args.ks, "--ks")
        if not ks or min(ks) < 1:
            raise ConfigError("--ks must be positive integers")
        if getattr(args, "categories", None) is not None:
            parse_ints(args.categories, "--categories")
        off_names(args)
    for n in names:
        if n in PEER_SYSTEMS:
            check_peer_available(n)
    if "mem0" in names or "mem0-faiss" in names:
        from ..cli_support import embedder_spec
        from .peers import mem0_embedder_config

        mem0_embedder_config(embedder_spec(args))  # ConfigError for embedders Mem0 cannot use
    if args.answer_limit is not None and args.answer_limit < 0:
        raise ConfigError("--answer-limit must be 0 or more")
    if args.answer_k is not None and args.answer_k < 1:
        raise ConfigError("--answer-k must be at least 1")
    if args.answer_model is None and (args.judge_model or args.answer_limit is not None or args.answer_k is not None):
        raise ConfigError("--judge-model, --answer-limit and --answer-k need --answer-model")


def make_systems(names: Sequence[str], ablations: Sequence[str], embedder: Any, config: Any, *,
                 store: str | None = None) -> list[Any]:
    """zenbrain and the baselines by name; each ablation adds ``zenbrain-NAME``. ``store``: where
    the zenbrain systems keep their memories (None: temporary SQLite files; or a PostgreSQL URL)."""
    from ..model import Layer
    from ..registry import check_names
    from .baselines import BM25System, DenseSystem, HybridRRFSystem, NoMemorySystem
    from .zenbrain_system import ZenBrainSystem

    unknown = [n for n in names if n not in BENCH_SYSTEMS]
    if unknown:
        raise ConfigError(f"unknown system(s) {', '.join(unknown)}; systems are {', '.join(BENCH_SYSTEMS)}")
    if not names and not ablations:
        raise ConfigError("no systems to run")
    # Validate every ablation before building anything.
    variants: list[tuple[str, Any]] = []
    for a in ablations:
        if a.startswith("layer:"):
            layer = Layer.parse(a.split(":", 1)[1])
            variants.append((f"zenbrain-layer:{layer.value}", replace(config, disabled_layers=config.disabled_layers | {layer})))
        else:
            check_names([a])
            variants.append((f"zenbrain-{a}", config.without(a)))
    seen = set(names)
    for name, _ in variants:
        if name in seen:
            raise ConfigError(f"system {name!r} is given twice")
        seen.add(name)
    systems: list[Any] = []
    for n in dict.fromkeys(names):
        if n == "zenbrain":
            systems.append(ZenBrainSystem(embedder, config=config, name="zenbrain", store=store))
        elif n == "bm25":
            systems.append(BM25System())
        elif n == "dense":
            systems.append(DenseSystem(embedder, name="dense"))
        elif n == "hybrid":
            systems.append(HybridRRFSystem(BM25System(), DenseSystem(embedder), name="hybrid-rrf"))
        else:
            systems.append(NoMemorySystem())
    for name, cfg in variants:
        systems.append(ZenBrainSystem(embedder, config=cfg, name=name, store=store))
    return systems


def build_systems(
    names: Sequence[str], ablations: Sequence[str], embedder: Any, config: Any, *, embedder_spec: str, progress: bool,
    store: str | None = None,
) -> list[Any]:
    """zenbrain and the baselines (``make_systems``), then peers, then zenbrain ablations."""
    from .peers import make_peer

    core = [n for n in names if n not in PEER_SYSTEMS]
    systems: list[Any] = []
    try:
        if core:
            systems += make_systems(core, [], embedder, config, store=store)
        for n in names:
            if n in PEER_SYSTEMS:
                systems.append(make_peer(n, embedder, embedder_spec=embedder_spec, progress=progress))
        if ablations:
            systems += make_systems([], ablations, embedder, config, store=store)
    except BaseException:
        for s in systems:
            s.close()
        raise
    return systems


def peer_notes(names: Sequence[str], embedder_name: str, spec: str) -> dict[str, str]:
    """How each peer in ``names`` was run, for the report."""
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
