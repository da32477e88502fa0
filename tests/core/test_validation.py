"""Bad input: every refused call raises an error of the one exception tree and changes
nothing (the rows of every table and the bytes of the database file and WAL)."""

from __future__ import annotations

import math

import pytest
from core_helpers import T0, file_digest, open_mem, table_rows

from zenbrain import (
    NotFoundError,
    Scope,
    ScopeError,
    SimulatedClock,
    UnknownLayerError,
    ValidationError,
    ZenBrainError,
)
from zenbrain.config import MAX_CONTENT_CHARS, MAX_METADATA_BYTES, Config
from zenbrain.errors import ConfigError

S = Scope("alice", "a1")
SS = Scope("alice", "a1", "s1")


class Weird:
    pass


def _deep(n):
    d = {"leaf": 1}
    for _ in range(n):
        d = {"x": d}
    return d


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """One store shared by the module: every check compares the state just before and
    just after its own refused call."""
    mem = open_mem(str(tmp_path_factory.mktemp("validation") / "memory.db"), clock=SimulatedClock(T0))
    items = mem.store_many(
        [
            {"content": "Paris is the capital of France"},
            {"content": "went to the zoo yesterday", "event_time": 1_690_000_000},
            {"content": "scratch note", "kind": "note"},
        ],
        SS,
    )
    yield mem, items
    mem.close()


def _snapshot(mem):
    return table_rows(mem.storage.raw_connection()), file_digest(mem.storage.path)


def _refused(mem, call, exc):
    before = _snapshot(mem)
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, ZenBrainError)
    assert str(info.value)  # a message that says what is wrong
    assert _snapshot(mem) == before


BAD_CONTENT = ["", "   \n\t ", b"bytes are not text", 42, None, 3.5, ["a list"], "x" * (MAX_CONTENT_CHARS + 1), "nul\x00byte"]


@pytest.mark.parametrize("content", BAD_CONTENT, ids=lambda c: type(c).__name__ + str(len(c) if isinstance(c, (str, bytes, list)) else ""))
def test_bad_content_is_refused(seeded, content):
    mem, _ = seeded
    _refused(mem, lambda: mem.store(content, S), ValidationError)
    _refused(mem, lambda: mem.store_many([{"content": "fine text"}, {"content": content}], S), ValidationError)


def test_content_limit_comes_from_the_config(make_mem, seeded):
    mem, _ = seeded
    small = make_mem(Config(max_content_chars=10))
    _refused(small, lambda: small.store("eleven char", S), ValidationError)
    assert small.store("ten chars!", S).content == "ten chars!"
    assert mem.store("x" * MAX_CONTENT_CHARS, S).content == "x" * MAX_CONTENT_CHARS


@pytest.mark.parametrize("layer", ["hippocampus", "", 3, ["semantic"], "long_term"])
def test_unknown_layer_is_refused(seeded, layer):
    mem, _ = seeded
    _refused(mem, lambda: mem.store("a fine sentence", S, layer=layer), UnknownLayerError)
    _refused(mem, lambda: mem.list_memories(S, layer=layer), UnknownLayerError)
    _refused(mem, lambda: mem.recall("a fine sentence", S, layers=[layer]), UnknownLayerError)


@pytest.mark.parametrize("kwargs", [{"kind": "gossip"}, {"kind": 5}, {"kind": ["fact"]}, {"metadata": {"kind": "nope"}}])
def test_unknown_kind_is_refused(seeded, kwargs):
    mem, _ = seeded
    _refused(mem, lambda: mem.store("a fine sentence", S, **kwargs), ValidationError)


@pytest.mark.parametrize(
    "parts",
    [
        ("",),
        ("a" * 129,),
        ("two words",),
        ("slash/y",),
        ("semi;colon",),
        ("ümlaut",),
        (5,),
        (None,),
        (b"bytes",),
        ("alice", ""),
        ("alice", None),
        ("alice", "a1", ""),
        ("alice", "a1", 7),
        ("alice", "a1", None, ""),
        ("alice", "a1", None, "a" * 200),
        ("alice", "a1", None, None),
    ],
)
def test_invalid_scope_parts_are_refused(parts):
    with pytest.raises(ScopeError):
        Scope(*parts)


def test_scope_parts_at_the_limits_are_accepted():
    assert Scope("a" * 128, "b", "c.d:e@f+g-h_i", "x").user_id == "a" * 128


@pytest.mark.parametrize("value", ["alice\n"])
def test_scope_part_with_trailing_newline_is_refused(value):
    with pytest.raises(ScopeError):
        Scope(value)


@pytest.mark.parametrize("scope", ["alice", None, ("alice", "a1"), {"user_id": "alice"}])
def test_a_non_scope_is_refused(seeded, scope):
    mem, items = seeded
    _refused(mem, lambda: mem.store("a fine sentence", scope), ValidationError)
    _refused(mem, lambda: mem.recall("a fine sentence", scope), ValidationError)
    _refused(mem, lambda: mem.get(items[0].id, scope), ValidationError)
    _refused(mem, lambda: mem.forget(items[0].id, scope), ValidationError)


@pytest.mark.parametrize(
    "metadata",
    [
        [1, 2],
        "a string",
        42,
        {"tags": {"a", "b"}},
        {"obj": Weird()},
        {"n": math.nan},
        {"i": math.inf},
        {"nested": {"deeper": [1, -math.inf]}},
        {1: "non-string key"},
        {"b": b"bytes"},
        _deep(12),
        {"big": "x" * (MAX_METADATA_BYTES + 1)},
        {"event_time": "yesterday"},
        {"event_time": -5},
    ],
    ids=lambda m: repr(m)[:30],
)
def test_bad_metadata_is_refused(seeded, metadata):
    mem, items = seeded
    _refused(mem, lambda: mem.store("a fine sentence", S, metadata=metadata), ValidationError)
    if isinstance(metadata, dict) and "event_time" not in metadata:  # update() does not read event_time
        _refused(mem, lambda: mem.update(items[0].id, SS, metadata=metadata), ValidationError)


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, math.inf, "0.5", True, [0.5]])
def test_bad_importance_is_refused(seeded, value):
    mem, items = seeded
    _refused(mem, lambda: mem.store("a fine sentence", S, importance=value), ValidationError)
    _refused(mem, lambda: mem.update(items[0].id, SS, importance=value), ValidationError)


