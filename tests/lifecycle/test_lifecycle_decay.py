"""decay(): forgetting curves archive and restore; STC rescue; each curve switchable; value-aware
forgetting. The tests of the curves use the paper's rule (every faded memory archived)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from zenbrain import state as keys
from zenbrain.mechanisms.ebbinghaus import EbbinghausParams
from zenbrain.mechanisms.information import InformationReference, information_words
from zenbrain.model import Edge, Layer, Scope
from zenbrain.pipeline.lifecycle.decay import _count_all, _says_little
from zenbrain.pma import triple_copy
from zenbrain.state import ARCHIVED_BY, KV_INFORMATION, RESCUED_AT
from zenbrain.text import NameVocabulary, names_something, token_set

NEUTRAL = [
    "The library on Elm Street opens at nine",
    "The train to Leeds leaves from platform four",
    "Granite is an igneous rock",
]
CORE = "My name is Ada and I live in Bristol"


def _scene(w):
    facts = [w.store(t) for t in NEUTRAL]
    core = w.store(CORE)
    assert core.layer is Layer.CORE
    return facts, core


@pytest.mark.parametrize("off", [(), ("triple_copy",), ("ebbinghaus_decay",)])
def test_sixty_days_archive_neutral_memories_but_never_core(world, off):
    w = world(*off, value_aware=False)
    facts, core = _scene(w)
    w.clock.advance(days=60)
    rep = w.mem.decay(w.scope)
    archived = set(rep.stages["archive"]["ids"])
    assert archived == {f.id for f in facts}
    assert core.id not in archived and not w.get(core.id).archived
    for f in facts:
        item = w.get(f.id)
        assert item.archived and item.state[ARCHIVED_BY] == "decay"
        assert [e.action for e in w.mem.history(f.id, w.scope)][-1] == "archived"
        assert rep.stages["archive"]["retrievability"][f.id] <= 0.1
    # archived memories are out of ordinary recall (a query without their specific words:
    # the cue that brings one back is tested below), and still recoverable
    assert all(h.id not in archived for h in w.mem.recall("anything new?", w.scope, touch=False))
    found = w.mem.recall("anything new?", w.scope, touch=False, include_archived=True)
    assert archived & {h.id for h in found}
    json.dumps(rep.as_dict())  # the report is plain JSON


def test_nothing_decays_when_both_curves_are_off(world):
    w = world("ebbinghaus_decay", "triple_copy")
    facts, _ = _scene(w)
    w.clock.advance(days=365)
    rep = w.mem.decay(w.scope)
    assert all(not w.get(f.id).archived for f in facts)
    for name in ("retrievability", "archive", "restore", "review"):
        assert "skipped" in rep.stages[name]


def test_restore_brings_back_a_memory_used_again(world):
    w = world(value_aware=False)
    facts, _ = _scene(w)
    w.clock.advance(days=60)
    w.mem.decay(w.scope)
    target = facts[0]
    assert w.get(target.id).archived
    # Reviewing it (an archived memory stays reachable by id) resets its clock.
    w.mem.review(target.id, w.scope, "good")
    rep = w.mem.decay(w.scope)
    assert target.id in rep.stages["restore"]["ids"]
    item = w.get(target.id)
    assert not item.archived and ARCHIVED_BY not in item.state
    assert [e.action for e in w.mem.history(target.id, w.scope)][-1] == "restored"
    # the others stay archived
    assert all(w.get(f.id).archived for f in facts[1:])


def test_review_band_is_reported(world):
    w = world("triple_copy")
    f = w.store(NEUTRAL[0])
    w.clock.advance(days=1.5)  # Ebbinghaus alone: R = exp(-1.5) = 0.22, between 0.1 and 0.3
    rep = w.mem.decay(w.scope)
    assert rep.stages["review"]["ids"] == [f.id]
    assert rep.stages["review"]["retrievability"][f.id] == pytest.approx(0.2231, abs=1e-3)
    assert not w.get(f.id).archived


def _stable_fact(w):
    """A well-learned fact (Ebbinghaus stability 30 days) next to a fresh one."""
    learned = w.store(NEUTRAL[0])
    fresh = w.store(NEUTRAL[1])
    w.set(learned.id, stability=30.0)
    return learned, fresh


def test_ebbinghaus_stability_keeps_a_learned_memory(world):
    def run(*off):
        w = world(*off, value_aware=False)
        learned, fresh = _stable_fact(w)
        w.clock.advance(days=40)
        rep = w.mem.decay(w.scope)
        return learned.id in rep.stages["archive"]["ids"], fresh.id in rep.stages["archive"]["ids"], rep

    learned_gone, fresh_gone, _rep = run()
    assert not learned_gone and fresh_gone  # exp(-40/30) = 0.26 keeps it in the review band
    learned_gone_off, fresh_gone_off, _ = run("ebbinghaus_decay")
    assert learned_gone_off and fresh_gone_off  # the TripleCopy medium copy alone has faded


def test_triple_copy_medium_copy_outlasts_the_ebbinghaus_curve(world):
    def run(*off):
        w = world(*off, value_aware=False)
        f = w.store(NEUTRAL[2])
        w.clock.advance(days=10)  # Ebbinghaus: exp(-10) ~ 0; medium copy 0.8 S0 exp(-10/14)
        rep = w.mem.decay(w.scope)
        return f, rep

    f, rep = run()
    assert f.id not in rep.stages["archive"]["ids"]
    assert rep.stages["retrievability"]["curves"] == ["ebbinghaus_decay", "triple_copy"]
    s0 = f.state[keys.COPIES]["s0"]
    assert f.id in rep.stages["review"]["ids"]
    assert rep.stages["review"]["retrievability"][f.id] == pytest.approx(0.8 * s0 * math.exp(-10 / 14), rel=1e-6)
    f_off, rep_off = run("triple_copy")
    assert f_off.id in rep_off.stages["archive"]["ids"]
    assert rep_off.stages["retrievability"]["curves"] == ["ebbinghaus_decay"]


def _stc_scene(w):
    """A weak memory and a strongly consolidated partner activated ten minutes later."""
    weak = w.store("Sam's birthday dinner is booked at the Italian place")
    w.clock.advance(minutes=10)
    donor = w.store("The Italian place on Mill Road does great risotto")
    # Known starting points, independent of encoding-time mechanisms.
    w.set(weak.id, strength=0.6, stability=1.0)
    w.set_state(weak.id, **{keys.COPIES: triple_copy.encode(s0=0.6, now=weak.last_access).to_dict()})
    w.set(donor.id, stability=365.0, strength=1.0)
    w.set_state(donor.id, **{keys.COPIES: triple_copy.encode(s0=1.0, now=donor.last_access,
                                                                  deep_target=1.0).to_dict()})
    w.put_edges([Edge(weak.id, donor.id, "related", 0.9, 1.0, 0, w.clock.now())])
    return weak, donor


def test_stc_rescues_a_fading_memory_before_it_is_archived(world):
    def run(*off):
        w = world(*off, value_aware=False)
        weak, donor = _stc_scene(w)
        w.clock.advance(days=5)  # weak: R = 0.48 exp(-5/14) = 0.34 < 0.4 (tagged), > 0.1 (not archived yet)
        first = w.mem.decay(w.scope)
        w.clock.advance(days=25)
        second = w.mem.decay(w.scope)
        return w, weak, donor, first, second

    w, weak, donor, first, second = run()
    rescue = first.stages["stc_rescue"]["rescues"][weak.id]
    assert rescue["donor"] == donor.id and rescue["via"] in ("edge", "both")
    old_r, new_r = rescue["retrievability"]
    assert old_r < 0.4 and new_r == pytest.approx(old_r + 0.3, abs=1e-6)
    assert rescue["stability"][1] > rescue["stability"][0]
    item = w.get(weak.id)
    assert item.state[keys.RESCUED] == 1 and item.state[RESCUED_AT] > 0
    assert "rescued" in [e.action for e in w.mem.history(weak.id, w.scope)]
    assert weak.id not in second.stages["archive"]["ids"] and not item.archived
    # a memory is rescued once per tag: no second rescue without a new access
    assert weak.id not in second.stages["stc_rescue"]["rescues"]

    w_off, weak_off, _, first_off, second_off = run("stc_rescue")
    assert first_off.stages["stc_rescue"] == {"skipped": "switched off"}
    assert weak_off.id in second_off.stages["archive"]["ids"] and w_off.get(weak_off.id).archived


def test_stc_needs_the_partner_inside_the_window(world):
    w = world()
    weak, donor = _stc_scene(w)
    w.set(donor.id, last_access=weak.last_access + 3 * 3600)  # 3 h apart: outside the 30 min window
    w.clock.advance(days=5)
    rep = w.mem.decay(w.scope)
    assert rep.stages["stc_rescue"]["rescued"] == 0


MORE_FACTS = ["Melanie painted a lake at sunrise in Oregon", "Caroline moved to Sweden in 2022 to study counseling",
              "The adoption agency in Portland approved the application"]
SMALL_TALK = ["So nice, thanks!", "That is so nice!", "Thanks, so nice!"]


def test_value_aware_forgetting_archives_small_talk_and_keeps_what_the_store_knows(world):
    """By default decay archives a faded memory only when it says little (fewer than six
    words said once in the store): after sixty days the small talk is archived, the facts
    stay, however faded. The paper's rule (0) archives both."""

    def run(value_aware):
        w = world(value_aware=value_aware)
        facts = [w.store(t) for t in NEUTRAL[:2] + MORE_FACTS]
        talk = [w.store(t) for t in SMALL_TALK]
        w.clock.advance(days=60)
        rep = w.mem.decay(w.scope)
        return w, facts, talk, rep

    w, facts, talk, rep = run(True)
    archived = set(rep.stages["archive"]["ids"])
    assert archived == {t.id for t in talk}
    assert rep.stages["archive"]["low_value"] == len(SMALL_TALK)
    assert all(not w.get(f.id).archived for f in facts)
    assert all(rep.stages["review"]["retrievability"][f.id] <= 0.1 for f in facts)  # faded, and kept
    _, facts_p, talk_p, rep_p = run(False)
    assert set(rep_p.stages["archive"]["ids"]) == {m.id for m in facts_p + talk_p}



