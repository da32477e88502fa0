"""The timeline protocol: nights, sessions, probes, the zenbrain store and the baselines."""

from __future__ import annotations

import itertools

import pytest
from bench_data import locomo_data

from zenbrain import Config, Mechanisms
from zenbrain.bench.base import Doc
from zenbrain.bench.baselines import BM25System
from zenbrain.bench.locomo import parse_locomo
from zenbrain.bench.longitudinal.locomo_timeline import (
    locomo_workload,
    run_locomo_timeline,
    session_of,
)
from zenbrain.bench.longitudinal.locomo_updates import (
    LocomoUpdatePair,
    locomo_update_probes,
)
from zenbrain.bench.longitudinal.lowvalue import is_low_value, low_value_ids
from zenbrain.bench.longitudinal.timeline import (
    DAY,
    DIAGNOSTIC_VIEWS,
    HIT_PREFIX,
    LifeStore,
    Probe,
    Protocol,
    StaticTimeline,
    TimedSession,
    Use,
    next_night,
    run_unit,
)
from zenbrain.bench.runner import run_locomo
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0 - (1_700_000_000.0 % DAY) + 10 * 3600.0  # 10:00 UTC


@pytest.fixture
def emb():
    return HashingEmbedder(64)


def _doc(i: str, text: str) -> Doc:
    return Doc(i, text, speaker="Ann", metadata={"dia_id": i})


def _sessions(days=(0, 3, 40)) -> list[TimedSession]:
    texts = [
        ["Ann adopted a grey cat called Pixel.", "Ann works as a nurse in Leeds."],
        ["Ann started pottery classes on Mondays.", "The weather was rainy."],
        ["Ann moved to York for a new hospital job.", "Thanks, that is lovely!"],
    ]
    return [TimedSession(f"S{n}", T0 + d * DAY, tuple(_doc(f"D{n}:{j}", t) for j, t in enumerate(texts[n])))
            for n, d in enumerate(days)]


def test_next_night_is_the_first_run_strictly_after():
    night = next_night(T0, 3.0)  # 10:00 -> 03:00 the next day
    assert night - T0 == pytest.approx(17 * 3600.0)
    assert next_night(night, 3.0) == pytest.approx(night + DAY)
    assert next_night(night - 1.0, 3.0) == pytest.approx(night)


def test_protocol_refuses_unknown_nightly_operations():
    with pytest.raises(ValueError, match="nightly"):
        Protocol(nightly=("decay", "dream"))


def test_lifestore_runs_every_night_between_sessions_and_stores_turn_by_turn(emb):
    store = LifeStore(emb)
    try:
        probes = [Probe("q1", "Where does Ann work?", ("D0:1",), "end")]
        out = run_unit(store, _sessions(), probes, k=5)
        life = out["lifecycle"]
        assert life["nights"] == 40  # one nightly run per night from day 0 to day 40
        assert life["memories"] >= 6  # six turns, plus any schemas sleep made
        assert life["seconds"]["decay"] > 0 and life["seconds"]["sleep"] > 0
        states = store.doc_states()
        assert set(states) == {f"D{n}:{j}" for n in range(3) for j in range(2)}
        items = store.mem.list_memories(store.user, include_archived=True)
        turn = next(i for i in items if i.metadata.get("doc_id") == "D2:0")
        assert turn.metadata["speaker"] == "Ann" and turn.metadata["dia_id"] == "D2:0"
        assert turn.session_id == "S2" and turn.event_time == pytest.approx(T0 + 40 * DAY)
    finally:
        store.close()


def test_measuring_is_read_only(emb):
    store = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()))
    try:
        run_unit(store, _sessions(), [], k=5)
        before = {i.id: i.access_count for i in store.mem.list_memories(store.user)}
        for _ in range(3):
            store.search_hits("Where does Ann work?", 5)
        assert {i.id: i.access_count for i in store.mem.list_memories(store.user)} == before
    finally:
        store.close()


def test_context_recall_is_use_and_touches_memories(emb):
    store = LifeStore(emb, protocol=Protocol(context_k=3, nightly=()))
    try:
        run_unit(store, _sessions(), [], k=5, uses=[Use(T0 + 20 * DAY, "Ann's cat Pixel")])
        assert sum(i.access_count for i in store.mem.list_memories(store.user)) > 0
        assert store.lifecycle()["seconds"]["use"] > 0
    finally:
        store.close()


def test_a_workload_stores_the_same_ids_every_time(emb):
    """Ids are drawn from the system's seed, so ties broken by id fall the same way and the
    same code gives the same rankings run after run; another seed gives other ids."""

    def ids(seed):
        store = LifeStore(emb, config=Config(seed=seed), protocol=Protocol(context_k=0, nightly=()))
        try:
            run_unit(store, _sessions(), [], k=3)
            return sorted(i.id for i in store.mem.list_memories(store.user))
        finally:
            store.close()

    assert ids(0) == ids(0) != ids(1)


