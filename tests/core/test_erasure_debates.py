"""Erasure when other records quote a memory: an iMAD debate argued by a chat model logs
its rationale (in the winner's history and the partition's 'debates' log), and a judge
quotes the statements it weighed. Forgetting one of them must not leave its text there."""

from __future__ import annotations

import re

import pytest
from core_helpers import files_containing, tables_containing

from zenbrain import NotFoundError, Scope
from zenbrain.providers.testing import FunctionChat

S = Scope("alice", "a1")
MARKER = "zqvkold4417"


def _judge(messages):
    """Proponent and opponent say little; the judge quotes the stored statements, as judges do."""
    user = messages[-1]["content"]
    if "as judge" not in user:
        return "I argue my side on the evidence."
    stored = re.findall(r'- \[[0-9a-f]+\] "([^"]+)"', user)
    return "VERDICT: accept_new\nREASON: the stored statements " + "; ".join(repr(s) for s in stored) + " are outdated"


@pytest.fixture
def debated(mem):
    mem.chat = FunctionChat(_judge)
    old = mem.store(f"the office wifi password is {MARKER}", S)
    other = mem.store("the office wifi password is tigerstripe22", S)
    new = mem.store("the office wifi password is newpass99", S)
    debates = mem.last_store_report["debates"]
    assert debates and debates[0]["method"] == "llm" and set(debates[0]["losers"]) == {old.id, other.id}
    assert MARKER in debates[0]["rationale"]
    return mem, old, new


def test_forget_removes_the_memory_itself_after_a_debate(debated):
    mem, old, new = debated
    mem.forget(old.id, S)
    with pytest.raises(NotFoundError):
        mem.get(old.id, S)
    assert mem.get(new.id, S).id == new.id


def test_forget_leaves_no_quoted_text_in_other_records(debated, db_path):
    mem, old, new = debated
    mem.forget(old.id, S)
    assert all(MARKER not in str(e.detail) for e in mem.history(new.id, S))
    assert MARKER not in str(mem.storage.kv_get(("alice", "a1"), "debates"))
    assert tables_containing(mem.storage, MARKER) == {}
    assert files_containing(db_path, MARKER) == {}


def test_a_debated_memory_history_starts_with_its_creation(debated):
    mem, _, new = debated
    assert next(e.action for e in mem.history(new.id, S)) == "created"
