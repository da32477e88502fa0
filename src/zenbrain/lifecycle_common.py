"""Shared pieces of the offline lifecycle (decay, consolidate, sleep).

Limits that keep the offline passes fast, the per-memory state keys and per-partition
key-value keys the lifecycle writes (beside those of ``dynamics``), and small helpers
for loading a partition and turning values into JSON-safe report entries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dynamics
from .mechanisms import ebbinghaus
from .model import Edge, Layer, MemoryItem
from .params import Params, bounded
from .pma import triple_copy
from .storage.base import Filter, Partition

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator

# ---------------------------------------------------------------------------- keys
# Per-memory state keys (MemoryItem.state) written by the lifecycle.
ARCHIVED_BY = "archived_by"  # which stage archived the memory: "decay" or "ib_budget"
RESCUED_AT = "rescued_at"  # time of the last STC rescue (epoch seconds); dynamics.RESCUED counts them
CONSOLIDATED_INTO = "consolidated_into"  # id of the schema that carries this episode's gist
CONF_LOCAL = "conf_local"  # [alpha, beta]: local Beta evidence, the unary factor of propagation
CONF_WRITTEN = "conf_written"  # [alpha, beta]: what propagation last wrote to conf_alpha/conf_beta
CONF_HISTORY = "conf_history"  # [[t, confidence], ...]: recent confidence points (curiosity's slope)

# Per-partition key-value keys written by the lifecycle.
KV_EDGE_DECAY = "edge_decay"  # {"at": time of the last Two-Factor edge decay}
KV_SPECTRAL_CACHE = "spectral_cache"  # {context: lifecycle_sleep.FiedlerMemo entry}: lambda_2 reuse

# Edge relations the lifecycle creates or treats specially.
EVIDENCE_OF = "evidence_of"  # episode -> schema: provenance, never decayed, depressed or pruned
BRIDGE = "bridge"  # spectral health: joins two components of the graph
COUNTERFACTUAL = "counterfactual"  # sleep: a selected counterfactual's new bridge edge
PROVENANCE = frozenset({EVIDENCE_OF})

SKIPPED = "switched off"

# Memory metadata keys an application may set to feed sleep selection (optional).
META_REWARD = "reward"  # task outcome in [0, 1]
META_TD_ERROR = "td_error"  # |delta_TD| in [0, 1]
META_STEPS = "steps"  # list of step strings of a procedure-like memory


def skipped(reason: str = SKIPPED) -> dict[str, Any]:
    return {"skipped": reason}


@dataclass(frozen=True)
class LifecycleLimits(Params):
    """Caps and couplings of the offline passes (not mechanism parameters of the paper)."""

    sleep_max_episodes: int = bounded(5000, 1, 10_000_000, "most recent active episodes in the replay pool")
    reward_saturation: float = bounded(5.0, 1.0, 1e6, "recalls at which an episode's usage reward reaches 1")
    patience_gain: float = bounded(0.4, 0.0, 1.0, "theta_v = theta_0 + gain * (5HT patience - 0.5)")
    consolidate_max_episodes: int = bounded(
        2000, 2, 100_000, "most recent unconsolidated episodes clustered per context and run"
    )
    schema_attach_similarity: float = bounded(
        0.8, -1.0, 1.0, "a new cluster this similar to an existing schema joins it instead of making another"
    )
    stc_max_pairs: int = bounded(2_000_000, 1_000, 1_000_000_000, "tagged x donor pairs examined per block")
    compositional_max_per_context: int = bounded(
        2000, 3, 10_000_000, "most recent vectors per context used to fit the shared basis"
    )
    curiosity_queue_size: int = bounded(50, 1, 1_000_000, "gaps kept in the curiosity queue")
    curiosity_history: int = bounded(8, 2, 1000, "confidence points kept per fact for learning progress")
    curiosity_min_interval_s: float = bounded(3600.0, 0.0, 1e9, "least time between two confidence points")

    def __post_init__(self) -> None:
        super().__post_init__()
        for f in dataclasses.fields(self):
            if f.type in (int, "int") and int(getattr(self, f.name)) != getattr(self, f.name):
                from .errors import ConfigError

                raise ConfigError(f"LifecycleLimits.{f.name} must be a whole number")


LIMITS = LifecycleLimits()


# ---------------------------------------------------------------------------- loading
def load(
    coord: MemoryCoordinator,
    part: Partition,
    *,
    layers: Iterable[Layer] | None = None,
    include_archived: bool = False,
    order_by: str = "created_at",
    descending: bool = False,
    limit: int | None = None,
) -> list[MemoryItem]:
    """Long-term memories of the whole partition (every context; never working/short-term)."""
    flt = Filter(
        layers=None if layers is None else frozenset(layers),
        contexts=None,
        session_id=None,
        include_archived=include_archived,
    )
    return coord.storage.query(part, flt, order_by=order_by, descending=descending, limit=limit)


class Snapshot:
    """The partition's long-term memories and edges, read once per operation.

    Stages read from it and, when they write, change the snapshot's objects the same way
    (strengths, states, archived flags, layers, confidences; edges put or deleted), so a
    whole sleep reads the store twice instead of once per stage. Writes by another
    process during the operation are not seen (as with any read-then-write pass).

    Edge writes can be deferred (``defer_edges``): the snapshot changes at once and the
    store at the next edge write through the snapshot (``write_edges``, ``put_edges``,
    ``delete_edges``) or ``flush``, in that write's transaction. ``write_edges`` merges
    them with its own: an edge put twice is written once, with its last value; an edge
    put and then deleted is only deleted. The store ends as after the writes one by one.
    """

    def __init__(self, coord: MemoryCoordinator, part: Partition) -> None:
        self.coord = coord
        self.part = part
        self.items: dict[str, MemoryItem] = {i.id: i for i in load(coord, part, include_archived=True)}
        self._edges: dict[tuple[str, str, str], Edge] | None = None
        # Deferred writes: deletions (they came first), then puts by key, then key-value pairs.
        self._deferred_deletes: list[tuple[str, str, str]] = []
        self._deferred_puts: dict[tuple[str, str, str], Edge] = {}
        self._deferred_kv: dict[str, Any] = {}

    def select(
        self, *, layers: Iterable[Layer] | None = None, archived: bool | None = False, kind: Any = None
    ) -> list[MemoryItem]:
        """Memories (oldest first) of the given layers; ``archived=None`` means either state."""
        lay = None if layers is None else frozenset(layers)
        if kind is None and archived is not None:  # the common filters, tested with less work
            if lay is None:
                return [i for i in self.items.values() if i.archived == archived]
            return [i for i in self.items.values() if i.layer in lay and i.archived == archived]
        return [
            i for i in self.items.values()
            if (lay is None or i.layer in lay)
            and (archived is None or i.archived == archived)
            and (kind is None or i.kind is kind)
        ]

    def add(self, items: Iterable[MemoryItem]) -> None:
        for i in items:
            self.items[i.id] = i

    @property
    def edges(self) -> dict[tuple[str, str, str], Edge]:
        if self._edges is None:
            self._edges = {(e.src, e.dst, e.relation): e for e in self.coord.storage.edges(self.part)}
        return self._edges

    def edges_touching(self, ids: Iterable[str]) -> list[Edge]:
        want = set(ids)
        return [e for e in self.edges.values() if e.src in want or e.dst in want]

    def reload_edges_of(self, ids: Sequence[str]) -> None:
        """Re-read the edges touching ``ids`` (after a write this snapshot did not make,
        e.g. ``store_many`` linking new memories)."""
        if self._edges is None or not ids:
            return
        self.flush()  # the store must hold what the snapshot holds before it is read again
        for e in self.coord.storage.edges(self.part, list(ids)):
            self._edges[edge_key(e)] = e

    def put_edges(self, tx: Any, edges: Sequence[Edge]) -> None:
        self.write_edges(tx, puts=edges)

    def delete_edges(self, tx: Any, keys: Sequence[tuple[str, str, str]]) -> None:
        self.write_edges(tx, deletes=keys)

    def write_edges(
        self,
        tx: Any,
        *,
        puts: Sequence[Edge] | Mapping[tuple[str, str, str], Edge] = (),
        deletes: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Put ``puts``, then delete ``deletes`` (with the deferred writes before them), in ``tx``.

        ``puts`` may be given keyed already (``{(src, dst, relation): edge}``)."""
        first = self._deferred_deletes
        merged = self._deferred_puts
        kv = self._deferred_kv
        self._deferred_deletes, self._deferred_puts, self._deferred_kv = [], {}, {}
        if isinstance(puts, Mapping):
            keyed: Any = puts.items()
            puts = list(puts.values())
        else:
            keyed = [((e.src, e.dst, e.relation), e) for e in puts]
        if self._edges is not None:
            self._edges.update(keyed)
            for k in deletes:
                self._edges.pop(k, None)
        if first:
            tx.delete_edges(self.part, first)
        if merged:
            merged.update(keyed)
            for k in deletes:
                merged.pop(k, None)
            out = list(merged.values())
        else:
            out = list(puts)
        if out:
            tx.put_edges(self.part, out)
        if deletes:
            tx.delete_edges(self.part, list(deletes))
        for key, value in kv.items():
            tx.kv_put(self.part, key, value)

    def defer_edges(
        self,
        *,
        puts: Sequence[Edge] | Mapping[tuple[str, str, str], Edge] = (),
        deletes: Sequence[tuple[str, str, str]] = (),
        kv: dict[str, Any] | None = None,
    ) -> None:
        """Change the snapshot now and the store with the next edge write (see the class).

        Only for writes made before any other deferred write: deletions of edges that no
        deferred put names, then puts (a sequence, or keyed as in ``write_edges``). ``kv``
        pairs are written with the edges.
        """
        if self.deferred:
            raise RuntimeError("edge writes are already deferred; flush them first")
        current = self.edges  # loaded now: a later load would not see the deferred writes
        self._deferred_deletes = list(deletes)
        if isinstance(puts, Mapping):
            self._deferred_puts = dict(puts)
        else:
            self._deferred_puts = {(e.src, e.dst, e.relation): e for e in puts}
        self._deferred_kv = dict(kv or {})
        current.update(self._deferred_puts)
        for k in deletes:
            current.pop(k, None)

    @property
    def deferred(self) -> bool:
        return bool(self._deferred_puts or self._deferred_deletes or self._deferred_kv)

    def flush(self) -> None:
        """Write the deferred edge writes, if any, in a transaction of their own."""
        if self.deferred:
            with self.coord.storage.transaction() as tx:
                self.write_edges(tx)


