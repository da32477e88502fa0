"""Property-based fuzzing of the public API and of the MCP tools: any input, however hostile
(lone surrogates, NUL, integers beyond float range, NaN, wrong types, huge limits, other
users' ids), gets an answer or an error of zenbrain's exception tree - never another
exception. Seeded (derandomize) and bounded, so it runs in seconds and the same way
every time."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zenbrain import Scope, SimulatedClock, ZenBrainError, open_memory
from zenbrain.providers.hashing import HashingEmbedder

T0 = 1_700_000_000.0
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

HOSTILE_TEXT = st.sampled_from(["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "é" * 3, "tea in paris", "🙂",
                                "working", "semantic", "good", "evidence_ids", "x" * 40_000])
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**400), 2**63, 2**64, 0, 1, -1, 5, 1000, 1001]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALARS = st.one_of(st.none(), st.booleans(), HOSTILE_TEXT, NUMBERS, st.binary(max_size=4))


def values(ids: list[str]) -> st.SearchStrategy[Any]:
    """Anything a caller might pass: scalars, containers of them, and ids of real memories."""
    leaf = st.one_of(SCALARS, st.sampled_from(ids))
    return st.one_of(
        leaf,
        st.lists(leaf, max_size=3),
        st.tuples(leaf, leaf),
        st.dictionaries(st.one_of(HOSTILE_TEXT, st.integers(-3, 3)), leaf, max_size=3),
        st.just({"evidence_ids": 7}),
        st.just(Scope("bob")),
    )


# Each operation: how to call it with a list of arguments, and valid arguments (ids by
# their place in the fixture's list, "ID0"...).
SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "store": (lambda m, sc, a: m.store(a[0], sc, kind=a[1], layer=a[2], metadata=a[3], event_time=a[4],
                                       importance=a[5]), ["a note", None, None, {"k": 1}, T0, 0.5]),
    "store_many": (lambda m, sc, a: m.store_many(a[0], sc), [[{"content": "x"}]]),
    "recall": (lambda m, sc, a: m.recall(a[0], sc, a[1], layers=a[2], time_range=a[3], include_archived=a[4],
                                         touch=a[5]), ["tea", 5, None, None, False, True]),
    "recall_many": (lambda m, sc, a: m.recall_many(a[0], sc, a[1]), [["tea"], 3]),
    "get": (lambda m, sc, a: m.get(a[0], sc), ["ID0"]),
    "episodes": (lambda m, sc, a: m.episodes(a[0], a[1], a[2], limit=a[3]), ["SCOPE", None, None, 5]),
    "list": (lambda m, sc, a: m.list_memories(sc, layer=a[0], include_archived=a[1], limit=a[2]), [None, False, 5]),
    "update": (lambda m, sc, a: m.update(a[0], sc, content=a[1], metadata=a[2], importance=a[3], layer=a[4]),
               ["ID1", "changed", None, 0.7, None]),
    "revise": (lambda m, sc, a: m.revise(a[0], sc, a[1], correction=a[2]), ["ID1", "new detail", False]),
    "rollback": (lambda m, sc, a: m.rollback(a[0], sc), ["ID1"]),
    "forget": (lambda m, sc, a: m.forget(a[0], sc), ["ID5"]),
    "history": (lambda m, sc, a: m.history(a[0], sc), ["ID0"]),
    "relate": (lambda m, sc, a: m.relate(a[0], a[1], a[2], sc, weight=a[3]), ["ID0", "ID2", "supports", 1.0]),
    "unrelate": (lambda m, sc, a: m.unrelate(a[0], a[1], a[2], sc), ["ID0", "ID2", "supports"]),
    "relations": (lambda m, sc, a: m.relations(a[0], sc, relation=a[1]), ["ID0", None]),
    "end_session": (lambda m, sc, a: m.end_session(a[0]), ["SCOPE"]),
    "review": (lambda m, sc, a: m.review(a[0], sc, a[1]), ["ID0", "good"]),
    "review_many": (lambda m, sc, a: m.review_many(a[0], sc), [[("ID0", 3)]]),
    "review_queue": (lambda m, sc, a: m.review_queue(sc, a[0]), [5]),
    "record_outcome": (lambda m, sc, a: m.record_outcome(a[0], sc, a[1]), ["ID0", True]),
    "record_evidence": (lambda m, sc, a: m.record_evidence(a[0], sc, supports=a[1], strength=a[2]),
                        ["ID0", True, 1.0]),
    "assemble_prompt": (lambda m, sc, a: m.assemble_prompt(a[0], sc, budget_tokens=a[1], k=a[2]), ["tea", 200, 5]),
    "intend": (lambda m, sc, a: m.intend(a[0], sc, cue=a[1], due_at=a[2], repeat_every_s=a[3]),
               ["call mum", "paris", None, None]),
    "set_goal": (lambda m, sc, a: m.set_goal(a[0], sc), ["plan a trip"]),
    "forgetting_curve": (lambda m, sc, a: m.forgetting_curve(a[0], sc, a[1]), ["ID0", [T0, T0 + 86400]]),
    "restore": (lambda m, sc, a: m.restore(a[0], sc), ["ID0"]),
    "stats": (lambda m, sc, a: m.stats(a[0]), ["SCOPE"]),
    "contexts": (lambda m, sc, a: m.contexts(a[0]), ["SCOPE"]),
}
OPERATIONS = sorted(SIGNATURES)
# The hostile values the sweep puts in every argument's place, one at a time.
SWEEP = ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "x" * 40_000, 10**400, -(10**400), 2**64, -1, 0,
         float("nan"), float("inf"), True, None, b"\xff", 3.5, [], ["\ud800"], {"\ud800": 1}, {"evidence_ids": 7},
         {"a": 10**30}, (1, 2), "ID6", Scope("bob"), object()]


def _call(m: Any, sc: Scope, ids: list[str], name: str, args: list[Any]) -> None:
    """Run one operation; anything but a result or a ZenBrainError fails the test."""
    real = [ids[int(a[2:])] if isinstance(a, str) and a.startswith("ID") and a[2:].isdigit() else
            sc if isinstance(a, str) and a == "SCOPE" else a for a in args]
    try:
        SIGNATURES[name][0](m, sc, real)
    except ZenBrainError:
        pass
    except Exception as exc:  # pragma: no cover - what the test is looking for
        raise AssertionError(f"{name} raised {type(exc).__name__}: {str(exc)[:200]} with {str(args)[:300]}") from exc


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    m = open_memory(tmp_path_factory.mktemp("fuzz") / "fuzz.db", embedder=HashingEmbedder(64),
                    clock=SimulatedClock(T0))
    sc = Scope("alice", "agent", "s1")
    ids = [i.id for i in m.store_many([{"content": f"seed memory {i} about tea in paris"} for i in range(6)], sc)]
    ids.append(m.store("bob's own memory", Scope("bob")).id)
    yield m, sc, ids
    m.close()


@pytest.mark.parametrize("name", OPERATIONS)
def test_one_hostile_argument_at_a_time_gets_a_library_error(fuzzed: Any, name: str) -> None:
    """Every argument of every operation, in turn, gets every hostile value."""
    m, sc, ids = fuzzed
    valid = SIGNATURES[name][1]
    for place in range(len(valid)):
        for bad in SWEEP:
            _call(m, sc, ids, name, [bad if i == place else v for i, v in enumerate(valid)])


def test_random_sequences_of_hostile_calls_get_library_errors(fuzzed: Any) -> None:
    m, sc, ids = fuzzed
    tokens = [f"ID{i}" for i in range(len(ids))] + ["SCOPE"]

    @SETTINGS
    @given(calls=st.lists(st.tuples(st.sampled_from(OPERATIONS),
                                    st.lists(st.one_of(values(tokens), st.sampled_from(SWEEP)), min_size=6,
                                             max_size=6)), min_size=1, max_size=20))
    def run(calls: list[tuple[str, list[Any]]]) -> None:
        for name, args in calls:
            _call(m, sc, ids, name, args)

    run()
    assert m.storage.check().ok  # nothing the fuzzing did damaged the file


mcp = pytest.importorskip("mcp")


def test_every_failure_of_an_mcp_tool_is_a_short_tool_error(fuzzed: Any) -> None:
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

    from zenbrain.server.mcp_server import create_server

    m, _, ids = fuzzed
    server = create_server(m, Scope("alice", "agent", "s1"))
    tools = anyio.run(server.list_tools)
    names = sorted(t.name for t in tools)
    params = {t.name: sorted(t.input_schema.get("properties", {})) for t in tools}
    arg_names = st.sampled_from(sorted({p for ps in params.values() for p in ps} | {"bogus", "limit", "k"}))

    @SETTINGS
    @given(calls=st.lists(st.tuples(st.sampled_from(names), st.dictionaries(arg_names, values(ids), max_size=4)),
                          min_size=1, max_size=12))
    def run(calls: list[tuple[str, dict[str, Any]]]) -> None:
        async def body() -> None:
            for name, args in calls:
                args = {k: v for k, v in args.items() if not isinstance(v, (bytes, Scope, tuple))}  # JSON only
                try:
                    result = await server.call_tool(name, args)
                except ToolError as exc:  # the server sends it as an error result
                    text = str(exc)
                    assert not isinstance(exc, UnexpectedToolError), (name, args, repr(exc.__cause__))
                    assert "http" not in text and "Traceback" not in text and len(text) < 2000, text
                    continue
                assert result is not None

        anyio.run(body)

    run()
