"""Facts that change: a later statement supersedes an earlier one, which is kept with the
time it stopped holding; recall answers with current facts unless asked for another time."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from core_helpers import DIM, TableEmbedder

from zenbrain import Scope, ValidationError, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0
DAY = 86_400.0
ALICE, BOB = Scope("alice"), Scope("bob")
OLD, NEW = "Alice works at Acme as a software engineer", "Alice works at Globex as a software engineer"


@pytest.fixture
def clock():
    return SimulatedClock(T0)


def _open(tmp_path, clock, name="m", config=None):
    return open_memory(tmp_path / f"{name}.db", embedder=HashingEmbedder(384), clock=clock, config=config)


def _texts(hits):
    return [h.item.content for h in hits]


def test_a_changed_fact_supersedes_the_earlier_one_which_stays_in_the_past(tmp_path, clock):
    mem = _open(tmp_path, clock)
    old = mem.store(OLD, ALICE, layer="semantic")
    clock.advance(days=30)
    new = mem.store(NEW, ALICE, layer="semantic")
    kept = mem.get(old.id, ALICE)
    assert kept.superseded_by == new.id and kept.valid_until == pytest.approx(T0 + 30 * DAY)
    assert mem.get(new.id, ALICE).valid_until is None
    assert _texts(mem.recall("where does Alice work", ALICE, k=3, touch=False)) == [NEW]
    assert _texts(mem.recall("where does Alice work", ALICE, k=3, touch=False, as_of=T0 + DAY)) == [OLD]
    both = _texts(mem.recall("where does Alice work", ALICE, k=3, touch=False, include_superseded=True))
    assert set(both) == {OLD, NEW}
    actions = [(e.action, e.detail.get("by")) for e in mem.history(old.id, ALICE)]
    assert ("superseded", new.id) in actions


def test_without_imad_a_conflict_supersedes_nothing(tmp_path, clock):
    mem = _open(tmp_path, clock, config=Config().without("imad_debate"))
    old = mem.store(OLD, ALICE, layer="semantic")
    clock.advance(days=30)
    mem.store(NEW, ALICE, layer="semantic")
    assert mem.get(old.id, ALICE).valid_until is None
    assert set(_texts(mem.recall("where does Alice work", ALICE, k=3, touch=False))) == {OLD, NEW}


def test_statements_differing_in_two_places_speak_of_different_things(tmp_path, clock):
    mem = _open(tmp_path, clock)
    a = mem.store("room 12 is on floor 3 of the north wing", ALICE, layer="semantic")
    clock.advance(days=3)
    mem.store("room 14 is on floor 2 of the north wing", ALICE, layer="semantic")
    assert mem.get(a.id, ALICE).valid_until is None


def test_a_statement_of_another_relation_supersedes_nothing(tmp_path, clock):
    """"lives with her sister" says whom Alice lives with, not where: Berlin stays current."""
    mem = _open(tmp_path, clock)
    berlin = mem.store("Alice lives in Berlin", ALICE, layer="semantic")
    clock.advance(days=3)
    mem.store("Alice lives with her sister Carol", ALICE, layer="semantic")
    assert mem.get(berlin.id, ALICE).valid_until is None
    assert "Alice lives in Berlin" in _texts(mem.recall("where does Alice live", ALICE, k=3, touch=False))


def test_a_fact_told_later_about_an_earlier_time_ends_where_the_stored_one_begins(tmp_path, clock):
    mem = _open(tmp_path, clock)
    current = mem.store(NEW, ALICE, layer="semantic", event_time=T0 - 10 * DAY)
    clock.advance(days=5)
    told_late = mem.store(OLD, ALICE, layer="semantic", event_time=T0 - 400 * DAY)
    assert mem.get(current.id, ALICE).valid_until is None
    late = mem.get(told_late.id, ALICE)
    assert late.superseded_by == current.id and late.valid_until == pytest.approx(T0 - 10 * DAY)
    assert _texts(mem.recall("where does Alice work", ALICE, k=3, touch=False)) == [NEW]
    assert _texts(mem.recall("where does Alice work", ALICE, k=3, touch=False, as_of=T0 - 100 * DAY)) == [OLD]


def test_an_explicit_supersedes_retires_the_named_memory(tmp_path, clock):
    mem = _open(tmp_path, clock)
    old = mem.store("the team meets on Mondays", ALICE)
    clock.advance(days=1)
    new = mem.store("the standup moved to Thursday mornings", ALICE, supersedes=old.id)
    assert mem.get(old.id, ALICE).superseded_by == new.id
    assert _texts(mem.recall("when does the team meet", ALICE, k=5, touch=False)) == [new.content]


def test_a_bad_supersedes_is_refused_and_changes_nothing(tmp_path, clock):
    mem = _open(tmp_path, clock)
    bobs = mem.store("Bob lives in Oslo", BOB)
    before = len(mem.list_memories(ALICE))
    with pytest.raises(ValidationError, match="no memory"):  # another user's memory is not there for alice
        mem.store("Alice lives in Rome", ALICE, supersedes=bobs.id)
    with pytest.raises(ValidationError):
        mem.store("Alice lives in Rome", ALICE, supersedes=[])
    old = mem.store("Alice lives in Paris", ALICE, event_time=T0)
    with pytest.raises(ValidationError, match="earlier"):
        mem.store("Alice lived in Lyon", ALICE, supersedes=old.id, event_time=T0 - DAY)
    assert len(mem.list_memories(ALICE)) == before + 1
    assert mem.get(bobs.id, BOB).valid_until is None and mem.get(old.id, ALICE).valid_until is None


def test_export_and_import_keep_what_superseded_what(tmp_path, clock):
    src = _open(tmp_path, clock, "src")
    src.store(OLD, ALICE, layer="semantic")
    clock.advance(days=30)
    src.store(NEW, ALICE, layer="semantic")
    lines = [json.loads(json.dumps(x)) for x in src.export_memories(ALICE)]
    dst = _open(tmp_path, clock, "dst")
    dst.import_memories(lines, ALICE, new_ids=True)
    items = {i.content: i for i in dst.list_memories(ALICE, include_archived=True)}
    assert items[OLD].superseded_by == items[NEW].id and items[OLD].valid_until == pytest.approx(T0 + 30 * DAY)
    assert _texts(dst.recall("where does Alice work", ALICE, k=3, touch=False)) == [NEW]


def test_a_query_naming_the_old_version_still_finds_it(tmp_path, clock):
    """A detected change hides the old fact from current recall, except from a query that
    names what only the old one says ("note number 7" is no stale "note number 8")."""
    mem = _open(tmp_path, clock)
    old = mem.store(OLD, ALICE, layer="semantic")
    clock.advance(days=30)
    mem.store(NEW, ALICE, layer="semantic")
    hits = mem.recall("did Alice work at Acme", ALICE, k=3, touch=False)
    assert OLD in _texts(hits)
    assert next(h for h in hits if h.item.id == old.id).why.other["superseded"] == 1.0


KENJI_OLD = "Kenji orders chai with his lunch at the office"
KENJI_NEW = "Kenji orders lemon water with lunch at the office"
KENJI_ASKS = "what does Kenji order with his lunch at the office"


def _kenji(tmp_path, clock, config=None, new_layer="semantic"):
    mem = _open(tmp_path, clock, config=config)
    old = mem.store(KENJI_OLD, ALICE, layer="semantic")
    mem.store("Kenji went hiking in the hills on Sunday", ALICE, layer="semantic")
    clock.advance(days=20)
    new = mem.store(KENJI_NEW, ALICE, layer=new_layer)
    mem.store("Kenji lent his bike to a neighbour", ALICE, layer="semantic")
    # No conflict cue (no value word changed after a one-value predicate): store time sees no change.
    assert mem.get(old.id, ALICE).superseded_by is None and mem.get(new.id, ALICE).superseded_by is None
    return mem


def test_recall_puts_the_newest_version_of_a_fact_first(tmp_path, clock):
    mem = _kenji(tmp_path, clock)
    hits = mem.recall(KENJI_ASKS, ALICE, k=4, touch=False)
    assert _texts(hits)[:2] == [KENJI_NEW, KENJI_OLD]
    assert hits[0].why.other["version_order"] > 0 > hits[1].why.other["version_order"]
    # A question about the earliest, or about a past time, is not about the current version.
    assert _texts(mem.recall("what did Kenji first order with his lunch at the office", ALICE, k=4,
                             touch=False))[0] == KENJI_OLD
    assert _texts(mem.recall(KENJI_ASKS, ALICE, k=4, touch=False, as_of=T0 + DAY))[0] == KENJI_OLD


def test_without_imad_the_better_match_of_two_versions_stays_first(tmp_path, clock):
    mem = _kenji(tmp_path, clock, config=Config().without("imad_debate"))
    hits = mem.recall(KENJI_ASKS, ALICE, k=4, touch=False)
    assert _texts(hits)[:2] == [KENJI_OLD, KENJI_NEW]
    assert all("version_order" not in h.why.other for h in hits)


def test_keywords_of_a_note_about_someone_else_weigh_little(tmp_path, clock):
    def first(config=None):
        mem = _open(tmp_path, clock, name=f"n{id(config)}", config=config)
        mem.store("These days Sofia is hooked on kayaking", ALICE, layer="semantic")
        mem.store("Rosa drinks green tea", ALICE, layer="semantic")
        mem.store("Rosa sent photos from the weekend", ALICE, layer="semantic")
        hits = mem.recall("What does Rosa like to drink these days?", ALICE, k=3, touch=False)
        mem.close()
        return _texts(hits)[0]

    assert first() == "Rosa drinks green tea"
    cfg = Config()
    off = replace(cfg, recall=replace(cfg.recall, foreign_lexical_weight=1.0))
    assert first(off) == "These days Sofia is hooked on kayaking"


def test_turns_of_a_conversation_are_no_versions_of_each_other(tmp_path, clock):
    mem = _open(tmp_path, clock)
    mem.store(KENJI_OLD, ALICE, layer="semantic", metadata={"speaker": "Mira"})
    mem.store("Kenji went hiking in the hills on Sunday", ALICE, layer="semantic", metadata={"speaker": "Mira"})
    clock.advance(days=20)
    mem.store(KENJI_NEW, ALICE, layer="semantic", metadata={"speaker": "Mira"})
    mem.store("Kenji lent his bike to a neighbour", ALICE, layer="semantic", metadata={"speaker": "Mira"})
    assert _texts(mem.recall(KENJI_ASKS, ALICE, k=4, touch=False))[:2] == [KENJI_OLD, KENJI_NEW]


def test_an_event_note_can_be_the_newest_version(tmp_path, clock):
    """ "Kenji sold the bike and bought a car" is an event (episodic) and still the change."""
    mem = _kenji(tmp_path, clock, new_layer="episodic")
    hits = mem.recall(KENJI_ASKS, ALICE, k=4, touch=False)
    assert _texts(hits)[:2] == [KENJI_NEW, KENJI_OLD]
    assert hits[0].item.layer.value == "episodic"


ROSA_OLD, ROSA_NEW = "Rosa always orders a cortado at the corner cafe", "Rosa switched to chai"


def _rosa(tmp_path, clock, config=None, old_layer="semantic"):
    mem = _open(tmp_path, clock, config=config)
    old = mem.store(ROSA_OLD, ALICE, layer=old_layer)
    mem.store("Rosa sent photos from the weekend", ALICE, layer="semantic")
    clock.advance(days=20)
    mem.store(ROSA_NEW, ALICE, layer="semantic", supersedes=old.id)
    return mem


def test_a_superseded_match_hands_its_place_to_the_current_version(tmp_path, clock):
    """The question matches the old wording; the answer is what replaced it."""
    mem = _rosa(tmp_path, clock)
    hits = mem.recall("what does Rosa order at the corner cafe", ALICE, k=3, touch=False)
    assert _texts(hits)[0] == ROSA_NEW and hits[0].why.other["succeeds"] == 1.0
    assert ROSA_OLD not in _texts(hits)
    cfg = Config()
    off = _rosa(tmp_path / "off", clock, config=replace(cfg, recall=replace(cfg.recall, current_inherits=False)))
    assert _texts(off.recall("what does Rosa order at the corner cafe", ALICE, k=3, touch=False))[0] != ROSA_NEW


def test_a_superseded_match_hands_its_place_to_the_end_of_a_long_chain(tmp_path, clock):
    """Cortado, then chai, then matcha, then rooibos: the question matches the first wording,
    the answer is the last version, however many steps lie between - also when the versions
    in between are not among the candidates (here: outside the layers asked for)."""
    mem = _open(tmp_path, clock)
    prev = mem.store(ROSA_OLD, ALICE, layer="semantic")
    mem.store("Rosa sent photos from the weekend", ALICE, layer="semantic")
    for text, layer in (("Rosa switched to chai", "episodic"), ("Rosa now has matcha instead", "episodic"),
                        ("These days Rosa only takes rooibos", "semantic")):
        clock.advance(days=20)
        prev = mem.store(text, ALICE, layer=layer, supersedes=prev.id)
    question = "what does Rosa order at the corner cafe"
    hits = mem.recall(question, ALICE, k=3, touch=False, layers=["semantic"])
    assert _texts(hits)[0] == "These days Rosa only takes rooibos" and hits[0].why.other["succeeds"] == 1.0
    assert ROSA_OLD not in _texts(hits)


def test_the_current_version_is_handed_a_place_only_inside_the_recalls_filter(tmp_path, clock):
    mem = _rosa(tmp_path, clock, old_layer="episodic")
    assert _texts(mem.recall("what does Rosa order at the corner cafe", ALICE, k=3, touch=False))[0] == ROSA_NEW
    hits = mem.recall("what does Rosa order at the corner cafe", ALICE, k=3, touch=False, layers=["episodic"])
    assert ROSA_NEW not in _texts(hits) and ROSA_OLD not in _texts(hits)


def _bruno_chains(tmp_path, clock, *, americano, ljubljana):
    """Bruno's drink and Bruno's flat, each changed later (``supersedes``); the vectors of the
    two old statements are the test's to choose. Returns the hits of the drink question."""
    e = np.eye(DIM)
    name, drink, flat, change, photos = e[0], e[1], e[2], e[3], e[4]
    emb = TableEmbedder([("drink?", name + drink), ("americano", americano), ("Ljubljana", ljubljana),
                         ("rooibos", name + change + 0.2 * drink), ("Cardiff", name + change + 0.2 * flat),
                         ("photos", name + photos)])
    mem = open_memory(tmp_path / "chains.db", embedder=emb, clock=clock)
    drink_then = mem.store("Bruno's usual drink is iced americano", ALICE, layer="semantic")
    flat_then = mem.store("Bruno rents a flat in Ljubljana", ALICE, layer="semantic")
    mem.store("Bruno sent photos of the weekend", ALICE, layer="semantic")
    clock.advance(days=10)
    mem.store("Bruno switched to rooibos", ALICE, layer="semantic", supersedes=drink_then.id)
    clock.advance(days=10)
    mem.store("Bruno moved to Cardiff", ALICE, layer="semantic", supersedes=flat_then.id)
    return mem.recall("What is Bruno's usual drink?", ALICE, k=3, touch=False)


