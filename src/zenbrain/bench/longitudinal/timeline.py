"""Memory through time: sessions at their own dates, a lifecycle every night, questions at checkpoints.

A workload is a list of :class:`TimedSession` (documents said together at one time), a list
of :class:`Use` (recalls an application makes between sessions, read-write) and a list of
:class:`Probe` (questions asked at a checkpoint, read-only, scored against gold doc ids).
:func:`run_unit` feeds one workload to one :class:`TimelineSystem`:

1. the clock starts an hour before the first session;
2. before each session (and each use) every night that has passed runs the nightly
   lifecycle (``decay`` then ``sleep`` at ``Protocol.night_hour`` UTC, one night at a time);
3. each session is stored turn by turn (one ``store`` per document, a session-scoped
   ``Scope``, speaker and doc id in metadata, event time = the session's date, turns
   ``turn_seconds`` apart), then ``end_session``; a session of independent notes
   (``conversation=False``) is stored the same way without a session;
4. a probe is asked right after the session it names (``after`` = a session key, or
   ``None`` for after the last session), with ``recall(..., touch=False)``: measuring never
   changes the memory.

:class:`LifeStore` is zenbrain on this protocol (through the public API only);
:class:`StaticTimeline` wraps any :class:`~zenbrain.bench.base.RetrievalSystem` (BM25,
dense): it adds each session when it happens and has no lifecycle.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, runtime_checkable
from typing import Protocol as TypingProtocol

from ...api import open_memory
from ...clock import DAY, SimulatedClock
from ...config import Config
from ...coordinator import MemoryCoordinator
from ...errors import ValidationError
from ...ids import seeded_ids
from ...model import Scope
from ...providers.base import Embedder
from ..base import Doc, RetrievalSystem

__all__ = [
    "DIAGNOSTIC_VIEWS",
    "UPDATE_MODES",
    "LifeStore",
    "Probe",
    "Protocol",
    "StaticTimeline",
    "TimedSession",
    "TimelineSystem",
    "Use",
    "next_night",
    "night_counters",
    "run_unit",
]

UPDATE_MODES = ("new", "supersede", "update", "revise", "correct")
HIT_PREFIX = "@"  # ranked ids of memories that are no document (consolidated schemas): "@<memory id>"

# Read-only re-rankings of the final store that take one cause of loss away at a time:
# archived memories back in the candidates, then the retrievability factor neutralised,
# then the query type's layer weights off as well.
DIAGNOSTIC_VIEWS = ("with_archived", "no_retrievability", "no_layer_weights")


@dataclass(frozen=True)
class Protocol:
    """How a workload is lived through. Defaults are the documented protocol."""

    night_hour: float = 3.0  # the nightly lifecycle runs at 03:00 UTC
    turn_seconds: float = 30.0  # time between two stored turns of one session
    context_k: int = 5  # before storing a turn the agent recalls with it (k hits, touch=True); 0 = no use
    nightly: tuple[str, ...] = ("decay", "sleep")  # what runs every night, in order
    routed: bool = True  # store as an application does (zenbrain classifies and routes); False: episodes

    def __post_init__(self) -> None:
        bad = [n for n in self.nightly if n not in ("decay", "sleep", "consolidate")]
        if bad:
            raise ValueError(f"unknown nightly operation(s) {bad}; use decay, sleep, consolidate")
        if not 0.0 <= self.night_hour < 24.0:
            raise ValueError("night_hour must lie in [0, 24)")
        if self.turn_seconds < 0 or self.context_k < 0:
            raise ValueError("turn_seconds and context_k must not be negative")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["nightly"] = list(self.nightly)
        return d


@dataclass(frozen=True)
class TimedSession:
    key: str  # session id, unique in the workload (also the Scope's session_id)
    time: float  # when the session starts (seconds since the epoch)
    docs: tuple[Doc, ...]
    # A conversation (turns that are each other's context) or a batch of independent notes,
    # which zenbrain stores without a session: no turn is indexed with its predecessor.
    conversation: bool = True


@dataclass(frozen=True)
class Use:
    """A recall the application makes at ``time`` (read-write: it is use, not measurement)."""

    time: float
    query: str


@dataclass(frozen=True)
class Probe:
    """A question asked right after session ``after`` (None: after the last session)."""

    qid: str
    question: str
    gold: tuple[str, ...]
    checkpoint: str  # "end", "fresh", ... (a label the reports group by)
    after: str | None = None
    group: str = "all"
    extra: Mapping[str, Any] = field(default_factory=dict)


def next_night(t: float, hour: float) -> float:
    """The first nightly run strictly after ``t`` (at ``hour`` UTC)."""
    offset = hour * 3600.0
    return (math.floor((t - offset) / DAY) + 1) * DAY + offset


@runtime_checkable
class TimelineSystem(TypingProtocol):
    name: str

    def reset(self) -> None: ...
    def start(self, t: float) -> None: ...
    def advance_to(self, t: float) -> None: ...
    def add_session(self, session: TimedSession) -> None: ...
    def use(self, u: Use) -> None: ...
    def search_hits(self, query: str, k: int) -> list[tuple[str, str]]: ...
    def lifecycle(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


# ---------------------------------------------------------------------------- baselines
class StaticTimeline:
    """A retrieval system without a lifecycle, fed each session when it happens."""

    def __init__(self, inner: RetrievalSystem, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self._text: dict[str, str] = {}
        self._ingest = 0.0

    def reset(self) -> None:
        self.inner.reset()
        self._text = {}
        self._ingest = 0.0

    def start(self, t: float) -> None:
        pass

    def advance_to(self, t: float) -> None:
        pass

    def add_session(self, session: TimedSession) -> None:
        t0 = time.perf_counter()
        self.inner.add(list(session.docs))
        self._ingest += time.perf_counter() - t0
        for d in session.docs:
            self._text[d.id] = d.text

    def use(self, u: Use) -> None:
        pass

    def search_hits(self, query: str, k: int) -> list[tuple[str, str]]:
        return [(d, self._text.get(d, "")) for d in self.inner.search(query, k)]

    def lifecycle(self) -> dict[str, Any]:
        return {"store_seconds": self._ingest, "documents": len(self._text)}

    def close(self) -> None:
        self.inner.close()


# ---------------------------------------------------------------------------- zenbrain
def _count(x: Any) -> int:
    if isinstance(x, (list, tuple, dict)):
        return len(x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return int(x)
    return 0


def night_counters(reports: Iterable[Any]) -> dict[str, float]:
    """What one night's decay/sleep reports changed, as flat counts (stages switched off count 0)."""
    out: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        out[key] = out.get(key, 0) + value

    for rep in reports:
        st = rep.stages
        add("archived", _count((st.get("archive") or {}).get("count")))
        add("restored", _count((st.get("restore") or {}).get("count")))
        add("rescued", _count((st.get("stc_rescue") or {}).get("rescued")))
        dp = st.get("dual_process_cot") or {}
        add("schemas_created", _count(dp.get("schemas_created")))
        add("episodes_consolidated", _count(dp.get("episodes_consolidated")))
        add("ib_archived", _count((st.get("ib_budget") or {}).get("archived")))
        sel = st.get("simulation_selection_sleep") or {}
        summ = sel.get("summary") or {}
        for key in ("ltp", "ltd", "strengths_changed", "edges_changed", "edges_pruned"):
            add(f"replay_{key}", _count(summ.get(key)))
        add("counterfactuals", _count(sel.get("counterfactuals")))
        add("deep_promoted", _count((st.get("triple_copy") or {}).get("promoted")))
        add("confidence_changed", _count((st.get("bayesian_confidence") or {}).get("changed_count")))
        add("bridges", _count((st.get("spectral_kg_health") or {}).get("bridges")))
        hy = st.get("metacognitive_hyperagent") or {}
        add("hyperagent_changes", _count(hy.get("changes")))
        sig = hy.get("signals") or {}
        if sig.get("hit_rate") is not None:
            out["monitor_hit_rate"] = float(sig["hit_rate"])
        tf = st.get("two_factor_hebbian") or {}
        add("edges_decay_pruned", _count(tf.get("pruned")))
        moved = (st.get("short_term_expiry") or {}).get("moved") or {}
        add("short_term_expired", sum(int(v) for v in moved.values()) if isinstance(moved, dict) else 0)
    return out