UPDATE_NOTES = ["Priya moved to Lisbon", "Kenji joined Acme", "Amara drives a Volvo", "Lucas lives at No. 12"]
ABOUT_THE_SAME_PEOPLE = ["Priya had a long walk", "Kenji had a long walk", "Amara had a long lunch",
                         "Lucas had a long lunch", "Priya had lunch with Kenji", "Amara had a walk with Lucas"]


def test_value_aware_forgetting_spares_short_statements_that_name_something(world):
    """A short note naming a place, a firm or a number says few words said once in a store
    that mentions the same people every day, yet it is a fact: ``spare_named`` keeps it from
    being archived, while small talk (its sentence-initial words written in lower case
    elsewhere) is still archived. Without it the notes go with the small talk."""

    def run(spare):
        w = world(name=f"spare-{spare}", ebbinghaus=EbbinghausParams(spare_named=spare))
        notes = [w.store(t) for t in UPDATE_NOTES]
        for t in ABOUT_THE_SAME_PEOPLE:
            w.store(t)
            w.store(t + " again")
        talk = [w.store(t) for t in SMALL_TALK]
        w.clock.advance(days=60)
        archived = set(w.mem.decay(w.scope).stages["archive"]["ids"])
        return notes, talk, archived

    notes, talk, archived = run(True)
    assert {t.id for t in talk} <= archived
    assert not archived & {n.id for n in notes}
    notes, talk, archived = run(False)
    assert {t.id for t in talk} | {n.id for n in notes} <= archived