@pytest.mark.parametrize("value", [-1, math.inf, -math.inf, math.nan, 1e12, "yesterday", True, [1]])
def test_bad_event_time_is_refused(seeded, value):
    mem, _ = seeded
    _refused(mem, lambda: mem.store("went hiking", S, event_time=value), ValidationError)


@pytest.mark.parametrize("k", [0, -1, 1001, 2.5, True, "5", None])
def test_k_out_of_range_is_refused(seeded, k):
    mem, _ = seeded
    _refused(mem, lambda: mem.recall("capital of France", S, k=k), ValidationError)


@pytest.mark.parametrize("query", ["", "  ", None, b"bytes", 7])
def test_bad_query_is_refused(seeded, query):
    mem, _ = seeded
    _refused(mem, lambda: mem.recall(query, S), ValidationError)


@pytest.mark.parametrize("time_range", [(math.nan, None), (None, math.inf), ("2023", None)])
def test_bad_time_range_is_refused(seeded, time_range):
    mem, _ = seeded
    _refused(mem, lambda: mem.recall("zoo", S, time_range=time_range), ValidationError)


def test_malformed_time_range_is_refused(seeded):
    mem, _ = seeded
    _refused(mem, lambda: mem.recall("zoo", S, time_range=(5,)), ValidationError)


@pytest.mark.parametrize("bounds", [("2023", None), (math.nan, None), (None, "x")])
def test_bad_episode_bounds_are_refused(seeded, bounds):
    mem, _ = seeded
    _refused(mem, lambda: mem.episodes(S, *bounds), ValidationError)


@pytest.mark.parametrize("limit", ["abc", -5, 2.7])
def test_bad_limit_is_refused(seeded, limit):
    mem, _ = seeded
    _refused(mem, lambda: mem.list_memories(S, limit=limit), ValidationError)


def test_a_bad_record_in_a_batch_writes_nothing_of_the_batch(seeded):
    mem, _ = seeded
    good = [{"content": f"good record {i}"} for i in range(5)]
    for bad in (
        {"content": ""},
        {"content": "ok", "importance": 2},
        {"content": "ok", "layer": "nowhere"},
        {"content": "ok", "colour": "red"},
        {"content": "ok", "metadata": {"s": {1}}},
        {"content": "ok", "layer": "working"},  # working memory needs a session
        "not a dict",
        None,
    ):
        _refused(mem, lambda bad=bad: mem.store_many([*good[:3], bad, *good[3:]], S), ValidationError)
    _refused(mem, lambda: mem.store_many("a string is not a batch", S), ValidationError)
    _refused(mem, lambda: mem.store_many(iter(good), S), ValidationError)
    assert mem.store_many([], S) == []


def test_session_layers_need_a_session(seeded):
    mem, _ = seeded
    _refused(mem, lambda: mem.store("note", S, layer="working"), ValidationError)
    _refused(mem, lambda: mem.store("note", S, layer="short_term"), ValidationError)
    _refused(mem, lambda: mem.end_session(S), ValidationError)


def test_bad_ids_and_arguments_elsewhere(seeded):
    mem, items = seeded
    for bad_id in ("", 5, None, ["x"]):
        _refused(mem, lambda bad_id=bad_id: mem.get(bad_id, SS), ValidationError)
        _refused(mem, lambda bad_id=bad_id: mem.forget(bad_id, SS), ValidationError)
        _refused(mem, lambda bad_id=bad_id: mem.history(bad_id, SS), ValidationError)
    for missing in ("no-such-id", items[0].id + "x"):
        _refused(mem, lambda missing=missing: mem.get(missing, SS), NotFoundError)
        _refused(mem, lambda missing=missing: mem.forget(missing, SS), NotFoundError)
        _refused(mem, lambda missing=missing: mem.update(missing, SS, importance=0.2), NotFoundError)
    _refused(mem, lambda: mem.update(items[0].id, SS, content=""), ValidationError)
    _refused(mem, lambda: mem.update(items[0].id, SS, layer="nowhere"), UnknownLayerError)
    _refused(mem, lambda: mem.review(items[0].id, SS, "superb"), ValidationError)
    _refused(mem, lambda: mem.review(items[0].id, SS, 7), ValidationError)
    _refused(mem, lambda: mem.review_queue(SS, limit=0), ValidationError)
    _refused(mem, lambda: mem.record_outcome(items[0].id, SS, "yes"), ValidationError)


def test_update_into_a_session_layer_needs_a_session(seeded):
    mem, _items = seeded
    fact = mem.store("Rome is the capital of Italy", S)
    _refused(mem, lambda: mem.update(fact.id, S, layer="working"), ValidationError)


def test_config_bounds_are_checked():
    from zenbrain.config import LayerParams, RecallParams

    for bad in (lambda: RecallParams(lexical_weight=1.5), lambda: LayerParams(working_capacity=0),
                lambda: Config(context_links=frozenset({("work",)})), lambda: Config(disabled_layers=frozenset({"nope"})),
                lambda: Config().without("no_such_mechanism")):
        with pytest.raises((ConfigError, UnknownLayerError)) as info:
            bad()
        assert isinstance(info.value, ZenBrainError)
