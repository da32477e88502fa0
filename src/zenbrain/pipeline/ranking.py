"""How stored state shapes a ranking: the score factors recall multiplies in after fusion.

Each function fills its field of every hit's ``ScoreBreakdown``; ``recall`` multiplies
them into the final score. A mechanism that is switched off leaves its factor at 1.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..engine import Engine
from ..mechanisms import compositional, dual_process, imad, two_factor
from ..model import Kind, Layer, MemoryItem, RecallHit
from ..retrieval import fusion
from ..retrieval.query import QueryInfo
from ..state import (
    KV_COMPOSITIONAL,
    MECHANISM_RELATIONS,
    META_DISPUTED,
    META_ENTITIES,
    META_REPRESENTATIVE_ID,
    META_SCHEMA_METHOD,
    PRIORITY,
    RELATION_CONTRADICTS,
)
from ..storage.base import Filter, Partition
from ..text import answer_shape, entities, entities_as_written, name_words, token_set
from .retrievability import retrievability
from .tuned import tuned_from

# why.other key of a hit that is the newest version of a chain whose older version was a
# candidate of this recall (``drop_superseded``); ``order_versions`` never groups two such.
NEWEST_VERSION = "newest_version"


def temporal_adjust(engine: Engine, hits: list[RecallHit], info: QueryInfo, *, window: bool = True) -> None:
    """A query naming a time window favours hits inside it (``window=False``: the fusion
    recipe has ranked by the window already); "last"/"first" queries favour the most recent
    (or earliest) hits."""
    rp = engine.config.recall
    if window and info.window is not None and rp.temporal_boost > 0:
        w = info.window
        for h in hits:
            t = h.item.event_time if h.item.event_time is not None else h.item.created_at
            if (w.start is None or t >= w.start) and (w.end is None or t <= w.end):
                h.why.temporal *= 1.0 + rp.temporal_boost
    if info.direction is not None and rp.recency_boost > 0 and hits:
        times = np.array([h.item.event_time if h.item.event_time is not None else h.item.created_at for h in hits])
        span = times.max() - times.min()
        if span > 0:
            rel = (times - times.min()) / span
            if info.direction == "early":
                rel = 1.0 - rel
            for h, r in zip(hits, rel):
                h.why.temporal *= 1.0 + rp.recency_boost * float(r)


def representative_of(item: MemoryItem) -> str | None:
    """The episode an extractive schema quotes, or None (not a schema, or one a chat model
    wrote in its own words)."""
    if item.kind is not Kind.SCHEMA or item.metadata.get(META_SCHEMA_METHOD) not in dual_process.EXTRACTIVE_METHODS:
        return None
    rep = item.metadata.get(META_REPRESENTATIVE_ID)
    return rep if isinstance(rep, str) else None


def schemas_yield(hits: list[RecallHit]) -> list[RecallHit]:
    """An extractive schema's text is its representative episode's words and the terms its
    cluster shares, so beside that episode it is the same text twice, and it took a place
    of the results a second episode could hold. Where both are candidates the schema gives
    its place to the episode (unless the episode ranks above it already) and leaves the
    results; having reached the recall, it has already brought back its archived episodes
    (``recall.brought_back``). A schema whose episode is not a candidate stays."""
    if not any(h.item.kind is Kind.SCHEMA for h in hits):
        return hits
    at = {h.item.id: h for h in hits}
    out: list[RecallHit] = []
    placed: set[str] = set()
    for h in hits:
        if h.item.id in placed:
            continue
        rep = representative_of(h.item)
        episode = at.get(rep) if rep is not None else None
        if episode is None:
            out.append(h)
            placed.add(h.item.id)
        elif episode.item.id not in placed:
            if h.score > episode.score:
                episode.why.other["schema_place"] = h.score
                episode.score = h.score
            out.append(episode)
            placed.add(episode.item.id)
    return out


def spread_exchanges(engine: Engine, hits: list[RecallHit], info: QueryInfo, radius: int, places: int) -> list[RecallHit]:
    """A broad query (its answer gathers several memories: a count, a list, a judgement
    about someone) spreads its top ``places`` over exchanges: a conversation turn within
    ``radius`` turns of a better-placed one keeps ``1 - RecallParams.exchange_diversity``
    of its score for each (``why.other["exchange_spread"]``: the score it gave up).
    Neighbour expansion lifts a strong turn's neighbours with it, which suits a question
    one exchange answers, while a broad one needs the other exchanges too. Memories
    without a session position are unaffected. ``hits`` sorted by score; returns them
    re-sorted."""
    penalty = engine.config.recall.exchange_diversity
    if not info.broad or penalty <= 0 or len(hits) < 2:
        return hits
    order, lowered = fusion.spread_exchanges(
        np.fromiter((h.score for h in hits), float, len(hits)), [h.item.session_id for h in hits],
        [-1 if h.item.position is None else h.item.position for h in hits], penalty, radius, places)
    for h, s in zip(hits, lowered.tolist()):
        if s != h.score:
            h.why.other["exchange_spread"] = s - h.score
            h.score = h.why.final = s
    return [hits[i] for i in order.tolist()]


def cross_context_dense(engine: Engine, part: Partition, qvec: np.ndarray, items: list[MemoryItem],
                        reader: str) -> dict[str, float]:
    """Compositional context: the dense similarity of each memory from another (allowed)
    context, through the shared component of the contexts only, so context-specific detail
    does not cross the boundary (memory id -> similarity)."""
    foreign = [i for i in items if i.context != reader]
    if not foreign or not engine.on("compositional_context"):
        return {}
    raw = engine.store.kv_get(part, KV_COMPOSITIONAL)
    if not raw:
        return {}
    state = compositional.CompositionalState.from_json(raw)
    vecs = engine.store.vectors(part, [i.id for i in foreign])
    sims = np.atleast_1d(np.asarray(compositional.cross_context_similarity(qvec, vecs, state=state), dtype=float))
    return {i.id: float(s) for i, s in zip(foreign, sims)}


def hebbian_boost(engine: Engine, part: Partition, hits: list[RecallHit], k: int) -> None:
    """Two-Factor boost: learned association spreads a query's activation downhill. Among
    the top (boost_pool x k) candidates, one linked to a candidate that matches the query
    better moves the share c = recall_boost(w, sigma^2) - 1 of the way up to that
    candidate's score (``two_factor.association_lift``; the link that lifts it most
    counts). Only links co-activation has taught (activations >= 1: memories recalled
    together) and relations the application declared (``relate``) carry the lift; links
    the library made at store time, provenance or bridge edges do not. The best match is
    never lifted, a memory never rises above the associate lifting it, and memories that
    match the query equally lift each other by nothing, however well connected they are."""
    if not engine.on("two_factor_hebbian") or len(hits) < 2:
        return
    tp = engine.config.params.two_factor_hebbian
    ranked = sorted(hits, key=lambda h: -h.why.fused)[: max(engine.config.recall.boost_pool * k, 10)]
    fused = {h.item.id: h.why.fused for h in ranked}
    edges = [e for e in engine.store.edges(part, list(fused), both_ends=True)
             if e.relation != RELATION_CONTRADICTS and (e.activations > 0 or e.relation not in MECHANISM_RELATIONS)]
    if not edges:
        return
    node = [e.src for e in edges] + [e.dst for e in edges]
    other = [e.dst for e in edges] + [e.src for e in edges]
    lift = np.atleast_1d(two_factor.association_lift(
        np.array([e.weight for e in edges] * 2, dtype=float), np.array([e.variance for e in edges] * 2, dtype=float),
        np.array([fused[n] for n in node], dtype=float), np.array([fused[o] for o in other], dtype=float),
        params=tp))
    best: dict[str, float] = {}
    for n, b in zip(node, lift.tolist()):
        if b > best.get(n, 1.0):
            best[n] = b
    for h in hits:
        if h.item.id in best:
            h.why.hebbian_boost = best[h.item.id]


def _notes_about_asked(engine: Engine, hits: list[RecallHit], query: str,
                       k: int) -> tuple[list[str], list[RecallHit]]:
    """The names the query asks about (as written), and the notes among the best
    max(``boost_pool`` x k, 10) hits that name one of them (no speaker: a conversation turn
    may speak of its subject as "you" or "I")."""
    names = entities_as_written(query)
    asked = frozenset(n.lower() for n in names)
    if not asked:
        return names, []
    return names, [h for h in hits[: max(engine.config.recall.boost_pool * k, 10)]
                   if h.item.speaker is None and asked & _named(h.item)]


def _named(item: MemoryItem) -> frozenset[str]:
    """The names a memory mentions (stored at encoding, else read from its text)."""
    named = item.metadata.get(META_ENTITIES)
    return frozenset(named if isinstance(named, list) else entities(item.content))


def drop_superseded(engine: Engine, part: Partition, hits: list[RecallHit], query: str,
                    flt: Filter = Filter(), admit: Callable[[MemoryItem], bool] | None = None) -> list[RecallHit]:
    """Current recall: memories a later one superseded leave the ranking, and their place
    goes to the current version of their fact. A question that matches "Rosa always orders
    cortado" asks about Rosa's drink; the answer is what superseded it ("Rosa switched to
    chai"), however the later statement is worded. So the newest version (following
    ``superseded_by`` to the end) takes the best score of the versions it replaced, if it
    scored lower or was not among the candidates at all, with that version's score breakdown
    (``why.other["succeeds"]``); it must pass the recall's filter ``flt`` and ``admit`` (the
    archive cue) like any candidate.

    One kept is a memory that differs from its successor in a single slot (a detected change,
    "works at Acme" -> "works at Globex") when the query names a word only the old one has
    ("did she leave Acme?", "note number 7"): such a query asks for that version, or a
    near-identical statement was taken for its update. It stays marked
    (``why.other["superseded"]``)."""
    old = [h for h in hits if h.item.superseded_by is not None]
    if not old:
        return hits
    successors = {i.id: i for i in engine.store.get(part, list({h.item.superseded_by or "" for h in old}))}
    asked = token_set(query)
    drop: dict[str, RecallHit] = {}
    for h in old:
        new = successors.get(h.item.superseded_by or "")
        own_words = token_set(h.item.content) - token_set(new.content) if new is not None else frozenset()
        if new is not None and asked & own_words and imad.replaced_spans(h.item.content, new.content) == 1 \
                and imad.conflict_cues(h.item.content, new.content):
            h.why.other["superseded"] = 1.0
        else:
            drop[h.item.id] = h
    kept = [h for h in hits if h.item.id not in drop]
    if not drop or not engine.config.recall.current_inherits:
        return kept
    # The newest version of each dropped one's fact, followed to the end of its chain (a
    # successor that is gone - erased - ends it; at most 16 steps, so no cycle can hold recall).
    head = {d: successors[h.item.superseded_by] for d, h in drop.items() if h.item.superseded_by in successors}
    gone: set[str] = set()
    for _ in range(16):
        later = {m.superseded_by for m in head.values() if m.superseded_by is not None} - gone
        if not later:
            break
        found = {i.id: i for i in engine.store.get(part, list(later))}
        gone |= later - found.keys()
        head = {d: found.get(m.superseded_by or "", m) for d, m in head.items()}
    ids = frozenset(m.id for m in head.values() if m.superseded_by is None)
    visible = {m.id: m for m in engine.store.query(part, replace(flt, ids=ids))} if ids else {}
    best: dict[str, RecallHit] = {}
    for d, m in head.items():
        if m.id in visible and (admit is None or admit(visible[m.id])):
            h = drop[d]
            if m.id not in best or h.score > best[m.id].score:
                best[m.id] = h
    if not best:
        return kept
    placed = {h.item.id: h for h in kept}
    for mid, src in best.items():
        cur = placed.get(mid)
        if cur is not None and cur.score >= src.score:
            cur.why.other[NEWEST_VERSION] = 1.0  # it outscored what it replaced: still a chain's newest
            continue
        why = copy.deepcopy(src.why)
        why.other["succeeds"] = why.other[NEWEST_VERSION] = 1.0
        lifted = RecallHit(visible[mid], src.score, why)
        if cur is not None:
            kept[kept.index(cur)] = lifted
        else:
            kept.append(lifted)
    kept.sort(key=lambda h: (-h.score, h.item.id))
    return kept


def subject_lexical(engine: Engine, query: str, pool: list[MemoryItem], lexical: np.ndarray) -> np.ndarray:
    """Keyword evidence about a named subject counts where the subject is: when the query
    names someone or something (``text.entities``), a note (a memory without a speaker)
    that names others but none of them keeps ``RecallParams.foreign_lexical_weight`` of its
    normalised BM25 evidence. Its words then match the question's wording, not its subject
    ("What does Rosa like to drink these days?" against "These days Sofia is hooked on
    kayaking"). A conversation turn keeps its evidence: it may speak of the subject as "you"
    or "I". Returns the factor of each candidate's lexical evidence (1 where it counts)."""
    factor = np.ones(len(pool))
    weight = engine.config.recall.foreign_lexical_weight
    if weight >= 1.0 or not lexical.any():
        return factor
    asked = frozenset(entities(query))
    if not asked:
        return factor
    for j, item in enumerate(pool):
        if lexical[j] <= 0.0 or item.speaker is not None:
            continue
        names = _named(item)
        if names and not asked & names:
            factor[j] = weight
    return factor


def order_versions(engine: Engine, part: Partition, hits: list[RecallHit], query: str, info: QueryInfo,
                   k: int) -> list[RecallHit]:
    """Current recall among versions of one fact: the newest version takes the best place.

    Among the best hits, those that name a subject the query names are compared with what
    they say about it: their vectors less their mean direction (what every memory about
    the subject shares, its name above all); when there are only two, whose residuals
    after their mean are opposite whatever they say, their vectors less the directions of
    the names the query asks about (their own embeddings, as in ``subject_focus``). Two
    notes of the semantic or episodic layer (a turn of a conversation has a speaker and a
    later turn does not replace an earlier one; an event such as "sold the Kia and bought
    a Focus" may be the change) are taken for versions of one fact when these residuals
    agree (cosine >= ``version_similarity``, or ``version_name_similarity`` for two) and
    both answer the query (the lower query similarity at least ``version_relevance`` of
    the higher). A change store time did not detect ("Kenji's
    usual drink is chai", later "Kenji switched to lemon water") then ranks as iMAD decides
    a change: within each group of versions the scores are handed out by valid time, the
    newest getting the best (``why.other["version_order"]``: the score it gained or lost).
    A query naming a time window or asking for the earliest keeps the ranking, as does
    ``as_of`` (not called then). ``hits`` are sorted by score; returns them re-sorted."""
    if not engine.on("imad_debate") or info.window is not None or info.direction == "early" or len(hits) < 3:
        return hits
    asked = frozenset(entities(query))
    if not asked:
        return hits
    ip = engine.config.params.imad_debate
    about: list[RecallHit] = []
    subjects: list[frozenset[str]] = []
    for h in hits[: max(engine.config.recall.boost_pool * k, 10)]:
        subj = asked & _named(h.item)
        if subj:
            about.append(h)
            subjects.append(subj)
    # A note of an event ("Kenji sold the Kia Niro and bought a Ford Focus") may be the change.
    facts = [i for i, h in enumerate(about)
             if h.item.layer in (Layer.SEMANTIC, Layer.EPISODIC) and h.item.speaker is None]
    if len(facts) < 2:
        return hits
    vecs = engine.store.vectors(part, [h.item.id for h in about]).astype(np.float64)
    mean = vecs.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if len(about) >= 3 and norm > 0.0:
        mean /= norm
        close = _cosines(vecs - np.outer(vecs @ mean, mean))
    else:
        # Two notes: their residuals after their mean are opposite, whatever they say. What
        # remains without the asked names tells: "Project Lantern is run by Ravi Petrov" and,
        # later, "Ravi Petrov handed Project Lantern over to Pavel Rahman".
        basis = _name_basis(engine, entities_as_written(query))
        named = _cosines(vecs - (vecs @ basis) @ basis.T) >= ip.version_name_similarity
        close = np.where(named, ip.version_similarity, -1.0)
    rel = np.array([max(0.0, h.why.dense) for h in about])
    parent = {i: i for i in facts}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for x, i in enumerate(facts):
        for j in facts[x + 1:]:
            # Two newest versions of known chains (each replaced a memory among the candidates,
            # whether or not it took that one's place) are two facts: were they one, one would
            # have superseded the other.
            if NEWEST_VERSION in about[i].why.other and NEWEST_VERSION in about[j].why.other:
                continue
            hi = max(rel[i], rel[j])
            if (subjects[i] & subjects[j] and close[i, j] >= ip.version_similarity and hi > 0
                    and min(rel[i], rel[j]) >= ip.version_relevance * hi
                    and about[i].item.valid_from != about[j].item.valid_from):
                parent[root(i)] = root(j)
    groups: dict[int, list[RecallHit]] = {}
    for i in facts:
        groups.setdefault(root(i), []).append(about[i])
    moved = False
    for members in groups.values():
        if len(members) < 2:
            continue
        scores = sorted((h.score for h in members), reverse=True)
        by_time = sorted(members, key=lambda h: (-h.item.valid_from, h.item.id))
        for h, s in zip(by_time, scores):
            if s != h.score:
                h.why.other["version_order"] = s - h.score
                h.score = h.why.final = s
                moved = True
    if moved:
        hits.sort(key=lambda h: (-h.score, h.item.id))
    return hits


def _name_basis(engine: Engine, names: list[str]) -> np.ndarray:
    """An orthonormal basis of the names' own embeddings (columns), to project out of vectors."""
    basis, _ = np.linalg.qr(np.stack([engine.embed_query(n) for n in names]).astype(np.float64).T)
    return basis


def _cosines(rows: np.ndarray) -> np.ndarray:
    """The cosine of every pair of rows."""
    unit = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


def retrievability_weight(engine: Engine, hits: list[RecallHit], now: float, hyper: Any = None) -> None:
    """Faded memories rank lower: score x (floor + (1 - floor) R). With the default floor
    (0.9) retrievability reorders near-ties only; floor 0 is the paper's score x R. The
    HyperAgent raises the floor when recall favours recent memories beyond their share of
    the candidates (``hyper``: its record, which the recall has read)."""
    if not hits:
        return
    r = retrievability(engine, [h.item for h in hits], now)
    floor = tuned_from(engine, hyper, "retrievability_floor", engine.config.recall.retrievability_floor)
    for h, ri in zip(hits, r.tolist()):
        h.why.retrievability = floor + (1.0 - floor) * ri


def belief_weight(engine: Engine, part: Partition, hits: list[RecallHit]) -> None:
    """A contested fact (one end of a ``contradicts`` edge, or the loser of an iMAD debate)
    ranks by how far it is believed: score x (1 - w_c (1 - c) - w_d [disputed]), c its
    Bayesian confidence (with ``bayesian_confidence`` on), [disputed] 1 when it lost a
    debate (with ``imad_debate`` on). The factor is at most 1 and an uncontested fact
    keeps 1, so it reorders the sides of a contradiction and never lifts a contested fact
    over an uncontested match."""
    use_conf, use_dispute = engine.on("bayesian_confidence"), engine.on("imad_debate")
    facts = [h for h in hits if h.item.layer is Layer.SEMANTIC] if use_conf or use_dispute else []
    if not facts:
        return
    ids = {h.item.id for h in facts}
    contested = {end for e in engine.store.edges(part, ids, relation=RELATION_CONTRADICTS) for end in (e.src, e.dst)}
    rp = engine.config.recall
    for h in facts:
        disputed = use_dispute and bool(h.item.metadata.get(META_DISPUTED))
        if h.item.id not in contested and not disputed:
            continue
        drop = (rp.contested_weight * (1.0 - h.item.confidence) if use_conf else 0.0) + (
            rp.disputed_penalty if disputed else 0.0)
        h.why.belief = 1.0 - drop


def answer_focus(engine: Engine, hits: list[RecallHit], query: str, k: int) -> list[RecallHit]:
    """A question that says what shape its answer has (``text.answer_shape``: "Who does
    Lucia report to?" asks for a name besides Lucia) prefers, among the best hits that are
    notes about a subject it names, those that hold such an answer: "Lucia has a new
    manager, Samir Fischer" over "Talked with Lucia about the football match". A note
    without one keeps ``RecallParams.answer_shape_weight`` of its score
    (``why.other["answer_shape"]``) when another note about the subject holds one. After
    the versions are ordered, so that it never decides between two versions of a fact
    (both hold an answer). ``hits`` are sorted by score; returns them re-sorted."""
    keep = engine.config.recall.answer_shape_weight
    shape = answer_shape(query) if keep < 1.0 else None
    if shape is None or len(hits) < 2:
        return hits
    names, about = _notes_about_asked(engine, hits, query, k)
    asked_words = frozenset(w for n in names for w in name_words(n))
    holds = [shape(h.item.content, asked_words) for h in about]
    if not any(holds) or all(holds):
        return hits
    for h, ok in zip(about, holds):
        if not ok:
            h.why.other["answer_shape"] = keep
            h.score = h.why.final = h.score * keep
    hits.sort(key=lambda h: (-h.score, h.item.id))
    return hits


def priority_weight(engine: Engine, hits: list[RecallHit]) -> None:
    """PriorityMap feeds ranking: score x (0.9 + 0.2 P), P in [0, 1]."""
    if not engine.on("priority_map"):
        return
    for h in hits:
        h.why.priority = 0.9 + 0.2 * float(h.item.state.get(PRIORITY, 0.5))


def subject_focus(engine: Engine, part: Partition, hits: list[RecallHit], query: str, qvec: np.ndarray,
                  k: int) -> list[RecallHit]:
    """Among the notes about a subject the query names, meaning is compared without the name.

    A sentence embedding of a short note is mostly its names: "Anouk is looking forward to
    the holidays" is as close to "Which city does Anouk live in now?" as "Anouk relocated
    from Uppsala to Tucson". Among the best hits, the notes (no speaker: a conversation
    turn may speak of its subject as "you" or "I") that name a subject of the query are
    compared with it through what remains once the directions of the names it asks about
    (their own embeddings) are projected out of both vectors. Each such note's score is
    multiplied by the ratio of its relevance with that residual similarity to its
    relevance with the plain one (``subject_focus`` x dense share of the note's best + its
    BM25 evidence), so the subject's other notes reorder among themselves and every other
    factor of the score is kept (``why.other["subject_focus"]``). ``hits`` are sorted by
    score; returns them re-sorted. ``RecallParams.subject_focus`` 0 switches this off."""
    weight = engine.config.recall.subject_focus
    if weight <= 0.0 or len(hits) < 2:
        return hits
    names, about = _notes_about_asked(engine, hits, query, k)
    if len(about) < 2:
        return hits
    basis = _name_basis(engine, names)
    vecs = engine.store.vectors(part, [h.item.id for h in about]).astype(np.float64)
    q = np.asarray(qvec, dtype=np.float64)
    q_rest = q - basis @ (basis.T @ q)
    v_rest = vecs - (vecs @ basis) @ basis.T
    norms = np.linalg.norm(v_rest, axis=1) * np.linalg.norm(q_rest)
    rest = np.maximum(v_rest @ q_rest / np.maximum(norms, 1e-12), 0.0)
    plain = np.array([max(0.0, h.why.dense) for h in about])
    lexical = np.array([h.why.lexical for h in about])
    focused = weight * rest / max(float(rest.max()), 1e-12) + lexical
    before = weight * plain / max(float(plain.max()), 1e-12) + lexical
    for h, a, b in zip(about, focused, before):
        if b > 0:
            h.why.other["subject_focus"] = float(a / b)
            h.score = h.why.final = h.score * float(a / b)
    hits.sort(key=lambda h: (-h.score, h.item.id))
    return hits