def test_names_something_tells_names_from_sentence_initial_words():
    texts = ["wow, that is great", "Bye for now, see you soon", "Melanie: Wow, thanks Caroline!",
             "Priya moved to Lisbon", "I had lunch with Priya. Aww, thanks!"]
    vocabulary = NameVocabulary.of(texts)
    known = {"caroline", "melanie"}
    assert names_something("Priya moved to Lisbon", vocabulary, known=known)
    assert names_something("I ran 5 miles", vocabulary, known=known)
    assert not names_something("Melanie: Wow, thanks Caroline!", vocabulary, known=known)
    assert not names_something("Aww! Bye, see you", vocabulary, known=known)
    # An address does not write a name in lower case; the possessive marks a noun anywhere.
    vocabulary = NameVocabulary.of(["Write to Clara at clara.novak@proton.me", "Sofia's usual drink is chai"])
    assert vocabulary.is_name("clara") and vocabulary.is_name("sofia")
    assert names_something("Sofia's usual drink is chai", vocabulary)


LONGER_FACTS = NEUTRAL[:2] + MORE_FACTS[:2] + [
    "Ada booked the dentist in Clifton for the second Tuesday of March",
    "The boiler in the cellar was serviced by Hughes and Sons last winter",
    "Bruno keeps the spare key to the allotment shed under the blue flowerpot",
]