FACTS = ["The library on Elm Street opens at nine", "The train to Leeds leaves from platform four",
         "Granite is an igneous rock formed from cooling magma", "Melanie painted a lake at sunrise in Oregon",
         "Caroline moved to Sweden in 2022 to study counseling", "The adoption agency in Portland approved the application"]
SMALL_TALK = ["So nice, thanks!", "That is so nice!", "Thanks, so nice!"]


def test_forgetting_archives_unused_small_talk_and_stops_when_switched_off(emb):
    texts = [FACTS[:3] + SMALL_TALK[:2], FACTS[3:] + SMALL_TALK[2:], ["Ann moved to York for a new hospital job."]]
    sessions = [TimedSession(f"S{n}", T0 + d * DAY, tuple(_doc(f"D{n}:{j}", t) for j, t in enumerate(texts[n])))
                for n, d in enumerate((0, 1, 90))]
    talk = {f"D{n}:{j}" for n, ts in enumerate(texts) for j, t in enumerate(ts) if t in SMALL_TALK}
    # Decay alone: sleep would fold the turns into a schema and its budget archive them first.
    on = LifeStore(emb, protocol=Protocol(context_k=0, nightly=("decay",)))
    off = LifeStore(emb, protocol=Protocol(context_k=0, nightly=("decay",)),
                    config=Config(mechanisms=Mechanisms(disabled=frozenset({"ebbinghaus_decay", "triple_copy"}))))
    try:
        life_on = run_unit(on, sessions, [], k=5)["lifecycle"]
        life_off = run_unit(off, sessions, [], k=5)["lifecycle"]
        assert life_on["totals"]["archived"] > 0
        assert {d for d, s in on.doc_states().items() if s["archived"]} == talk  # the facts stay, faded
        assert life_off["totals"].get("archived", 0) == 0
        assert not any(s["archived"] for s in off.doc_states().values())
    finally:
        on.close()
        off.close()


def test_probes_are_asked_after_their_session_and_at_the_end(emb):
    bm25 = StaticTimeline(BM25System())
    probes = [Probe("q", "Which city did Ann move to?", ("D2:0",), "fresh", after="S1"),
              Probe("q", "Which city did Ann move to?", ("D2:0",), "end")]
    out = run_unit(bm25, _sessions(), probes, k=3)
    fresh, end = out["records"]
    assert fresh["checkpoint"] == "fresh" and "D2:0" not in fresh["ranked"]  # not said yet
    assert end["checkpoint"] == "end" and "D2:0" in end["ranked"]
    with pytest.raises(ValueError, match="unknown session"):
        run_unit(bm25, _sessions(), [Probe("x", "q", ("D0:0",), "fresh", after="S9")], k=3)


def test_update_modes_rewrite_or_add(emb):
    s0 = TimedSession("S0", T0, (Doc("a", "Ann lives in Leeds.", metadata={}),))
    s1 = TimedSession("S1", T0 + 5 * DAY, (Doc("b", "Ann moved to York.", metadata={"supersedes": "a"}),))
    new = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()))
    upd = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()), update_mode="update")
    rev = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()), update_mode="revise")
    try:
        run_unit(new, [s0, s1], [], k=3)
        run_unit(upd, [s0, s1], [], k=3)
        run_unit(rev, [s0, s1], [], k=3)
        assert sorted(i.content for i in new.mem.list_memories(new.user)) == ["Ann lives in Leeds.", "Ann moved to York."]
        assert [i.content for i in upd.mem.list_memories(upd.user)] == ["Ann moved to York."]
        assert upd.lifecycle()["revisions"] == {"update": 1}
        assert sum(rev.lifecycle()["revisions"].values()) == 1  # one reconsolidation decision, whatever it was
    finally:
        for s in (new, upd, rev):
            s.close()
    with pytest.raises(ValueError, match="update_mode"):
        LifeStore(emb, update_mode="merge")


def test_supersede_mode_keeps_the_old_fact_with_its_valid_time(emb):
    s0 = TimedSession("S0", T0, (Doc("a", "Ann lives in Leeds.", metadata={}),))
    s1 = TimedSession("S1", T0 + 5 * DAY, (Doc("b", "Ann moved to York.", metadata={"supersedes": "a"}),))
    sup = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()), update_mode="supersede")
    try:
        run_unit(sup, [s0, s1], [], k=3)
        old, new = sorted(sup.mem.list_memories(sup.user), key=lambda i: i.valid_from)
        assert old.content == "Ann lives in Leeds." and old.superseded_by == new.id
        assert old.valid_until == pytest.approx(T0 + 5 * DAY)
        assert sup.lifecycle()["revisions"] == {"supersede": 1}
        assert [d for d, _ in sup.search_hits("Where does Ann live?", 3)] == ["b"]  # current facts only
        past = sup.mem.recall("Where does Ann live?", sup.user, k=3, touch=False, as_of=T0 + DAY)
        assert [h.item.content for h in past] == ["Ann lives in Leeds."]
    finally:
        sup.close()


