"""Global workspace: budget never exceeded, proportional shares, hysteresis, reasons."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ValidationError
from zenbrain.pma.workspace import (
    Bid,
    WorkspaceParams,
    WorkspaceState,
    assemble,
    estimate_tokens,
)

T0 = 1_700_000_000.0
FAST = settings(derandomize=True, max_examples=80, deadline=None)


def test_token_estimate_is_chars_over_four():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


def test_simple_assembly_text_and_order():
    bids = [
        Bid("core", 0.1, ("Name: Ada",), always=True, title="Core facts"),
        Bid("episodic", 0.9, ("Met Bob on Monday",)),
        Bid("semantic", 0.5, ("Bob is a chemist",)),
        Bid("curiosity", 0.05, ("Ask about Bob's lab",)),
    ]
    ws = assemble(bids, budget_tokens=1000, now=T0)
    assert ws.text == (
        "## Core facts\n- Name: Ada\n\n## episodic\n- Met Bob on Monday\n\n## semantic\n- Bob is a chemist"
    )
    assert ws.winners == ("core", "episodic", "semantic")
    assert ws.tokens == math.ceil(len(ws.text) / 4)
    why = {s.module: s.reason for s in ws.selections}
    assert "below 0.20" in why["curiosity"]
    assert why["core"].startswith("always included")
    assert ws.state.winners == ("episodic", "semantic")  # always-modules need no hysteresis


def test_fallback_admits_min_winners_and_max_winners_caps():
    bids = [Bid(f"m{i}", 0.05 * i, (f"item {i}",)) for i in range(1, 4)]  # all below 0.2
    ws = assemble(bids, budget_tokens=500, now=T0)
    assert ws.winners == ("m3", "m2")
    bids = [Bid(f"m{i}", 0.3 + 0.05 * i, (f"item {i}",)) for i in range(6)]
    ws = assemble(bids, budget_tokens=500, now=T0)
    assert ws.winners == ("m5", "m4", "m3", "m2")
    assert "outside the top 4" in {s.module: s.reason for s in ws.selections}["m1"]


def test_proportional_shares():
    # 100 tokens = 400 chars; two modules with salience 0.75 / 0.25 offering many 18-char items
    a = Bid("a", 0.75, tuple(f"a-item-{i:02d}-xxxxxx" for i in range(40)))
    b = Bid("b", 0.25, tuple(f"b-item-{i:02d}-xxxxxx" for i in range(40)))
    p = WorkspaceParams(min_winners=0)
    ws = assemble([a, b], budget_tokens=100, now=T0, params=p)
    n = {s.module: s.items_used for s in ws.selections}
    # each item costs "\n- " + 16 chars = 19. a's share is 300 chars: "## a" (4) + 15 * 19 = 289.
    # b's share is 100 chars: "\n\n" (2) + "## b" (4) + 4 * 19 = 82. The 29 chars left over go to
    # the winners in order: one more item for a (19), then 10 chars are too few for b.
    assert n == {"a": 16, "b": 4}
    assert len(ws.text) == 289 + 82 + 19


def test_hysteresis_keeps_last_winner_against_small_margin():
    p = WorkspaceParams(max_winners=1, min_winners=1)
    first = assemble([Bid("a", 0.6, ("A",)), Bid("b", 0.5, ("B",))], budget_tokens=100, now=T0, params=p)
    assert first.winners == ("a",)
    bids = [Bid("a", 0.6, ("A",)), Bid("b", 0.65, ("B",))]
    kept = assemble(bids, budget_tokens=100, now=T0 + 60, state=first.state, params=p)
    assert kept.winners == ("a",)  # 0.6 + 0.1 beats 0.65
    assert "+hysteresis" in kept.selections[0].reason
    beaten = assemble([Bid("a", 0.6, ("A",)), Bid("b", 0.75, ("B",))], budget_tokens=100, now=T0 + 60,
                      state=first.state, params=p)
    assert beaten.winners == ("b",)
    stale = assemble(bids, budget_tokens=100, now=T0 + 7200, state=first.state, params=p)
    assert stale.winners == ("b",)  # the bonus expired
    assert WorkspaceState.from_dict(kept.state.to_dict()) == kept.state


def test_items_too_large_are_skipped_not_truncated():
    ws = assemble([Bid("a", 0.9, ("x" * 1000, "short"))], budget_tokens=10, now=T0)
    assert ws.text == "## a\n- short"
    assert ws.selections[0].items_used == 1
    empty = assemble([Bid("a", 0.9, ("x" * 1000,))], budget_tokens=10, now=T0)
    assert empty.text == "" and empty.winners == ()
    assert "no item fitted" in empty.selections[0].reason


def test_validation():
    with pytest.raises(ValidationError):
        assemble([Bid("a", 0.5, ("x",)), Bid("a", 0.4, ("y",))], budget_tokens=10, now=T0)
    with pytest.raises(ValidationError):
        assemble([Bid("a", float("nan"), ("x",))], budget_tokens=10, now=T0)
    with pytest.raises(ValidationError):
        assemble([], budget_tokens=-1, now=T0)
    with pytest.raises(ConfigError):
        WorkspaceParams(max_winners=2.5)
    with pytest.raises(ConfigError):
        WorkspaceParams(chars_per_token=0.5)


bid_st = st.builds(
    Bid,
    module=st.sampled_from(["core", "working", "episodic", "semantic", "procedural", "intentions", "curiosity"]),
    salience=st.floats(0, 1),
    items=st.lists(st.text(min_size=0, max_size=80), max_size=6).map(tuple),
    always=st.booleans(),
)


@FAST
@given(st.lists(bid_st, max_size=7, unique_by=lambda b: b.module), st.integers(0, 300),
       st.sampled_from([1.0, 3.3, 4.0]))
def test_budget_never_exceeded(bids, budget, cpt):
    p = WorkspaceParams(chars_per_token=cpt)
    ws = assemble(bids, budget_tokens=budget, now=T0, params=p)
    assert estimate_tokens(ws.text, params=p) <= budget
    assert ws.tokens <= budget
    competitive = [s for s in ws.selections if s.won and not any(b.always and b.module == s.module for b in bids)]
    assert len(competitive) <= p.max_winners
    for s in ws.selections:
        if s.won:
            assert f"## {s.module}" in ws.text