def _live_with_recalls(w, talk_query: str, fact_query: str, days: int = 12):
    """Every day the agent looks up context with small talk and with a question, then the
    night's decay runs (the first decay saves the store's word frequencies)."""
    facts = [w.store(t) for t in LONGER_FACTS]
    talk = [w.store(t) for t in SMALL_TALK + ["Thanks so much!", "Aww, thanks!", "Thanks, that is sweet of you!"]]
    w.mem.decay(w.scope)
    talk_ids = {t.id for t in talk}
    found: set[str] = set()
    for _ in range(days):
        w.clock.advance(days=1)
        found |= {h.item.id for h in w.mem.recall(talk_query, w.scope, k=5)} & talk_ids
        w.mem.recall(fact_query, w.scope, k=1)
        w.mem.decay(w.scope)
    return facts, [t for t in talk if t.id in found]


def test_a_recall_rehearses_only_the_hits_it_carried_so_small_talk_fades(world):
    """"Thanks!" finds the other thanks every day, but shares a word that says less than
    one said once: no rehearsal, so the small talk fades and is archived. A question that
    shares the dentist's rare words rehearses that memory. With every hit rehearsed (the
    paper: ``rehearsal_min_words`` 0) the daily look-ups keep the small talk fresh and
    nothing they find is archived."""
    query, question = "Thanks!", "When is the dentist in Clifton?"
    w = world()
    facts, talk = _live_with_recalls(w, query, question)
    assert len(talk) >= 2 and all(w.get(t.id).archived for t in talk)
    assert all(w.get(t.id).access_count == 0 for t in talk)
    dentist = w.get(facts[4].id)
    assert dentist.access_count >= 12 and not dentist.archived
    assert all(not w.get(f.id).archived for f in facts)

    w0 = world(name="every-hit", ebbinghaus=EbbinghausParams(rehearsal_min_words=0.0))
    _, talk0 = _live_with_recalls(w0, query, question)
    assert len(talk0) >= 2 and not any(w0.get(t.id).archived for t in talk0)
    assert max(w0.get(t.id).access_count for t in talk0) >= 12


def test_recall_rehearses_every_hit_without_value_aware_forgetting(world):
    """``ebbinghaus_decay`` off: every hit is rehearsed (the frequencies are still saved
    while TripleCopy decays)."""
    w = world("ebbinghaus_decay")
    _, talk = _live_with_recalls(w, "Thanks!", "When is the dentist in Clifton?", days=3)
    assert w.kv(KV_INFORMATION)["n"] >= len(LONGER_FACTS) + len(SMALL_TALK)
    assert max(w.get(t.id).access_count for t in talk) >= 3


def test_recall_reads_the_frequencies_of_the_last_decay(world):
    """The saved frequencies are decoded once per decay and replaced by the next one."""
    from zenbrain.pipeline.recall_effects import saved_reference

    w = world()
    assert saved_reference(w.mem.engine, w.part) is None
    for t in LONGER_FACTS[:3]:
        w.store(t)
    w.mem.decay(w.scope)
    first = saved_reference(w.mem.engine, w.part)
    assert first is not None and first.n == 3 and saved_reference(w.mem.engine, w.part) is first
    w.store(LONGER_FACTS[3])
    w.mem.decay(w.scope)  # same clock time, one memory more
    assert saved_reference(w.mem.engine, w.part).n == 4


def _archive_all(w):
    """Sixty days without use under the paper's archive rule: everything is archived."""
    mems = [w.store(t) for t in NEUTRAL[:2] + MORE_FACTS + SMALL_TALK]
    w.clock.advance(days=60)
    w.mem.decay(w.scope)
    assert all(w.get(m.id).archived for m in mems)
    return mems


