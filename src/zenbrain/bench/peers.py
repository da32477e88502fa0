"""Other memory systems run beside zenbrain in the same benchmark: Mem0 and ChromaDB.

Both are optional (the ``peers`` extra) and imported only when a peer is built; a
missing library raises :class:`~zenbrain.errors.ProviderError` naming the extra.
Both run fully offline.

* :class:`Mem0System` -- Mem0 open source (``mem0ai``). Every turn is stored with
  ``Memory.add(..., infer=False)``: the raw text becomes one memory, no LLM is called
  (the LLM section of its config holds a placeholder key that is never used). Embeddings
  come from Mem0's own HuggingFace embedder pointed at the local all-MiniLM-L6-v2
  weights (the same model as zenbrain's ``minilm`` embedder), or from any
  OpenAI-compatible or Ollama endpoint. The vector store is Mem0's local Qdrant
  (default) or FAISS, in a temporary folder. Mem0's telemetry is switched off (through
  ``MEM0_TELEMETRY`` before its import, and its module flags after), its home folder (``MEM0_DIR``) is a temporary folder unless set, and Hugging Face is
  kept offline. Each doc id travels in the memory's metadata and is read back from the
  search results. Search asks Mem0 for the top k with ``threshold=0`` so a full list
  comes back, as from the other systems.

  In this configuration Mem0 ranks by embedding similarity alone: its BM25 keyword
  scoring needs ``fastembed`` and its entity boost needs spaCy's ``en_core_web_sm``,
  and both fetch models from the network on first use, so neither is installed here.

* :class:`ChromaSystem` -- ChromaDB (``chromadb``) ``PersistentClient`` in a temporary
  folder, one collection with cosine HNSW, and a custom embedding function that wraps a
  zenbrain :class:`~zenbrain.providers.base.Embedder` (Chroma's default embedder would
  download its model). Chroma builds embedding functions from their config again and
  again, so construction only stores a key; the embedder itself is shared.

Both also take plain texts with precomputed vectors (``add_texts``), for the speed
benchmark: the same vectors go into every system, and only query texts are embedded.
Given a zenbrain ``embedder``, Mem0 embeds through it (vectors handed to ``add_texts``
are looked up, anything else is embedded by that embedder) instead of loading its own
model.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, ProviderError
from ..providers.base import Embedder, normalize_rows
from .base import Doc
from .names import PEER_SYSTEMS

__all__ = [
    "INSTALL_HINT",
    "PEER_SYSTEMS",
    "ChromaSystem",
    "Mem0System",
    "check_peer_available",
    "make_peer",
    "mem0_embedder_config",
]

PEERS_EXTRA = "peers"
INSTALL_HINT = "pip install 'zenbrain[peers]'"
_PEER_MODULES = {"mem0": ("mem0", "mem0ai"), "mem0-faiss": ("mem0", "mem0ai"), "chroma": ("chromadb", "chromadb")}
_MEM0_DIMS = 384
_PLACEHOLDER_KEY = "sk-offline-placeholder-never-sent"
_log = logging.getLogger(__name__)


def _missing(what: str, package: str, exc: BaseException | None = None) -> ProviderError:
    detail = f" ({exc})" if exc is not None else ""
    return ProviderError(
        f"the {what} peer needs the '{package}' package from zenbrain's '{PEERS_EXTRA}' extra: {INSTALL_HINT}{detail}"
    )


def check_peer_available(name: str) -> None:
    """Raise ProviderError (naming the extra) if the library behind peer ``name`` is missing."""
    import importlib.util

    if name not in _PEER_MODULES:
        raise ConfigError(f"unknown peer {name!r}; peers are {', '.join(PEER_SYSTEMS)}")
    module, package = _PEER_MODULES[name]
    if importlib.util.find_spec(module) is None:
        raise _missing(name, package)


# --------------------------------------------------------------------------- Mem0

_mem0_home: str | None = None
_mem0_lock = threading.Lock()


def _prepare_mem0_env() -> None:
    """Environment Mem0 reads when it is first imported: no telemetry, a private home, offline HF."""
    global _mem0_home
    from ..providers.minilm import set_offline_env

    set_offline_env()
    os.environ["MEM0_TELEMETRY"] = "False"
    if not os.environ.get("MEM0_DIR") and _mem0_home is None:
        _mem0_home = tempfile.mkdtemp(prefix="zenbrain-mem0-home-")
        os.environ["MEM0_DIR"] = _mem0_home
        atexit.register(shutil.rmtree, _mem0_home, True)


def _import_mem0() -> Any:
    with _mem0_lock:
        _prepare_mem0_env()
        try:
            import mem0
            from mem0.memory import main, telemetry
        except ImportError as exc:
            raise _missing("mem0", "mem0ai", exc) from exc
    # Mem0 reads MEM0_TELEMETRY once, at import; if it was imported earlier, switch it off here.
    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False
    for name in ("mem0", "mem0.memory.main", "mem0.vector_stores"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return mem0


def mem0_embedder_config(spec: str | None = None, *, model_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Mem0's ``embedder`` config for a zenbrain embedder spec.

    ``minilm`` and ``minilm-onnx`` (and None) map to Mem0's HuggingFace embedder over
    the local all-MiniLM-L6-v2 directory; ``openai:MODEL@URL`` and ``ollama:MODEL[@URL]``
    to Mem0's OpenAI-compatible and Ollama embedders. Other specs raise ConfigError.
    """
    from ..providers.factory import parse_spec

    provider, model, url = parse_spec(spec or "minilm")
    if provider in ("minilm", "minilm-onnx", "onnx", "sentence-transformers"):
        if model_path is None:
            from ..providers.minilm import minilm_model_path

            model_path = minilm_model_path()
        return {
            "provider": "huggingface",
            "config": {"model": str(model_path), "embedding_dims": _MEM0_DIMS, "model_kwargs": {"device": "cpu"}},
        }
    if provider == "openai" and model:
        cfg: dict[str, Any] = {"model": model, "api_key": os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY}
        if url:
            cfg["openai_base_url"] = url
        return {"provider": "openai", "config": cfg}
    if provider == "ollama" and model:
        cfg = {"model": model}
        if url:
            cfg["ollama_base_url"] = url.removesuffix("/v1")
        return {"provider": "ollama", "config": cfg}
    raise ConfigError(
        f"the mem0 peer cannot embed with {spec!r}; use minilm (the default), openai:MODEL[@URL] or ollama:MODEL[@URL]"
    )