def test_the_newest_versions_of_two_known_chains_are_two_facts(tmp_path, clock):
    """Bruno's drink and Bruno's flat changed separately: the later change of the flat must not
    be taken for a newer version of the drink, however alike the two statements of change."""
    e = np.eye(DIM)
    name, drink, flat = e[0], e[1], e[2]
    hits = _bruno_chains(tmp_path, clock, americano=name + drink, ljubljana=name + 0.6 * drink + flat)
    assert _texts(hits)[:2] == ["Bruno switched to rooibos", "Bruno moved to Cardiff"]
    assert all("version_order" not in h.why.other for h in hits)


def test_a_chains_newest_version_that_outscored_what_it_replaced_is_still_its_own_fact(tmp_path, clock):
    """As above, but the flat's old statement matches the question less than the move to
    Cardiff does, so the move keeps its own score and inherits nothing: it is still the
    newest version of another chain, and must not take the drink's place."""
    e = np.eye(DIM)
    name, drink, flat, other = e[0], e[1], e[2], e[5]
    hits = _bruno_chains(tmp_path, clock, americano=name + drink + 0.7 * other, ljubljana=name + 1.2 * flat)
    cardiff = next(h for h in hits if h.item.content == "Bruno moved to Cardiff")
    assert "succeeds" not in cardiff.why.other  # it kept its own score
    assert _texts(hits)[0] == "Bruno switched to rooibos"
    assert all("version_order" not in h.why.other for h in hits)


