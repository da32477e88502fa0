"""Notes about a subject the query names are compared by what they say beyond the name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zenbrain import Scope, open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.config import Config
from zenbrain.providers.hashing import HashingEmbedder

A = Scope("a")
NOTES = ["Anouk Berg phoned", "Anouk Berg has become a keen rooibos drinker",
         "Anouk Berg sent photos of the weekend", "Mira Lind drinks coffee"]
QUESTION = "What is Anouk Berg drinking?"


def _recall(tmp_path, focus: float, speaker: str | None = None):
    cfg = Config()
    cfg = replace(cfg, recall=replace(cfg.recall, subject_focus=focus))
    clock = SimulatedClock(1_700_000_000.0)
    mem = open_memory(tmp_path / f"m{focus}{speaker}.db", embedder=HashingEmbedder(384), clock=clock, config=cfg)
    for text in NOTES:
        mem.store(text, A, layer="semantic", metadata={"speaker": speaker} if speaker else None)
        clock.advance(days=1)
    hits = mem.recall(QUESTION, A, k=4, touch=False)
    mem.close()
    return hits


def test_a_note_that_shares_only_the_name_no_longer_outranks_one_about_the_question(tmp_path):
    on = _recall(tmp_path, 1.0)
    off = _recall(tmp_path, 0.0)
    assert off[0].item.content == "Anouk Berg phoned"  # the name alone wins without the focus
    assert on[0].item.content == "Anouk Berg has become a keen rooibos drinker"
    assert on[0].why.other["subject_focus"] > 1.0
    assert all("subject_focus" not in h.why.other for h in off)


def test_conversation_turns_keep_their_ranking(tmp_path):
    """A turn may speak of its subject as "I" or "you": the name is no sign of what it is about."""
    on = _recall(tmp_path, 1.0, speaker="Anouk Berg")
    off = _recall(tmp_path, 0.0, speaker="Anouk Berg")
    assert [h.item.id for h in on] != [] and [h.item.content for h in on] == [h.item.content for h in off]
    assert all("subject_focus" not in h.why.other for h in on)


@pytest.mark.parametrize("bad", [-0.1, 10.5])
def test_the_weight_is_bounded(bad):
    from zenbrain.errors import ConfigError
    with pytest.raises(ConfigError):
        cfg = Config()
        replace(cfg, recall=replace(cfg.recall, subject_focus=bad))