def vectors(coord: MemoryCoordinator, part: Partition, ids: Sequence[str]) -> np.ndarray:
    if not ids:
        return np.zeros((0, coord.storage.dim), dtype=np.float32)
    return np.asarray(coord.storage.vectors(part, list(ids)), dtype=np.float32)


def edge_key(e: Edge) -> tuple[str, str, str]:
    return (e.src, e.dst, e.relation)


def edge_entry(e: Edge, old: float | None = None, new: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"src": e.src, "dst": e.dst, "relation": e.relation}
    if old is not None or new is not None:
        out["weight"] = [num(old if old is not None else e.weight), num(new if new is not None else e.weight)]
    else:
        out["weight"] = num(e.weight)
    return out


def num(x: Any) -> float:
    return float(x)


def col(items: Sequence[MemoryItem], name: str, dtype: Any = float) -> np.ndarray:
    return np.fromiter((getattr(i, name) for i in items), dtype=dtype, count=len(items))


# ---------------------------------------------------------------------------- retrievability
def copy_state(item: MemoryItem, params: triple_copy.TripleCopyParams) -> triple_copy.CopyState:
    """The memory's TripleCopy state; one encoded at its last access when none is stored yet."""
    raw = item.state.get(dynamics.COPIES)
    if raw is not None:
        try:
            return triple_copy.CopyState.from_dict(raw)
        except (KeyError, TypeError, ValueError):
            pass
    return triple_copy.encode(s0=float(item.strength), now=float(item.last_access), params=params)


