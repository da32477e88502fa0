"""decay(): forgetting curves, STC rescue, archiving and restoring.

Runs over every long-term memory of the scope's partition (all contexts of the user
and agent; working and short-term memory belong to sessions and are left to
``end_session``). Core memories are never tagged, archived or restored.

1. ``retrievability``: R of every memory with ``dynamics.retrievability`` (Ebbinghaus
   and TripleCopy combined, one vectorised pass).
2. ``stc_rescue``: memories whose R fell below the tag threshold (with value-aware
   forgetting: and that do not say little; small talk sets no tag) and that have a
   strongly consolidated partner (R >= donor threshold; related by an edge or by vector
   similarity) accessed within the STC window of their own last access are rescued by
   ``pma.stc.find_rescues``. The rescue lifts the memory to the rescued level now and
   slows its forgetting by the decay multiplier: its Ebbinghaus stability becomes
   ``max(S / multiplier, S needed for R(now) = level)``; with TripleCopy, its deep copy
   restarts at the rescued level and its target keeps ``1 - multiplier`` of the lift
   (so a multiplier of 0.5 keeps half of the rescue for good). Its strength gains the
   boost. Each memory is rescued at most once per tag (per last access).
3. ``archive`` / ``restore`` / ``review``: ``ebbinghaus.status`` on the (post-rescue) R.
   Forgetting is value-aware (``EbbinghausParams.low_information_words``, default 6): a
   memory that says less than six words said once in the partition
   (``mechanisms.information``: summed idf of its words in units of a once-said word's
   idf) and names nobody and nothing beyond the partition's speakers (``spare_named``:
   no number, no word the partition capitalises inside sentences and never writes in lower
   case) is archived once it needs review; any other memory is never archived by decay,
   recall's bounded retrievability prior only down-weights it (0: every memory archived
   at ``archive_threshold``, the paper). The document frequencies are saved in kv
   ``information`` for recall, which rehearses only the hits a recall carried
   (``pipeline.recall_effects``), and the name vocabulary in kv ``name_vocabulary``; a
   night takes both up and reads the words only of the memories stored since (a full
   count after an edit or an erasure), and tests the value only of the memories at or
   below the review band or the STC tag threshold, the only ones a decision reads it for.
   ARCHIVE archives (recoverable, logged "archived"); RESTORE brings back a memory that
   *decay* archived (one archived by the IB budget or by hand stays archived); memories
   in the review band are reported.

Nothing decays when both ``ebbinghaus_decay`` and ``triple_copy`` are off.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...config import LifecycleLimits
from ...engine import Engine
from ...mechanisms import ebbinghaus, information
from ...model import HistoryEvent, Layer, MemoryItem, Scope
from ...pma import stc, triple_copy
from ...state import (
    ARCHIVED_BY,
    COPIES,
    KV_INFORMATION,
    KV_INFORMATION_VERSION,
    KV_NAME_VOCABULARY,
    RELATION_CONTRADICTS,
    RESCUED,
    RESCUED_AT,
    SIGNIFICANCE,
)
from ...storage.base import Partition
from ...text import NameVocabulary, name_words, names_something, token_set
from ..access import get_own, partition_of
from ..recall_effects import saved_reference
from ..retrievability import copy_state, retrievability
from .common import Snapshot, col, num, skipped, vectors

STAGES = ("retrievability", "stc_rescue", "archive", "restore", "review")
_NON_RELATED = frozenset({RELATION_CONTRADICTS})  # a contradiction does not donate plasticity


def decay_stages(
    engine: Engine, scope: Scope, snap: Snapshot | None = None
) -> dict[str, dict[str, Any]]:
    limits = engine.config.lifecycle
    part = partition_of(scope)
    now = engine.clock.now()
    use_ebb, use_tc = engine.on("ebbinghaus_decay"), engine.on("triple_copy")
    if not (use_ebb or use_tc):
        out = {name: skipped("no forgetting curve: ebbinghaus_decay and triple_copy are off") for name in STAGES}
        if not engine.on("stc_rescue"):
            out["stc_rescue"] = skipped()
        return out

    snap = snap or Snapshot(engine, part)
    items = snap.select(archived=None)
    n = len(items)
    core = np.fromiter((i.layer is Layer.CORE for i in items), dtype=bool, count=n)
    archived = col(items, "archived", bool)
    r = retrievability(engine, items, now)
    stages: dict[str, dict[str, Any]] = {}
    live = ~core
    stages["retrievability"] = {
        "memories": int(live.sum()),  # every non-core long-term memory of the partition
        "archived_before": int((live & archived).sum()),
        "curves": [name for name, on in (("ebbinghaus_decay", use_ebb), ("triple_copy", use_tc)) if on],
        "mean": num(r[live].mean()) if live.any() else None,
        "min": num(r[live].min()) if live.any() else None,
    }

    ebb = engine.config.params.ebbinghaus_decay
    # The value test matters only where a decision reads it: at or below the review band
    # (archive, or stay archived) and below the STC tag threshold (no tag for small talk).
    bar = max(ebb.review_threshold, engine.config.params.stc_rescue.tag_threshold)
    low_value, counted = _low_value(engine, part, items, ebb, ~core & (r <= bar), now)
    with engine.store.transaction() as tx:
        if engine.on("stc_rescue"):
            stages["stc_rescue"] = _rescue(engine, tx, snap, items, r, archived, core, now, limits,
                                           untagged=low_value)
        else:
            stages["stc_rescue"] = skipped()
        if counted:  # recall prices its rehearsals with the same frequencies
            tx.kv_put(part, counted)
        status = np.asarray(
            ebbinghaus.status(retrievability=r, archived=archived, core=core, low_value=low_value, params=ebb),
            dtype=np.int8,
        ).reshape(-1)
        to_archive = np.flatnonzero((status == ebbinghaus.ARCHIVE) & ~core)
        by_decay = np.fromiter((i.state.get(ARCHIVED_BY) == "decay" for i in items), dtype=bool, count=n)
        to_restore = np.flatnonzero((status == ebbinghaus.RESTORE) & ~core & by_decay)
        review = np.flatnonzero((status == ebbinghaus.REVIEW) & ~core)

        ids = [items[j].id for j in to_archive]
        tx.update_columns(part, ids, archived=[True] * len(ids), updated_at=[now] * len(ids))
        # States and history rows of each group in one statement each (the same rows, in order).
        for j in to_archive:
            it = items[j]
            it.archived = True
            it.state[ARCHIVED_BY] = "decay"
        tx.update_states(part, {items[j].id: items[j].state for j in to_archive})
        tx.log(part, [
            HistoryEvent(items[j].id, now, "archived", {"why": "decay", "retrievability": num(r[j])})
            for j in to_archive
        ])
        ids = [items[j].id for j in to_restore]
        tx.update_columns(part, ids, archived=[False] * len(ids), updated_at=[now] * len(ids))
        for j in to_restore:
            it = items[j]
            it.archived = False
            it.state.pop(ARCHIVED_BY, None)
        tx.update_states(part, {items[j].id: items[j].state for j in to_restore})
        tx.log(part, [
            HistoryEvent(items[j].id, now, "restored", {"why": "retrievability recovered", "retrievability": num(r[j])})
            for j in to_restore
        ])

    def listing(idx: np.ndarray) -> dict[str, Any]:
        return {
            "count": int(idx.size),
            "ids": [items[j].id for j in idx],
            "retrievability": {items[j].id: num(r[j]) for j in idx},
        }

    stages["archive"] = listing(to_archive)
    if low_value is not None:
        # The memories at or below the bar that say little (the others were not tested).
        stages["archive"]["low_value"] = int(low_value[live].sum())
    stages["restore"] = listing(to_restore)
    stages["review"] = listing(review)
    return stages


def _fingerprint(hashes: Sequence[int]) -> str:
    """Memories' contents as a multiset (the first 64 bits of each content hash): a count
    and their XOR, equal for the same contents whatever their order."""
    x = 0
    for h in hashes:
        x ^= h
    return f"{len(hashes)}:{x:016x}"


def _low_value(
    engine: Engine, part: Partition, items: list[MemoryItem], params: ebbinghaus.EbbinghausParams,
    tested: np.ndarray, now: float,
) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Which of the ``tested`` memories say little: fewer than ``low_information_words``
    words said once in the partition (``mechanisms.information``; None when nothing uses
    it), and the records to save (empty when nothing changed): the document frequencies
    that measured it, which recall also prices rehearsals and cues of archived memories
    with, and the name vocabulary.

    Both describe every memory of the partition, but a night reads the words only of the
    memories stored since the last one: the saved ones are taken up when the memories they
    counted (created up to their time) are still there with the same contents, which their
    fingerprint checks. An edit, an erasure or a memory that came from elsewhere makes this
    night count all."""
    need_reference = max(params.low_information_words, params.rehearsal_min_words, params.archive_cue_words) > 0
    if not need_reference:
        return None, {}
    saved = engine.store.kv_get_many(part, [KV_INFORMATION_VERSION, KV_NAME_VOCABULARY])
    version, raw_vocabulary = saved.get(KV_INFORMATION_VERSION), saved.get(KV_NAME_VOCABULARY)
    hashes = [int(i.content_hash[:16], 16) for i in items]
    fingerprint = _fingerprint(hashes)
    reference: information.InformationReference | None = None
    vocabulary: NameVocabulary | None = None
    carried = vocabulary_carried = False
    fresh: list[MemoryItem] = []
    if isinstance(version, list) and len(version) >= 4:
        since = float(version[0])
        # The memories the saved counts describe were created by ``since``; those created
        # at that very instant may have come after the decay that saved them (a sleep right
        # after it, on the same clock), so both readings are checked against the fingerprint.
        counted_mask: list[bool] | None = None
        for mask in ([i.created_at <= since for i in items], [i.created_at < since for i in items]):
            if _fingerprint([h for h, ok in zip(hashes, mask) if ok]) == version[3]:
                counted_mask = mask
                break
        before = saved_reference(engine, part) if counted_mask is not None else None
        if before is not None and counted_mask is not None and before.n == sum(counted_mask):
            carried = True
            fresh = [i for i, ok in zip(items, counted_mask) if not ok]
            reference = before.with_sets([token_set(i.content) for i in fresh])
            if isinstance(raw_vocabulary, dict) and raw_vocabulary.get("fingerprint") == version[3]:
                vocabulary = NameVocabulary.from_dict(raw_vocabulary).with_texts(i.content for i in fresh)
                vocabulary_carried = True
    if reference is None:
        reference = _count_all(items)
    unchanged = carried and not fresh
    counted: dict[str, Any] = {} if unchanged else {
        KV_INFORMATION: reference.to_dict(),
        KV_INFORMATION_VERSION: [now, reference.n, sum(reference.df.values()), fingerprint],
    }
    if params.low_information_words <= 0:
        return None, counted
    low = np.zeros(len(items), dtype=bool)
    at = np.flatnonzero(tested)
    if at.size:
        low[at] = _says_little(items, at, reference, params.low_information_words)
    if params.spare_named and low.any():
        # A short statement that names a person, place or number ("Priya moved to Lisbon") is
        # a fact, not small talk: names are what the words-said-once measure cannot see in a
        # partition that mentions the same people every day.
        if vocabulary is None:
            vocabulary = NameVocabulary.of(i.content for i in items)
        known = {w for i in items if i.speaker for w in name_words(i.speaker)}
        for j in np.flatnonzero(low):
            if names_something(items[j].content, vocabulary, known=known):
                low[j] = False
    if vocabulary is not None and not (unchanged and vocabulary_carried):
        counted[KV_NAME_VOCABULARY] = {"fingerprint": fingerprint, **vocabulary.to_dict()}
    return low, counted


