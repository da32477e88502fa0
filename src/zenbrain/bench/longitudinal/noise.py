"""Noise and forgetting: low-value chatter piles up beside the facts that matter.

One LoCoMo conversation is lived through on its own dates (as in ``locomo_timeline``),
and on every day between its sessions that has no session of its own the two speakers
chat: ``per_day`` low-value turns (``lowvalue``'s rule) drawn, with replacement and a seeded
generator, from the *other* conversations of the file, said by this conversation's
speakers in turn, one session at noon UTC. The questions are the conversation's own, asked
after the last session.

Every stored document falls in one class: ``evidence`` (a turn some question needs),
``noise`` (injected chatter), ``low_value`` (the conversation's own chatter by the rule)
and ``other``. Reported: evidence recall and precision of the questions, the share of each
class archived at the end, and the active store size night by night.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..base import Doc
from ..locomo import LocomoConversation
from .locomo_timeline import locomo_workload
from .lowvalue import low_value_ids, turn_text
from .timeline import DAY, LifeStore, Probe, TimedSession, TimelineSystem, run_unit

__all__ = ["NOISE_CLASSES", "class_shares", "noise_pool", "noise_workload", "run_noise"]

NOISE_CLASSES = ("evidence", "noise", "low_value", "other")
NOON = 12 * 3600.0


def noise_pool(conversations: Sequence[LocomoConversation]) -> dict[str, list[str]]:
    """Per conversation, the low-value turns of all the *other* conversations (raw words)."""
    own = {c.sample_id: [turn_text(d) for d in c.docs if d.id in low_value_ids(c)] for c in conversations}
    return {sid: [t for other, texts in own.items() if other != sid for t in texts] for sid in own}


def noise_workload(
    conv: LocomoConversation, pool: Sequence[str], *, per_day: int = 6, seed: int = 0
) -> tuple[list[TimedSession], list[Probe], dict[str, str]]:
    """Sessions (the conversation's and the chatter's), end probes, and each document's class."""
    if per_day < 0:
        raise ValueError("per_day must not be negative")
    sessions, probes = locomo_workload(conv, fresh=False)
    evidence = {e for q in conv.questions for e in q.evidence}
    low = low_value_ids(conv)
    classes: dict[str, str] = {}
    for s in sessions:
        for d in s.docs:
            classes[d.id] = "evidence" if d.id in evidence else ("low_value" if d.id in low else "other")
    if not pool or per_day == 0:
        return sessions, probes, classes
    rng = np.random.default_rng(seed)
    speakers = list(conv.speakers) or ["A", "B"]
    busy = {int(s.time // DAY) for s in sessions}
    first, last = int(sessions[0].time // DAY), int(sessions[-1].time // DAY)
    chatter: list[TimedSession] = []
    for day in range(first + 1, last):
        if day in busy:
            continue
        docs = []
        for i, j in enumerate(rng.integers(0, len(pool), size=per_day)):
            who = speakers[i % len(speakers)]
            doc_id = f"noise:{day}:{i}"
            docs.append(Doc(doc_id, f"{who}: {pool[int(j)]}", time=day * DAY + NOON, speaker=who,
                            session=f"noise{day}", metadata={"noise": True}))
            classes[doc_id] = "noise"
        chatter.append(TimedSession(f"{conv.sample_id}:N{day}", day * DAY + NOON, tuple(docs)))
    merged = sorted([*sessions, *chatter], key=lambda s: s.time)
    probes = [replace(p, extra={**p.extra, "noise_per_day": per_day}) for p in probes]
    return merged, probes, classes


def class_shares(states: dict[str, dict[str, Any]], classes: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Archived share of each class of stored documents (and of all)."""
    acc: dict[str, dict[str, Any]] = {}
    for doc, st in states.items():
        for key in (classes.get(doc, "other"), "all"):
            slot = acc.setdefault(key, {"n": 0, "archived": 0})
            slot["n"] += 1
            slot["archived"] += int(bool(st["archived"]))
    for slot in acc.values():
        slot["share"] = slot["archived"] / slot["n"] if slot["n"] else None
    return acc


def run_noise(
    systems: Sequence[TimelineSystem],
    conversations: Sequence[LocomoConversation],
    *,
    pool_from: Sequence[LocomoConversation] | None = None,
    per_day: int = 6,
    seed: int = 0,
    ks: Sequence[int] = (5, 10),
    progress: bool = True,
) -> dict[str, Any]:
    """Every system through every conversation with chatter; results as a dict. The chatter
    is drawn from ``pool_from`` (default: the conversations run), minus each conversation."""
    from tqdm.auto import tqdm

    from ..metrics import aggregate, locomo_metric_names, locomo_question_metrics
    from ..runner import DEFAULT_BOOTSTRAP, locomo_headline_metrics

    ks = sorted({int(k) for k in ks})
    pools = noise_pool(pool_from or conversations)
    work = {c.sample_id: noise_workload(c, pools[c.sample_id], per_day=per_day, seed=seed) for c in conversations}

    def score(p: Probe, hits: list[tuple[str, str]]) -> dict[str, Any]:
        return {"metrics": locomo_question_metrics([d for d, _ in hits], p.gold, ks)}

    def states(system: TimelineSystem) -> dict[str, Any]:
        return {"doc_states": system.doc_states()} if isinstance(system, LifeStore) else {}

    results: dict[str, Any] = {
        "benchmark": "locomo-noise", "ks": ks, "per_day": per_day, "seed": seed,
        "dataset": {"conversations": [c.sample_id for c in conversations],
                    "documents": {sid: len(cls) for sid, (_, _, cls) in work.items()},
                    "noise": {sid: sum(1 for v in cls.values() if v == "noise") for sid, (_, _, cls) in work.items()}},
        "systems": {},
    }
    bs = dict(DEFAULT_BOOTSTRAP)
    with tqdm(total=len(systems) * len(conversations), desc="locomo[noise]", disable=not progress, unit="conv") as bar:
        for system in systems:
            recs: list[dict[str, Any]] = []
            life: dict[str, Any] = {}
            parts: list[dict[str, Any]] = []
            for conv in conversations:
                sessions, probes, classes = work[conv.sample_id]
                out = run_unit(system, sessions, probes, k=max(ks), score=score, after_end=states)
                recs += out["records"]
                life[conv.sample_id] = out["lifecycle"]
                if "doc_states" in out:
                    parts.append(class_shares(out["doc_states"], classes))
                bar.update(1)
            entry: dict[str, Any] = {
                "questions": recs, "lifecycle": life,
                "summary": aggregate(recs, locomo_metric_names(ks), ci_metrics=locomo_headline_metrics(ks),
                                     confidence=bs["confidence"], n_resamples=bs["n_resamples"], method=bs["method"],
                                     seed=bs["seed"]),
            }
            if parts:
                merged: dict[str, dict[str, Any]] = {}
                for part in parts:
                    for cls, v in part.items():
                        slot = merged.setdefault(cls, {"n": 0, "archived": 0})
                        slot["n"] += v["n"]
                        slot["archived"] += v["archived"]
                for slot in merged.values():
                    slot["share"] = slot["archived"] / slot["n"] if slot["n"] else None
                entry["shares"] = merged
            results["systems"][system.name] = entry
    return results