class LifeStore:
    """zenbrain through time, by the public API: one SQLite store, one simulated clock.

    ``update_mode`` says what happens to a document whose ``metadata["supersedes"]`` names
    an earlier document: ``new`` stores it as a new memory with its event time (what an
    application does without bookkeeping; zenbrain may still detect the change itself),
    ``supersede`` stores it with ``store(..., supersedes=old_id)`` (the old memory is kept
    with its valid time and leaves current recall), ``update`` rewrites the earlier memory
    in place (``MemoryCoordinator.update``), ``revise`` passes it through reconsolidation
    (``revise``) and ``correct`` the same with ``correction=True``. All but ``new`` need
    the id of the earlier memory, which the harness knows (an application would have to
    find it).
    """

    kind = "zenbrain"

    def __init__(
        self,
        embedder: Embedder,
        *,
        config: Config | None = None,
        protocol: Protocol | None = None,
        name: str = "zenbrain",
        user: str = "bench",
        update_mode: str = "new",
        workdir: str | None = None,
        views: Sequence[str] = (),
    ) -> None:
        if update_mode not in UPDATE_MODES:
            raise ValueError(f"update_mode must be one of {UPDATE_MODES}")
        bad = [v for v in views if v not in DIAGNOSTIC_VIEWS]
        if bad:
            raise ValueError(f"unknown diagnostic view(s) {bad}; views are {DIAGNOSTIC_VIEWS}")
        self.name = name
        self.embedder = embedder
        self.config = config or Config()
        self.protocol = protocol or Protocol()
        self.update_mode = update_mode
        self.views = tuple(views)
        self.user = Scope(user)
        self._own_dir = workdir is None
        self._dir = workdir or tempfile.mkdtemp(prefix="zenbrain-life-")
        self._n = 0
        self.memory: MemoryCoordinator | None = None
        self._view_coords: dict[str, MemoryCoordinator] = {}
        self._open()

    # ------------------------------------------------------------------ setup
    def _path(self) -> str:
        return os.path.join(self._dir, f"life-{self._n}.db")

    def _open(self) -> None:
        self._n += 1
        self.clock = SimulatedClock()
        self.memory = open_memory(self._path(), embedder=self.embedder, config=self.config, clock=self.clock)
        self._mem_of: dict[str, str] = {}  # doc id -> memory id
        self._doc_of: dict[str, str] = {}  # memory id -> doc id
        self._next: float | None = None
        self._nights: list[dict[str, Any]] = []
        self._seconds: dict[str, float] = {"store": 0.0, "context_recall": 0.0, "end_session": 0.0, "use": 0.0,
                                           "decay": 0.0, "sleep": 0.0, "consolidate": 0.0}
        self._cpu: dict[str, float] = dict.fromkeys(self._seconds, 0.0)  # process CPU seconds: immune to the load
        self._revisions: dict[str, int] = {}
        self._lost: list[str] = []  # documents a revision stored nowhere

    def _close_views(self) -> None:
        for c in self._view_coords.values():
            c.close()
        self._view_coords = {}

    def reset(self) -> None:
        self._close_views()
        if self.memory is not None:
            self.memory.close()
        for suffix in ("", "-wal", "-shm"):
            p = self._path() + suffix
            if os.path.exists(p):
                os.remove(p)
        self._open()

    def close(self) -> None:
        self._close_views()
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        if self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def mem(self) -> MemoryCoordinator:
        if self.memory is None:
            raise RuntimeError("the store is closed")
        return self.memory

    # ------------------------------------------------------------------ time
    def start(self, t: float) -> None:
        self.clock.set(t)
        self._next = next_night(t, self.protocol.night_hour)

    def advance_to(self, t: float) -> None:
        """Run every night up to ``t``, then set the clock to ``t`` (never backwards)."""
        if self._next is None:
            self.start(t)
        assert self._next is not None
        while self._next <= t:
            self.clock.set(max(self.clock.now(), self._next))
            self._night()
            self._next += DAY
        if t > self.clock.now():
            self.clock.set(t)

    def _night(self) -> None:
        mem = self.mem
        reports = []
        entry: dict[str, Any] = {"t": self.clock.now()}
        for op in self.protocol.nightly:
            t0, c0 = time.perf_counter(), time.process_time()
            rep = getattr(mem, op)(self.user)
            dt = time.perf_counter() - t0
            self._seconds[op] += dt
            self._cpu[op] += time.process_time() - c0
            entry[f"{op}_s"] = dt
            reports.append(rep)
        entry.update(night_counters(reports))
        st = mem.stats(self.user)
        entry.update(memories=st["memories"], archived_total=st["archived"], active=st["memories"] - st["archived"],
                     edges=st["edges"])
        self._nights.append(entry)

    # ------------------------------------------------------------------ writing
    def _session_scope(self, key: str) -> Scope:
        return self.user.with_session(key)

    def add_session(self, session: TimedSession) -> None:
        self.advance_to(session.time)
        scope = self._session_scope(session.key) if session.conversation else self.user
        mem = self.mem
        proto = self.protocol
        for i, d in enumerate(session.docs):
            now = session.time + i * proto.turn_seconds
            if now > self.clock.now():
                self.clock.set(now)
            if proto.context_k:
                t0, c0 = time.perf_counter(), time.process_time()
                mem.recall(d.text, scope, k=proto.context_k, touch=True)
                self._seconds["context_recall"] += time.perf_counter() - t0
                self._cpu["context_recall"] += time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            self._write(d, scope, session.time)
            self._seconds["store"] += time.perf_counter() - t0
            self._cpu["store"] += time.process_time() - c0
        if not session.conversation:
            return
        t0, c0 = time.perf_counter(), time.process_time()
        mem.end_session(scope)
        self._seconds["end_session"] += time.perf_counter() - t0
        self._cpu["end_session"] += time.process_time() - c0

    def _write(self, d: Doc, scope: Scope, when: float) -> None:
        mem = self.mem
        meta: dict[str, Any] = {"doc_id": d.id}
        if d.speaker:
            meta["speaker"] = d.speaker
        dia = d.metadata.get("dia_id") if d.metadata else None
        if dia:
            meta["dia_id"] = dia
        if d.session:
            meta["session"] = d.session
        old = d.metadata.get("supersedes") if d.metadata else None
        target = self._mem_of.get(old) if old else None
        kw: dict[str, Any] = {} if self.protocol.routed else {"kind": "episode", "layer": "episodic"}
        if target is not None and self.update_mode == "supersede":
            if self._current(target):
                kw["supersedes"] = target
                self._revisions["supersede"] = self._revisions.get("supersede", 0) + 1
            else:  # zenbrain took the change for one already
                self._revisions["superseded_before"] = self._revisions.get("superseded_before", 0) + 1
        elif self.update_mode != "new" and target is not None:
            self._revise(d, scope, target)
            return
        try:
            item = mem.store(d.text, scope, metadata=meta, event_time=when, **kw)
        except ValidationError:
            if "supersedes" not in kw:
                raise
            # The old memory is out of this session's reach (a session-bound layer): store plainly.
            self._revisions["supersede_refused"] = self._revisions.get("supersede_refused", 0) + 1
            del kw["supersedes"]
            item = mem.store(d.text, scope, metadata=meta, event_time=when, **kw)
        self._mem_of[d.id] = item.id
        self._doc_of[item.id] = d.id

    def _current(self, memory_id: str) -> bool:
        """Whether a memory still holds (no later one superseded it)."""
        return self.mem.get(memory_id, self.user).superseded_by is None

    def _revise(self, d: Doc, scope: Scope, target: str) -> None:
        mem = self.mem
        owner = self.user  # long-term memories are read and changed without a session
        if self.update_mode == "update":
            mem.update(target, owner, content=d.text)
            self._mem_of[d.id] = target
            self._revisions["update"] = self._revisions.get("update", 0) + 1
            return
        before = mem.get(target, owner).content
        out = mem.revise(target, owner, d.text, correction=self.update_mode == "correct")
        mode = str(out["mode"])
        self._revisions[mode] = self._revisions.get(mode, 0) + 1
        new = out.get("new_memory")
        if new is not None:
            self._mem_of[d.id] = new.id
            self._doc_of[new.id] = d.id
            return
        if out["memory"].content == before:
            self._lost.append(d.id)  # confirmed or unchanged: the new statement is stored nowhere
        self._mem_of[d.id] = target

    def use(self, u: Use) -> None:
        self.advance_to(u.time)
        t0, c0 = time.perf_counter(), time.process_time()
        self.mem.recall(u.query, self.user, k=max(1, self.protocol.context_k or 5), touch=True)
        self._seconds["use"] += time.perf_counter() - t0
        self._cpu["use"] += time.process_time() - c0

    # ------------------------------------------------------------------ reading
    def _hits(self, coord: MemoryCoordinator, query: str, k: int, *, archived: bool = False) -> list[tuple[str, str]]:
        hits = coord.recall(query, self.user, k=k, touch=False, include_archived=archived)
        return [(self._doc_of.get(h.item.id, HIT_PREFIX + h.item.id), h.item.content) for h in hits]

    def search_hits(self, query: str, k: int) -> list[tuple[str, str]]:
        return self._hits(self.mem, query, k)

    def search(self, query: str, k: int) -> list[str]:
        return [d for d, _ in self.search_hits(query, k)]

    def _view(self, view: str) -> MemoryCoordinator:
        coord = self._view_coords.get(view)
        if coord is None:
            cfg = self.config
            if view in ("no_retrievability", "no_layer_weights"):
                cfg = replace(cfg, recall=replace(cfg.recall, retrievability_floor=1.0))
            if view == "no_layer_weights" and cfg.mechanisms.on("query_aware_fusion"):
                cfg = cfg.without("query_aware_fusion")
            coord = open_memory(self._path(), embedder=self.embedder, config=cfg, clock=self.clock)
            self._view_coords[view] = coord
        return coord

    def view_search_hits(self, view: str, query: str, k: int) -> list[tuple[str, str]]:
        """The ranking the final store gives with one cause of loss taken away (read-only)."""
        return self._hits(self._view(view), query, k, archived=True)

    def view_search(self, view: str, query: str, k: int) -> list[str]:
        return [d for d, _ in self.view_search_hits(view, query, k)]

    def doc_states(self) -> dict[str, dict[str, Any]]:
        """Per stored document: archived or not, layer and kind of its memory now."""
        items = self.mem.list_memories(self.user, include_archived=True)
        out: dict[str, dict[str, Any]] = {}
        for it in items:
            doc = self._doc_of.get(it.id)
            if doc is not None:
                out[doc] = {"archived": bool(it.archived), "layer": it.layer.value, "kind": it.kind.value}
        return out

    def lifecycle(self) -> dict[str, Any]:
        st = self.mem.stats(self.user)
        nights = self._nights
        totals: dict[str, float] = {}
        for n in nights:
            for k, v in n.items():
                if k not in ("t", "memories", "archived_total", "active", "edges", "monitor_hit_rate") and isinstance(v, (int, float)):
                    totals[k] = totals.get(k, 0.0) + float(v)
        per_night = sorted(float(n.get("sleep_s", 0.0)) + float(n.get("decay_s", 0.0)) for n in nights)
        return {
            "nights": len(nights),
            "memories": st["memories"],
            "archived": st["archived"],
            "active": st["memories"] - st["archived"],
            "by_layer": st["by_layer"],
            "edges": st["edges"],
            "stored_bytes": st["stored_bytes"],  # what the user's memories hold
            "file_bytes": os.path.getsize(self._path()),
            "seconds": dict(self._seconds),
            "cpu_seconds": dict(self._cpu),
            "lifecycle_seconds": self._seconds["decay"] + self._seconds["sleep"] + self._seconds["consolidate"],
            "lifecycle_cpu_seconds": self._cpu["decay"] + self._cpu["sleep"] + self._cpu["consolidate"],
            "night_seconds_median": per_night[len(per_night) // 2] if per_night else None,
            "totals": totals,
            "monitor_hit_rate_last": next((n["monitor_hit_rate"] for n in reversed(nights) if "monitor_hit_rate" in n), None),
            "revisions": dict(self._revisions),
            "revision_lost_docs": list(self._lost),
            "trace": [{k: n.get(k, 0) for k in ("t", "active", "archived_total", "edges", "archived", "restored")}
                      for n in nights],
        }


# ---------------------------------------------------------------------------- the runner
def run_unit(
    system: TimelineSystem,
    sessions: Sequence[TimedSession],
    probes: Sequence[Probe],
    *,
    k: int,
    uses: Sequence[Use] = (),
    score: Callable[[Probe, list[tuple[str, str]]], dict[str, Any]] | None = None,
    views: Sequence[str] = (),
    after_end: Callable[[TimelineSystem], dict[str, Any]] | None = None,
    end_time: float | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Live through one workload with one system; returns its probe records and lifecycle.

    Each record holds the probe's ids, the ranked doc ids (top ``k``), the seconds since the
    session it was asked after, and whatever ``score(probe, hits)`` adds. ``views`` (zenbrain
    only) re-rank the end probes on the final store with one cause of loss removed.
    ``end_time``: when the end probes are asked (the nights up to it run first); default
    right after the last session. Memory ids are drawn from ``seed``
    (``zenbrain.ids.seeded_ids``; default: the system's ``Config.seed``, else 0), so ties
    broken by id fall the same way in every run and the same code gives the same rankings.
    """
    if seed is None:
        config = getattr(system, "config", None)
        seed = config.seed if isinstance(config, Config) else 0
    with seeded_ids(seed):
        if not sessions:
            raise ValueError("a workload needs at least one session")
        order = sorted(sessions, key=lambda s: s.time)
        keys = {s.key for s in order}
        if len(keys) != len(order):
            raise ValueError("session keys must be unique")
        after: dict[str | None, list[Probe]] = {}
        for p in probes:
            if p.after is not None and p.after not in keys:
                raise ValueError(f"probe {p.qid} is asked after an unknown session {p.after!r}")
            after.setdefault(p.after, []).append(p)
        pending_uses = sorted(uses, key=lambda u: u.time)
        system.reset()
        system.start(order[0].time - 3600.0)
        records: list[dict[str, Any]] = []
        latencies: list[float] = []
        ui = 0

        def ask(batch: list[Probe]) -> None:
            for p in batch:
                t0 = time.perf_counter()
                hits = system.search_hits(p.question, k)
                latencies.append((time.perf_counter() - t0) * 1000.0)
                rec: dict[str, Any] = {"qid": p.qid, "checkpoint": p.checkpoint, "group": p.group,
                                       "gold": list(p.gold), "ranked": [d for d, _ in hits]}
                rec.update(dict(p.extra))
                if score is not None:
                    rec.update(score(p, hits))
                records.append(rec)

        for s in order:
            while ui < len(pending_uses) and pending_uses[ui].time < s.time:
                system.use(pending_uses[ui])
                ui += 1
            system.add_session(s)
            ask(after.get(s.key, []))
        while ui < len(pending_uses):
            system.use(pending_uses[ui])
            ui += 1
        if end_time is not None:
            system.advance_to(end_time)
        end = after.get(None, [])
        ask(end)
        view_records: dict[str, list[dict[str, Any]]] = {}
        if views and isinstance(system, LifeStore):
            for v in views:
                rows = []
                for p in end:
                    hits = system.view_search_hits(v, p.question, k)
                    row: dict[str, Any] = {"qid": p.qid, "checkpoint": p.checkpoint, "group": p.group,
                                           "ranked": [d for d, _ in hits]}
                    if score is not None:
                        row.update(score(p, hits))
                    rows.append(row)
                view_records[v] = rows
        out: dict[str, Any] = {"records": records, "lifecycle": system.lifecycle(), "search_ms": latencies}
        if view_records:
            out["views"] = {v: {"records": rows} for v, rows in view_records.items()}
        if after_end is not None:
            out.update(after_end(system))
        return out