def _count_all(items: list[MemoryItem], chunk: int = 10_000) -> information.InformationReference:
    """``InformationReference.of`` the words of every memory (the same counts, in the same
    order), a chunk of memories at a time: no memory's word set is kept once counted."""
    df: Counter[str] = Counter()
    for start in range(0, len(items), chunk):
        df.update(itertools.chain.from_iterable(token_set(i.content) for i in items[start : start + chunk]))
    return information.InformationReference(len(items), dict(df))


def _says_little(
    items: list[MemoryItem], at: np.ndarray, reference: information.InformationReference, words: float,
    chunk: int = 10_000,
) -> np.ndarray:
    """Whether each memory at ``at`` says fewer than ``words`` words said once. A memory's
    value depends on its own words only, so the word sets are made a chunk at a time (the
    tested memories can be most of the partition: keeping every set held ~250 MB at 400k)."""
    out = np.zeros(at.size, dtype=bool)
    for start in range(0, at.size, chunk):
        sets = [token_set(items[j].content) for j in at[start : start + chunk].tolist()]
        out[start : start + chunk] = information.information_words(sets, reference) < words
    return out


def _rescue(
    engine: Engine,
    tx: Any,
    snap: Snapshot,
    items: list[MemoryItem],
    r: np.ndarray,
    archived: np.ndarray,
    core: np.ndarray,
    now: float,
    limits: LifecycleLimits,
    untagged: np.ndarray | None = None,
) -> dict[str, Any]:
    """Find and apply STC rescues; updates ``items`` and ``r`` in place for the later stages.
    ``untagged``: memories that set no tag (value-aware forgetting: what says little
    captures no plasticity from its neighbours, so small talk is not rescued by the turns
    around it)."""
    params = engine.config.params.stc_rescue
    part = snap.part
    n = len(items)
    last = col(items, "last_access")
    rescued_at = np.fromiter((float(i.state.get(RESCUED_AT, math.nan)) for i in items), dtype=float, count=n)
    fresh = np.isnan(rescued_at) | (rescued_at < last)
    eligible = ~archived
    can_tag = eligible & ~core & fresh if untagged is None else eligible & ~core & fresh & ~untagged
    tagged = np.flatnonzero(can_tag & (r < params.tag_threshold))
    donors = np.flatnonzero(eligible & (r >= params.donor_threshold))
    donors = donors[~np.isin(donors, tagged)]
    report: dict[str, Any] = {"tagged": int(tagged.size), "donors": int(donors.size), "rescued": 0, "rescues": {}}
    if tagged.size == 0 or donors.size == 0:
        return report

    # Only pairs inside the time window can rescue: keep tagged memories with a donor
    # activation within the window and donors with a tag time within it (sorted search).
    w = params.window_s
    d_times = np.sort(last[donors])
    lo = np.searchsorted(d_times, last[tagged] - w, side="left")
    hi = np.searchsorted(d_times, last[tagged] + w, side="right")
    tagged = tagged[hi > lo]
    t_times = np.sort(last[tagged])
    lo = np.searchsorted(t_times, last[donors] - w, side="left")
    hi = np.searchsorted(t_times, last[donors] + w, side="right")
    donors = donors[hi > lo]
    report["in_window"] = {"tagged": int(tagged.size), "donors": int(donors.size)}
    if tagged.size == 0 or donors.size == 0:
        return report

    pool = np.concatenate([tagged, donors])
    pool_ids = [items[j].id for j in pool]
    local = {mid: k for k, mid in enumerate(pool_ids)}
    edge_rows = []
    # A rescue pairs a tagged memory with a donor: only the donors' edges can carry one
    # (every edge of hundreds of thousands of tagged memories was read before).
    for e in snap.edges_touching([items[j].id for j in donors]):
        a, b = local.get(e.src), local.get(e.dst)
        if a is None or b is None or a == b or e.relation in _NON_RELATED:
            continue
        edge_rows.append((a, b, float(e.weight)))
    edges = np.asarray(edge_rows, dtype=float).reshape(-1, 3)

    n_t, n_d = tagged.size, donors.size
    block = max(1, int(limits.stc_max_pairs) // max(1, n_d))
    found: list[tuple[int, int, stc.Rescue]] = []  # (item index, donor item index, rescue)
    donor_local = np.arange(n_t, n_t + n_d)
    for start in range(0, n_t, block):
        t_local = np.arange(start, min(n_t, start + block))
        sub = np.concatenate([t_local, donor_local])
        remap = np.full(n_t + n_d, -1)
        remap[sub] = np.arange(sub.size)
        sub_edges = None
        if edges.size:
            ends_a, ends_b = edges[:, 0].astype(int), edges[:, 1].astype(int)
            keep = (remap[ends_a] >= 0) & (remap[ends_b] >= 0)
            sub_edges = np.column_stack([remap[ends_a[keep]], remap[ends_b[keep]], edges[keep, 2]])
        res = stc.find_rescues(
            strength=r[pool[sub]],
            tag_time=last[pool[sub]],
            activation_time=last[pool[sub]],
            embeddings=vectors(engine, part, [pool_ids[k] for k in sub.tolist()]),  # a block's at a time
            edges=sub_edges,
            donor_score=r[pool[sub]],
            params=params,
        )
        for resc in res.rescues:
            if resc.index < t_local.size:  # a tagged memory of this block
                found.append((int(pool[sub[resc.index]]), int(pool[sub[resc.donor]]), resc))

    if not found:
        return report
    ebb = engine.config.params.ebbinghaus_decay
    tc = engine.config.params.triple_copy
    use_ebb, use_tc = engine.on("ebbinghaus_decay"), engine.on("triple_copy")
    changed = []
    for j, donor_j, resc in found:
        it = items[j]
        level = float(resc.new_strength)
        mult = float(resc.decay_multiplier)
        old_s, old_strength, old_r = it.stability, it.strength, float(r[j])
        if use_ebb:
            elapsed = max(0.0, (now - it.last_access) / ebbinghaus.SECONDS_PER_DAY)
            m = float(ebbinghaus.emotional_multiplier(
                arousal=it.arousal, valence=it.valence,
                significance=float(it.state.get(SIGNIFICANCE, 0.0)), params=ebb,
            ))
            slower = old_s / mult if mult > 0 else ebb.max_stability
            needed = elapsed / (m * -math.log(level)) if 0.0 < level < 1.0 and elapsed > 0 else 0.0
            it.stability = float(min(ebb.max_stability, max(old_s, slower, needed)))
        if use_tc:
            st = copy_state(it, tc)
            target = max(st.deep_target, st.deep_target + (1.0 - mult) * (level - st.deep_target))
            new_state = triple_copy.CopyState(
                s0=st.s0, anchor=st.anchor, deep_base=level, deep_target=min(1.0, target), deep_anchor=float(now)
            )
            it.state[COPIES] = new_state.to_dict()
        it.strength = float(min(1.0, it.strength + params.strength_boost))
        it.state[RESCUED] = int(it.state.get(RESCUED, 0)) + 1
        it.state[RESCUED_AT] = float(now)
        changed.append((j, donor_j, resc, old_s, old_strength, old_r))

    idx = [c[0] for c in changed]
    new_r = retrievability(engine, [items[j] for j in idx], now)
    r[idx] = new_r
    ids = [items[j].id for j in idx]
    tx.update_columns(
        part, ids,
        stability=[items[j].stability for j in idx],
        strength=[items[j].strength for j in idx],
    )
    tx.update_states(part, {items[j].id: items[j].state for j in idx})
    rescues: dict[str, Any] = {}
    events: list[HistoryEvent] = []
    for (j, donor_j, resc, old_s, old_strength, old_r), rr in zip(changed, new_r):
        it = items[j]
        donor_id = items[donor_j].id
        entry = {
            "donor": donor_id,
            "via": resc.via,
            "relatedness": num(resc.relatedness),
            "dt_s": num(resc.dt_s),
            "retrievability": [num(old_r), num(rr)],
            "stability": [num(old_s), num(it.stability)],
            "strength": [num(old_strength), num(it.strength)],
        }
        events.append(HistoryEvent(it.id, now, "rescued", entry))
        rescues[it.id] = entry
    tx.log(part, events)
    report["rescued"] = len(rescues)
    report["rescues"] = rescues
    return report


__all__ = ["STAGES", "decay_stages"]


def restore(engine: Engine, scope: Scope, memory_id: str) -> MemoryItem:
    """Bring an archived memory back into recall (by hand: decay may archive it again)."""
    part = partition_of(scope)
    item = get_own(engine, scope, memory_id)
    now = engine.clock.now()
    with engine.store.transaction() as tx:
        tx.update_columns(part, [item.id], archived=[False], last_access=[now], strength=[max(item.strength, 0.5)])
        tx.log(part, [HistoryEvent(item.id, now, "restored", {})])
    item.archived = False
    item.last_access = now
    return item