def test_session_numbers_and_locomo_workload():
    assert session_of("D12:3") == 12 and session_of("conv-1/D2:1") == 2 and session_of("x") is None
    conv = parse_locomo(locomo_data())[0]
    sessions, probes = locomo_workload(conv)
    assert [s.key for s in sessions] == ["conv-1:S1", "conv-1:S2", "conv-1:S3"]
    assert all(a.time < b.time for a, b in itertools.pairwise(sessions))
    ends = [p for p in probes if p.checkpoint == "end"]
    fresh = [p for p in probes if p.checkpoint == "fresh"]
    assert len(ends) == sum(1 for q in conv.questions if q.evidence)
    # The sister question's evidence is in the last session: asked at the end only.
    assert all(p.after != sessions[-1].key for p in fresh)
    puppy = next(p for p in fresh if p.question.startswith("What is the name of the puppy"))
    assert puppy.after == "conv-1:S1" and puppy.extra["delay_days"] > 0


def test_locomo_update_probes_check_their_ids():
    conv = parse_locomo(locomo_data())[0]
    pairs = (LocomoUpdatePair("conv-1", ("D1:1",), ("D2:1",), "What now?", "test"),)
    (p,) = locomo_update_probes(conv, pairs)
    assert p.checkpoint == "update" and p.extra["current_ids"] == ["D2:1"] and p.extra["stale_ids"] == ["D1:1"]
    with pytest.raises(ValueError, match="do not exist"):
        locomo_update_probes(conv, (LocomoUpdatePair("conv-1", ("D9:9",), ("D2:1",), "q", "t"),))


def test_low_value_rule():
    ev = {"D1:1"}
    sp = ["Alice", "Bob"]
    assert is_low_value(Doc("D1:2", "Bob: Wow, that's awesome, Alice!", speaker="Bob"), evidence=ev, speakers=sp)
    assert not is_low_value(Doc("D1:1", "Alice: Wow!", speaker="Alice"), evidence=ev, speakers=sp)  # evidence
    assert not is_low_value(Doc("D1:3", "Bob: See you at 5!", speaker="Bob"), evidence=ev, speakers=sp)  # a digit
    assert not is_low_value(Doc("D1:4", "Bob: Say hi to Lisbon!", speaker="Bob"), evidence=ev, speakers=sp)  # a name
    assert not is_low_value(Doc("D1:5", "Bob: Great, see you next week!", speaker="Bob"), evidence=ev, speakers=sp)
    long = "Bob: " + " ".join(["nice"] * 21)
    assert not is_low_value(Doc("D1:6", long, speaker="Bob"), evidence=ev, speakers=sp)
    conv = parse_locomo(locomo_data())[0]
    assert "D1:2" not in low_value_ids(conv) or "D1:2" not in {e for q in conv.questions for e in q.evidence}


def test_run_locomo_timeline_matches_the_static_baseline_at_the_end(emb):
    convs = parse_locomo(locomo_data())
    systems = [LifeStore(emb, views=DIAGNOSTIC_VIEWS), StaticTimeline(BM25System())]
    try:
        pairs = (LocomoUpdatePair("conv-1", ("D1:1",), ("D2:1",), "What does Bob learn now?", "test"),)
        res = run_locomo_timeline(systems, convs, ks=(1, 3), views=DIAGNOSTIC_VIEWS, progress=False,
                                  update_pairs=pairs)
    finally:
        for s in systems:
            s.close()
    static = run_locomo([BM25System()], convs, ks=(1, 3), progress=False)
    end = res["systems"]["bm25"]["summary"]["end"]["overall"]
    assert end["evidence_recall@3"]["mean"] == pytest.approx(
        static["systems"]["bm25"]["summary"]["overall"]["evidence_recall@3"]["mean"])
    z = res["systems"]["zenbrain"]
    assert set(z["summary"]) >= {"end", "fresh", "end_on_fresh_subset"}
    assert set(z["views"]) == set(DIAGNOSTIC_VIEWS)
    assert z["archived_share"]["all"]["n"] == sum(len(c.docs) for c in convs)
    assert all("evidence_archived" in r for r in z["questions"] if r["checkpoint"] == "end")
    assert res["dataset"]["questions_fresh"] > 0 and res["dataset"]["update_questions"] == 1
    assert z["summary"]["update"]["overall"]["n"] == 1
    assert all(v["questions"] and all(q["qid"] != "conv-1/u0" for q in v["questions"]) for v in z["views"].values())
    assert all(not d.startswith(HIT_PREFIX) or len(d) > 1 for r in z["questions"] for d in r["ranked"])


def test_notes_are_stored_without_a_session(emb):
    notes = TimedSession("N0", T0, (_doc("n0", "Ann works as a nurse in Leeds."), _doc("n1", "The weather was rainy.")),
                         conversation=False)
    talk = TimedSession("S1", T0 + DAY, (_doc("t0", "Ann adopted a grey cat called Pixel."),))
    store = LifeStore(emb, protocol=Protocol(context_k=0, nightly=()))
    try:
        run_unit(store, [notes, talk], [], k=3)
        sessions = {i.metadata["doc_id"]: i.session_id for i in store.mem.list_memories(store.user)}
        assert sessions == {"n0": None, "n1": None, "t0": "S1"}
    finally:
        store.close()