class _Mem0Embedding:
    """Mem0's embedding-model interface over a zenbrain embedder.

    Texts found in ``vectors`` (filled by ``Mem0System.add_texts``) get those vectors;
    any other text (a query) is embedded by the zenbrain embedder.
    """

    def __init__(self, embedder: Embedder, dims: int) -> None:
        from types import SimpleNamespace

        self.embedder = embedder
        self.config = SimpleNamespace(embedding_dims=dims)
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        v = self.vectors.get(text)
        if v is None:
            v = normalize_rows(np.asarray(self.embedder.embed([text]), dtype=np.float32))[0]
        return [float(x) for x in v]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [self.embed(t, memory_action) for t in texts]


class Mem0System:
    """Mem0 open source as a benchmark system (see the module docstring).

    ``embedder_config`` is Mem0's own embedder section (default: HuggingFace over the
    local MiniLM, see :func:`mem0_embedder_config`); ``embedding_dims`` must match it.
    ``embedder`` (a zenbrain embedder) replaces Mem0's embedding model after it is built:
    Mem0 then embeds through it, and its own model is never loaded.
    ``vector_store`` is ``"qdrant"`` (local, on disk) or ``"faiss"``. The Mem0 ``Memory``
    is built on first use; ``reset`` calls ``Memory.reset()``.
    """

    def __init__(
        self,
        *,
        name: str = "mem0",
        vector_store: str = "qdrant",
        embedder_config: Mapping[str, Any] | None = None,
        embedding_dims: int = _MEM0_DIMS,
        workdir: str | None = None,
        user_id: str = "bench",
        threshold: float = 0.0,
        progress: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        if vector_store not in ("qdrant", "faiss"):
            raise ConfigError(f"mem0 vector_store must be 'qdrant' or 'faiss', got {vector_store!r}")
        self.name = name
        self.vector_store = vector_store
        self.embedding_dims = int(embedding_dims)
        self.user_id = user_id
        self.threshold = float(threshold)
        self.progress = progress
        self._mem0 = _import_mem0()
        self._embedding = _Mem0Embedding(embedder, self.embedding_dims) if embedder is not None else None
        if embedder_config is not None:
            self._embedder_config = dict(embedder_config)
        elif embedder is not None:
            # Built by Mem0, replaced before first use: a client that never connects.
            self._embedder_config = {
                "provider": "openai",
                "config": {"model": "unused", "api_key": _PLACEHOLDER_KEY, "embedding_dims": self.embedding_dims},
            }
        else:
            self._embedder_config = mem0_embedder_config()
        self._own_dir = workdir is None
        self._dir = workdir or tempfile.mkdtemp(prefix="zenbrain-bench-mem0-")
        self._memory: Any = None
        self._doc_of: dict[str, str] = {}
        self.skipped_blank = 0

    def config(self) -> dict[str, Any]:
        """The config handed to ``mem0.Memory.from_config``."""
        store: dict[str, Any] = {
            "collection_name": "bench",
            "path": os.path.join(self._dir, self.vector_store),
            "embedding_model_dims": self.embedding_dims,
        }
        if self.vector_store == "qdrant":
            store["on_disk"] = True
        else:
            store["distance_strategy"] = "cosine"
        return {
            "vector_store": {"provider": self.vector_store, "config": store},
            "embedder": self._embedder_config,
            # infer=False never calls the LLM; Mem0 still wants one configured.
            "llm": {"provider": "openai", "config": {"api_key": _PLACEHOLDER_KEY}},
            "history_db_path": os.path.join(self._dir, "history.db"),
        }

    def _mem(self) -> Any:
        if self._memory is None:
            try:
                self._memory = self._mem0.Memory.from_config(self.config())
            except ImportError as exc:
                raise _missing("mem0", getattr(exc, "name", None) or "mem0ai", exc) from exc
            except Exception as exc:
                raise ProviderError(f"cannot start Mem0: {type(exc).__name__}: {exc}") from exc
            if self._embedding is not None:
                self._memory.embedding_model = self._embedding
        return self._memory

    def reset(self) -> None:
        if self._memory is not None:
            self._memory.reset()
        self._doc_of = {}

    def add(self, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        mem = self._mem()
        it: Any = docs
        if self.progress and len(docs) >= 32:
            from tqdm.auto import tqdm

            it = tqdm(docs, desc=f"{self.name} add", unit="turn", leave=False)
        for d in it:
            if not d.text.strip():
                self.skipped_blank += 1
                continue
            role = "assistant" if d.speaker == "assistant" else "user"
            meta: dict[str, Any] = {"doc_id": d.id}
            if d.session:
                meta["session"] = str(d.session)
            if d.speaker:
                meta["speaker"] = str(d.speaker)
            out = mem.add([{"role": role, "content": d.text}], user_id=self.user_id, metadata=meta, infer=False)
            for r in (out or {}).get("results", []):
                if isinstance(r, dict) and r.get("id"):
                    self._doc_of[str(r["id"])] = d.id

    def add_texts(
        self, texts: Sequence[str], vectors: np.ndarray | None = None, *, ids: Sequence[str] | None = None, batch: int = 100
    ) -> int:
        """Store plain texts as raw memories (``infer=False``), ``batch`` messages per ``add``
        call; Mem0 still embeds and inserts them one by one. ``vectors`` (one row per text)
        need the ``embedder`` option: they are used instead of embedding the texts. Doc
        ids default to running positions. Returns the number of memories Mem0 created."""
        embedding = self._embedding
        if vectors is not None and embedding is None:
            raise ConfigError("Mem0System.add_texts with vectors needs the embedder option")
        texts = list(texts)
        if ids is not None and len(ids) != len(texts):
            raise ConfigError("add_texts: ids and texts differ in length")
        if vectors is not None and len(vectors) != len(texts):
            raise ConfigError("add_texts: vectors and texts differ in length")
        mem = self._mem()
        start = len(self._doc_of)
        made = 0
        for i in range(0, len(texts), max(1, int(batch))):
            chunk = texts[i : i + max(1, int(batch))]
            if vectors is not None and embedding is not None:
                embedding.vectors = dict(zip(chunk, np.asarray(vectors[i : i + len(chunk)], dtype=np.float32)))
            try:
                out = mem.add([{"role": "user", "content": t} for t in chunk], user_id=self.user_id, infer=False)
            finally:
                if embedding is not None:
                    embedding.vectors = {}
            by_text = {t: (ids[i + j] if ids is not None else str(start + i + j)) for j, t in enumerate(chunk)}
            for r in (out or {}).get("results", []):
                if isinstance(r, dict) and r.get("id"):
                    memory = r.get("memory")
                    text_id = by_text.get(memory) if isinstance(memory, str) else None
                    self._doc_of[str(r["id"])] = text_id if text_id is not None else str(r["id"])
                    made += 1
        return made

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        if k <= 0 or not query.strip() or self._memory is None or not self._doc_of:
            return []
        res = self._memory.search(query, top_k=int(k), filters={"user_id": self.user_id}, threshold=self.threshold)
        out: list[str] = []
        seen: set[str] = set()
        for r in (res or {}).get("results", []):
            doc_id = (r.get("metadata") or {}).get("doc_id") or self._doc_of.get(str(r.get("id")))
            if doc_id is not None and doc_id not in seen:
                seen.add(doc_id)
                out.append(str(doc_id))
        return out[:k]

    def close(self) -> None:
        if self._memory is not None:
            try:
                self._memory.close()
                client = getattr(self._memory.vector_store, "client", None)
                if client is not None and hasattr(client, "close"):
                    client.close()
            except Exception as exc:  # noqa: BLE001 - closing is best effort; the folder goes anyway
                _log.debug("closing Mem0 failed: %s", exc)
            self._memory = None
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)


# --------------------------------------------------------------------------- Chroma

_EF_NAME = "zenbrain-embedder"
_embedders: dict[str, Embedder] = {}
_ef_class: Any = None
_ef_lock = threading.Lock()


def _import_chromadb() -> Any:
    try:
        return importlib.import_module("chromadb")
    except ImportError as exc:
        raise _missing("chroma", "chromadb", exc) from exc


def _embedding_function_class() -> Any:
    """Chroma's EmbeddingFunction subclass around a zenbrain embedder (made once, registered once)."""
    global _ef_class
    with _ef_lock:
        if _ef_class is not None:
            return _ef_class
        chromadb = _import_chromadb()
        from chromadb.api.types import EmbeddingFunction, Space

        class ZenBrainEmbeddingFunction(EmbeddingFunction):
            """Cheap to build: holds only the key of an embedder registered by a ChromaSystem."""

            def __init__(self, key: str) -> None:
                self.key = key

            def __call__(self, input):
                emb = _embedders.get(self.key)
                if emb is None:
                    raise ProviderError("the zenbrain embedder behind this Chroma collection was closed")
                vecs = normalize_rows(np.asarray(emb.embed(list(input)), dtype=np.float32))
                return [row for row in vecs]

            @staticmethod
            def name() -> str:
                return _EF_NAME

            def get_config(self) -> dict[str, Any]:
                return {"key": self.key}

            @staticmethod
            def build_from_config(config: dict[str, Any]) -> ZenBrainEmbeddingFunction:
                return ZenBrainEmbeddingFunction(str(config.get("key", "")))

            def default_space(self) -> Space:
                return "cosine"

        try:
            chromadb.utils.embedding_functions.register_embedding_function(ZenBrainEmbeddingFunction)
        except (AttributeError, ValueError):  # older Chroma: nothing to register with
            pass
        _ef_class = ZenBrainEmbeddingFunction
        return _ef_class


class ChromaSystem:
    """ChromaDB as a benchmark system: cosine HNSW over ``embedder``'s vectors.

    Chroma ids are insertion positions; the doc ids are kept beside them (and in each
    record's metadata), so repeated doc ids do not collide.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        name: str = "chroma",
        workdir: str | None = None,
        batch_size: int = 1000,
    ) -> None:
        chromadb = _import_chromadb()
        from chromadb.config import Settings

        self.name = name
        self.embedder = embedder
        self.batch_size = max(1, int(batch_size))
        self._key = uuid.uuid4().hex
        _embedders[self._key] = embedder
        self._ef = _embedding_function_class()(self._key)
        self._own_dir = workdir is None
        self._dir = workdir or tempfile.mkdtemp(prefix="zenbrain-bench-chroma-")
        self._client = chromadb.PersistentClient(
            path=self._dir, settings=Settings(anonymized_telemetry=False, allow_reset=True)
        )
        self._collection: Any = None
        self._ids: list[str] = []
        self._open()

    def _open(self) -> None:
        self._collection = self._client.create_collection(
            "bench", embedding_function=self._ef, configuration={"hnsw": {"space": "cosine"}}
        )
        self._ids = []

    def reset(self) -> None:
        self._client.delete_collection("bench")
        self._open()

    def add(self, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        for i in range(0, len(docs), self.batch_size):
            chunk = docs[i : i + self.batch_size]
            start = len(self._ids)
            self._collection.add(
                ids=[str(start + j) for j in range(len(chunk))],
                documents=[d.text if d.text.strip() else " " for d in chunk],
                metadatas=[{"doc_id": d.id} for d in chunk],
            )
            self._ids.extend(d.id for d in chunk)

    def add_texts(
        self, texts: Sequence[str], vectors: np.ndarray | None = None, *, ids: Sequence[str] | None = None
    ) -> int:
        """Store plain texts, ``batch_size`` per Chroma ``add``, with their ``vectors`` (one
        row per text) when given (then nothing is embedded), without metadata. Doc ids
        default to running positions. Returns the number stored."""
        texts = list(texts)
        if ids is not None and len(ids) != len(texts):
            raise ConfigError("add_texts: ids and texts differ in length")
        if vectors is not None and len(vectors) != len(texts):
            raise ConfigError("add_texts: vectors and texts differ in length")
        step = min(self.batch_size, self._client.get_max_batch_size())
        for i in range(0, len(texts), step):
            chunk = [t if t.strip() else " " for t in texts[i : i + step]]
            start = len(self._ids)
            kw: dict[str, Any] = {}
            if vectors is not None:
                kw["embeddings"] = normalize_rows(np.asarray(vectors[i : i + len(chunk)], dtype=np.float32))
            self._collection.add(ids=[str(start + j) for j in range(len(chunk))], documents=chunk, **kw)
            self._ids.extend(ids[i : i + len(chunk)] if ids is not None else [str(start + j) for j in range(len(chunk))])
        return len(texts)

    def search(self, query: str, k: int, *, query_time: float | None = None) -> list[str]:
        if k <= 0 or not self._ids:
            return []
        res = self._collection.query(query_texts=[query], n_results=min(int(k), len(self._ids)), include=[])
        out: list[str] = []
        seen: set[str] = set()
        for cid in (res.get("ids") or [[]])[0]:
            doc_id = self._ids[int(cid)]
            if doc_id not in seen:
                seen.add(doc_id)
                out.append(doc_id)
        return out

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception as exc:  # noqa: BLE001 - best effort; the folder goes anyway
                _log.debug("closing Chroma failed: %s", exc)
            self._client = None
        _embedders.pop(self._key, None)
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)


# --------------------------------------------------------------------------- factory


def make_peer(name: str, embedder: Embedder | None = None, *, embedder_spec: str | None = None, progress: bool = False) -> Any:
    """A peer system by name: ``mem0`` (Qdrant local), ``mem0-faiss`` or ``chroma``.

    ``chroma`` embeds with ``embedder``; the Mem0 peers embed with Mem0's own embedder
    built from ``embedder_spec`` (see :func:`mem0_embedder_config`).
    """
    check_peer_available(name)
    if name == "chroma":
        if embedder is None:
            raise ConfigError("the chroma peer needs an embedder")
        return ChromaSystem(embedder, name="chroma")
    store = "faiss" if name == "mem0-faiss" else "qdrant"
    return Mem0System(name=name, vector_store=store, embedder_config=mem0_embedder_config(embedder_spec), progress=progress)
