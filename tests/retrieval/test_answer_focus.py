"""A question that says what shape its answer has prefers the subject's notes holding one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zenbrain import Scope, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.text import answer_shape

A = Scope("a")


@pytest.mark.parametrize(("question", "text", "holds"), [
    ("Who does Lucia report to?", "Lucia has a new manager, Samir Fischer.", True),
    ("Who does Lucia report to?", "Talked with Lucia about the football match.", False),
    ("Who does Lucia report to?", "Lucia said the coffee is bad.", False),  # the name it asks about
    ("Whose car did Jakob borrow?", "Jakob borrowed the car of Anna Berg.", True),
    ("What is Ingrid's email address?", "Write to Ingrid at tobias.fischer62@mailbox.org.", True),
    ("What is Ingrid's email address?", "You can reach Ingrid on +1 555 839 7546.", False),
    ("What is Ines's phone number?", "You can reach Ines on +1 555 123 9939.", True),
    ("What is Ines's phone number?", "Ines moved to flat 12.", False),
])
def test_the_shape_of_an_answer(question, text, holds):
    shape = answer_shape(question)
    assert shape is not None
    asked = {w.lower() for w in question.replace("'s", " ").split() if w[:1].isupper()}
    assert shape(text, asked) is holds


def test_a_question_without_a_shape_has_none():
    assert answer_shape("What does Rosa like to drink these days?") is None
    assert answer_shape("When did Caroline go to the support group?") is None
    assert answer_shape("Where does Alice work?") is None  # "at the bakery" answers it as well as a name


NOTES = ["Ingrid is living in a new flat", "Write to Ingrid at tobias.fischer62@mailbox.org",
         "Mira Lind drinks coffee"]


def _recall(tmp_path, keep: float):
    cfg = Config()
    cfg = replace(cfg, recall=replace(cfg.recall, answer_shape_weight=keep))
    clock = SimulatedClock(1_700_000_000.0)
    mem = open_memory(tmp_path / f"m{keep}.db", embedder=HashingEmbedder(384), clock=clock, config=cfg)
    for text in NOTES:
        mem.store(text, A, layer="semantic")
        clock.advance(days=1)
    hits = mem.recall("What is Ingrid's email address?", A, k=3, touch=False)
    mem.close()
    return hits


def test_the_note_holding_an_answer_outranks_one_that_only_shares_words(tmp_path):
    on, off = _recall(tmp_path, 0.5), _recall(tmp_path, 1.0)
    assert off[0].item.content == NOTES[0]  # the question's words win without the cue
    assert on[0].item.content == NOTES[1]
    assert [h.why.other.get("answer_shape") for h in on if h.item.content == NOTES[0]] == [0.5]
    assert all("answer_shape" not in h.why.other for h in off)


def test_conversation_turns_keep_their_ranking(tmp_path):
    """A turn has a speaker: its words may answer in a later turn, so its shape says nothing."""
    clock = SimulatedClock(1_700_000_000.0)
    mem = open_memory(tmp_path / "turns.db", embedder=HashingEmbedder(384), clock=clock)
    for text in NOTES:
        mem.store(text, A, layer="semantic", metadata={"speaker": "Ingrid"})
        clock.advance(days=1)
    hits = mem.recall("What is Ingrid's email address?", A, k=3, touch=False)
    mem.close()
    assert hits[0].item.content == NOTES[0] and all("answer_shape" not in h.why.other for h in hits)