def test_a_specific_cue_recalls_an_archived_memory_and_its_use_restores_it(world):
    """Cue-dependent forgetting: ordinary recall no longer finds archived memories, but a
    query sharing a memory's specific words (at least one word said once) does; small talk
    finding small talk is no such cue. The use that follows lets the next decay restore it."""
    w = world(ebbinghaus=EbbinghausParams(low_information_words=0.0))
    mems = _archive_all(w)
    oregon = mems[2]
    hits = w.mem.recall("Who painted a lake in Oregon?", w.scope, k=3)
    assert [h.item.id for h in hits][:1] == [oregon.id]
    assert not w.mem.recall("Thanks!", w.scope, k=3)  # shares only what small talk says
    w.clock.advance(days=1)
    rep = w.mem.decay(w.scope)
    assert oregon.id in rep.stages["restore"]["ids"] and not w.get(oregon.id).archived


def test_without_the_cue_archived_memories_stay_out_of_recall(world):
    """``archive_cue_words`` 0 (the paper): archived memories come back only when asked for."""
    w = world(ebbinghaus=EbbinghausParams(low_information_words=0.0, archive_cue_words=0.0))
    mems = _archive_all(w)
    assert not w.mem.recall("Who painted a lake in Oregon?", w.scope, k=3)
    hits = w.mem.recall("Who painted a lake in Oregon?", w.scope, k=3, include_archived=True)
    assert hits[0].item.id == mems[2].id


# ---------------------------------------------------------------- a night reads what is new
def _saved(w):
    from zenbrain.mechanisms.information import InformationReference

    ref = InformationReference.from_dict(w.kv(KV_INFORMATION))
    voc = w.kv(keys.KV_NAME_VOCABULARY)
    return ref, None if voc is None else NameVocabulary.from_dict(voc)


def _recounted(w):
    """The frequencies and the vocabulary counted afresh over every long-term memory."""
    from zenbrain.mechanisms.information import InformationReference
    from zenbrain.pipeline.lifecycle.common import load
    from zenbrain.text import token_set

    items = load(w.mem.engine, w.part, include_archived=True)
    return (InformationReference.of([token_set(m.content) for m in items]),
            NameVocabulary.of(m.content for m in items))