LANTERN_OLD = "Project Lantern is run by Ravi Petrov"
LANTERN_NEW = "Ravi Petrov handed Project Lantern over to Pavel Rahman"


@pytest.fixture(scope="module")
def minilm():
    from zenbrain.providers.factory import make_embedder

    return make_embedder("minilm-onnx")


def test_two_notes_alone_about_a_subject_are_compared_without_its_name(tmp_path, clock, minilm):
    """With only two notes about the subject, their residuals after their own mean are
    opposite whatever they say; without the asked name's direction (real MiniLM vectors)
    they show one fact."""

    def _open(tmp_path, clock, name="m"):
        return open_memory(tmp_path / f"{name}.db", embedder=minilm, clock=clock)

    mem = _open(tmp_path, clock)
    mem.store(LANTERN_OLD, ALICE, layer="semantic")
    mem.store("Project Comet is run by Leila Haddad", ALICE, layer="semantic")
    clock.advance(days=30)
    mem.store(LANTERN_NEW, ALICE, layer="semantic")
    mem.store("Chloe Okafor leads Project Ember", ALICE, layer="semantic")
    hits = mem.recall("Who is in charge of Project Lantern?", ALICE, k=4, touch=False)
    assert _texts(hits)[:2] == [LANTERN_NEW, LANTERN_OLD]
    assert hits[0].why.other["version_order"] > 0
    # Two notes about a subject that say different things stay as they ranked.
    other = _open(tmp_path, clock, name="other")
    other.store(LANTERN_OLD, ALICE, layer="semantic")
    clock.advance(days=30)
    other.store("Project Lantern ships its first release in spring", ALICE, layer="semantic")
    assert all("version_order" not in h.why.other
               for h in other.recall("Who runs Project Lantern?", ALICE, k=4, touch=False))