def retrievability(coord: MemoryCoordinator, items: Sequence[MemoryItem], now: float) -> np.ndarray:
    """R of every item via ``dynamics.retrievability``.

    With TripleCopy on, a memory that has no stored copy state is evaluated as if it had
    been encoded at its last access with its strength as S0 (the state is not written);
    without that, such a memory would read R = 0 whenever Ebbinghaus is switched off.
    """
    mech = coord.config.mechanisms
    ebb = coord.config.param("ebbinghaus_decay", ebbinghaus.DEFAULTS)
    tc = coord.config.param("triple_copy", triple_copy.DEFAULT_PARAMS)
    view: Sequence[MemoryItem] = items
    if mech.on("triple_copy"):
        view = [
            i if dynamics.COPIES in i.state
            else dataclasses.replace(i, state={**i.state, dynamics.COPIES: copy_state(i, tc).to_dict()})
            for i in items
        ]
    return np.asarray(dynamics.retrievability(view, now, mech, ebb=ebb, copies=tc), dtype=float)


__all__ = [
    "ARCHIVED_BY",
    "BRIDGE",
    "CONF_HISTORY",
    "CONF_LOCAL",
    "CONF_WRITTEN",
    "CONSOLIDATED_INTO",
    "COUNTERFACTUAL",
    "EVIDENCE_OF",
    "KV_EDGE_DECAY",
    "KV_SPECTRAL_CACHE",
    "LIMITS",
    "PROVENANCE",
    "RESCUED_AT",
    "SKIPPED",
    "LifecycleLimits",
    "Snapshot",
    "copy_state",
    "load",
    "retrievability",
    "skipped",
    "vectors",
]