def _count_token_sets(monkeypatch):
    from zenbrain.pipeline.lifecycle import decay as decay_module

    calls = []
    real = decay_module.token_set

    def counted(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(decay_module, "token_set", counted)
    return calls


@pytest.mark.parametrize("gap_minutes", [1, 0])
def test_a_night_reads_the_words_only_of_the_memories_stored_since_the_last(world, monkeypatch, gap_minutes):
    """Decay's word frequencies and name vocabulary describe the whole partition, but a night
    reads the words of the memories stored since the last one (and of those whose value it
    tests, none of them the next morning): the saved records are taken up and come out as a
    full count would make them. A memory created at the very time the last decay saved its
    counts (``gap_minutes`` 0: stored right after it on the same clock, or made by a sleep
    that followed it) was not counted, and is read as new."""
    w = world()
    old = [w.store(t) for t in LONGER_FACTS + SMALL_TALK]
    w.clock.advance(hours=2)
    w.mem.decay(w.scope)
    w.clock.advance(minutes=gap_minutes)
    new = [w.store(t) for t in UPDATE_NOTES + ABOUT_THE_SAME_PEOPLE]
    w.clock.advance(hours=2)
    calls = _count_token_sets(monkeypatch)
    w.mem.decay(w.scope)
    assert sorted(calls) == sorted(m.content for m in new)
    ref, voc = _saved(w)
    full_ref, _ = _recounted(w)
    assert (ref.n, dict(ref.df)) == (full_ref.n, dict(full_ref.df)) == (len(old + new), dict(full_ref.df))
    assert voc is None  # no memory's value was tested: no vocabulary was needed
    calls.clear()
    w.clock.advance(hours=2)
    w.mem.decay(w.scope)  # nothing new: nothing read, nothing written again
    assert calls == [] and _saved(w)[0].n == len(old + new)


def test_a_night_that_takes_up_the_saved_counts_decides_as_a_full_count(world):
    """Sixty days on, with the first night's records taken up or removed (a full count): the
    same memories are archived and the same records saved."""

    def live(incremental):
        w = world(name=f"incremental-{incremental}")
        for t in LONGER_FACTS + SMALL_TALK:
            w.store(t)
        w.clock.advance(days=1)
        w.mem.decay(w.scope)
        w.clock.advance(minutes=1)
        for t in UPDATE_NOTES + ABOUT_THE_SAME_PEOPLE:
            w.store(t)
        w.clock.advance(days=60)
        if not incremental:
            w.kv_put(keys.KV_INFORMATION_VERSION, None)
        rep = w.mem.decay(w.scope)
        ref, voc = _saved(w)
        return {w.get(i).content for i in rep.stages["archive"]["ids"]}, dict(ref.df), voc, _recounted(w)

    archived, df, voc, (full_ref, full_voc) = live(True)
    assert set(SMALL_TALK) <= archived and not archived & set(UPDATE_NOTES)
    assert df == dict(full_ref.df) and voc == full_voc
    assert (archived, df, voc) == live(False)[:3]


def test_an_edit_or_an_erasure_makes_the_next_night_count_afresh(world, monkeypatch):
    """Saved counts cannot take an edited memory's old words out, nor the vocabulary an
    erased memory's words: an edit sends the next night back to a full count, and an
    erasure removes the vocabulary at once (the frequencies lose the erased words)."""
    w = world()
    mems = [w.store(t) for t in LONGER_FACTS + UPDATE_NOTES]
    w.clock.advance(days=60)
    w.mem.decay(w.scope)
    assert "no" in _saved(w)[1].capitalised_inside and "lucas" in _saved(w)[0].df  # from "Lucas lives at No. 12"
    w.mem.update(mems[0].id, w.scope, content="The library in Bristol opens at ten")
    w.clock.advance(days=1)
    calls = _count_token_sets(monkeypatch)
    w.mem.decay(w.scope)
    assert len(calls) >= len(mems)  # every memory counted again
    ref, voc = _saved(w)
    full_ref, full_voc = _recounted(w)
    assert dict(ref.df) == dict(full_ref.df) and ref.df.get("elm") is None and voc == full_voc

    w.mem.forget(mems[-1].id, w.scope)  # "Lucas lives at No. 12"
    assert w.kv(keys.KV_NAME_VOCABULARY) is None
    assert "lucas" not in w.kv(KV_INFORMATION)["df"]
    w.clock.advance(days=1)
    calls.clear()
    w.mem.decay(w.scope)
    assert len(calls) >= len(mems) - 1
    ref, voc = _saved(w)
    full_ref, full_voc = _recounted(w)
    assert dict(ref.df) == dict(full_ref.df) and (voc is None or voc == full_voc)


def test_an_archived_turn_comes_back_with_the_turn_it_surrounds(world):
    """An archived turn is out of reach of a general cue, but a recall that reaches a turn of
    its session next to it brings it back as that turn's neighbour: what was said around a
    recalled moment. An archived turn next to nothing the recall reached stays out."""
    w = world()
    chat = ["Caroline: What got you into pottery?", "Melanie: My friend got me into it last spring.",
            "Caroline: That sounds lovely."]
    turns = w.mem.store_many([{"content": t, "layer": "episodic"} for t in chat], Scope("alice", session_id="s1"))
    alone = w.mem.store_many([{"content": "Caroline: That sounds lovely.", "layer": "episodic"}],
                             Scope("alice", session_id="s2"))[0]
    for t in LONGER_FACTS:
        w.store(t)
    w.clock.advance(days=1)
    w.mem.decay(w.scope)  # the frequencies recall's cue is priced with
    for m in (turns[2], alone):
        w.set(m.id, archived=True)
    hits = w.mem.recall("pottery", w.scope, k=10, touch=False)
    found = [h.id for h in hits]
    assert turns[1].id in found and turns[2].id in found
    assert alone.id not in found


def test_the_full_count_by_chunks_is_the_count_of_every_memory_at_once():
    texts = [f"memory {k} says {'something new' if k % 3 else 'the same old thing'} about topic {k % 7}"
             for k in range(53)]
    items = [type("Row", (), {"content": t})() for t in texts]
    at = np.array([0, 4, 9, 10, 31, 52])
    whole = InformationReference.of([token_set(t) for t in texts])
    at_once = information_words([token_set(texts[j]) for j in at.tolist()], whole) < 1.75
    for chunk in (1, 5, 10, 53, 100):
        ref = _count_all(items, chunk=chunk)
        assert ref.n == whole.n
        assert list(ref.df.items()) == list(whole.df.items())  # the same counts in the same order
        assert _says_little(items, at, whole, 1.75, chunk=chunk).tolist() == at_once.tolist()
