"""The REST API over a real HTTP server: uvicorn in a background thread on a free
loopback port, httpx as the client, a store in a temporary folder (hashing embedder)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from live_server import LiveServer

from zenbrain import Scope, open_memory
from zenbrain.cli import load_api_keys, main
from zenbrain.errors import ScopeError
from zenbrain.server.rest import create_app

EMB = "hashing:64"
KEYS = {"key-alice": "alice", "key-bob": "bob"}


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    mem = open_memory(tmp_path_factory.mktemp("rest") / "open.db", embedder=EMB)
    server = LiveServer(create_app(mem))
    yield server
    server.stop()
    mem.close()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    mem = open_memory(tmp_path_factory.mktemp("rest") / "keyed.db", embedder=EMB)
    server = LiveServer(create_app(mem, api_keys=KEYS))
    yield server
    server.stop()
    mem.close()


@pytest.fixture
def client(open_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=open_server.url, timeout=30) as c:
        yield c


def as_user(user: str, **extra: Any) -> dict[str, Any]:
    return {"user_id": user, **extra}


def store(client: httpx.Client, user: str, content: str, **fields: Any) -> dict[str, Any]:
    r = client.post("/v1/memories", params=as_user(user), json={"content": content, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def assert_error(r: httpx.Response, status: int, name: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] == name
    assert body["message"] and "Traceback" not in body["message"]
    return body


# --------------------------------------------------------------------------- health and schema


def test_health_and_openapi_schema(client):
    r = client.get("/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok" and isinstance(r.json()["memories"], int)
    paths = client.get("/openapi.json").json()["paths"]
    for path, method in [
        ("/v1/memories", "post"), ("/v1/memories", "get"), ("/v1/memories/batch", "post"),
        ("/v1/memories/{memory_id}", "get"), ("/v1/memories/{memory_id}", "patch"),
        ("/v1/memories/{memory_id}", "delete"), ("/v1/memories/{memory_id}/history", "get"),
        ("/v1/recall", "post"), ("/v1/relations", "post"), ("/v1/relations", "delete"),
        ("/v1/memories/{memory_id}/relations", "get"), ("/v1/memories/{memory_id}/evidence", "post"),
        ("/v1/memories/{memory_id}/outcome", "post"), ("/v1/reviews", "post"), ("/v1/review-queue", "get"),
        ("/v1/sleep", "post"), ("/v1/decay", "post"), ("/v1/consolidate", "post"), ("/v1/sessions/end", "post"),
        ("/v1/prompt", "post"), ("/v1/stats", "get"), ("/health", "get"),
        ("/v1/memories/{memory_id}/revise", "post"), ("/v1/memories/{memory_id}/rollback", "post"),
        ("/v1/memories/{memory_id}/restore", "post"), ("/v1/episodes", "get"), ("/v1/recall/batch", "post"),
        ("/v1/intentions", "post"), ("/v1/intentions/due", "get"), ("/v1/goal", "put"), ("/v1/scope", "delete"),
    ]:
        assert method in paths.get(path, {}), (path, method)
    params = {p["name"] for p in paths["/v1/recall"]["post"]["parameters"]}
    assert params == {"user_id", "agent_id", "session_id", "context"}
    assert client.get("/docs").status_code == 200


# --------------------------------------------------------------------------- memories and recall


def test_store_then_recall_finds_it_with_a_why_breakdown(client):
    m = store(client, "u-recall", "Caroline went to the support group on 7 May 2023",
              kind="episode", metadata={"source": "chat"}, event_time=1683450000.0, importance=0.8)
    assert m["user_id"] == "u-recall" and m["kind"] == "episode" and m["importance"] == 0.8
    store(client, "u-recall", "Melanie painted a lake at sunrise")
    store(client, "u-other", "Caroline went to the support group")  # another user: never recalled
    r = client.post("/v1/recall", params=as_user("u-recall"),
                    json={"query": "when did Caroline go to the support group?", "k": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query_type"] and isinstance(body["core"], list)
    top = body["hits"][0]
    assert top["id"] == m["id"] and top["rank"] == 1
    assert top["content"].startswith("Caroline") and top["metadata"]["source"] == "chat"
    assert top["event_time"] == 1683450000.0 and top["layer"] == "episodic" and top["kind"] == "episode"
    assert {"dense", "lexical", "layer_weight", "final"} <= set(top["why"])
    assert top["why"]["final"] == pytest.approx(top["score"])
    assert len({h["id"] for h in body["hits"]}) == len(body["hits"]) == 2
    # Written by orjson without FastAPI's check: the answer must still be what RecallOut documents.
    from zenbrain.server.schemas import RecallOut

    RecallOut.model_validate(body)
    store(client, "u-recall", "Caroline's core value: honesty", layer="core")
    RecallOut.model_validate(client.post("/v1/recall", params=as_user("u-recall"), json={"query": "Caroline"}).json())


def test_get_list_update_history_forget(client):
    u = as_user("u-crud")
    m = store(client, "u-crud", "The office moved to Berlin")
    assert client.get(f"/v1/memories/{m['id']}", params=u).json()["content"] == "The office moved to Berlin"
    listed = client.get("/v1/memories", params=u).json()["memories"]
    assert [x["id"] for x in listed] == [m["id"]]
    assert client.get("/v1/memories", params={**u, "layer": "core"}).json()["memories"] == []

    r = client.patch(f"/v1/memories/{m['id']}", params=u, json={"content": "The office moved to Munich", "importance": 0.9})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "The office moved to Munich" and r.json()["version"] == 2
    events = client.get(f"/v1/memories/{m['id']}/history", params=u).json()["history"]
    assert [e["action"] for e in events][:2] == ["created", "updated"]
    assert events[1]["detail"]["before"]["content"] == "The office moved to Berlin"

    r = client.delete(f"/v1/memories/{m['id']}", params=u)
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert receipt["memory_ids"] == [m["id"]] and receipt["scrubbed"] is True and receipt["history_rows"] >= 2
    body = assert_error(client.get(f"/v1/memories/{m['id']}", params=u), 404, "NotFoundError")
    assert m["id"] in body["message"]
    assert_error(client.delete(f"/v1/memories/{m['id']}", params=u), 404, "NotFoundError")
    assert client.get("/v1/memories", params=u).json()["memories"] == []


def test_batch_store_writes_all_or_nothing(client):
    u = as_user("u-batch")
    r = client.post("/v1/memories/batch", params=u, json={"memories": [
        {"content": "Alice likes green tea", "kind": "preference"},
        {"content": "Alice runs on Sundays", "metadata": {"n": 2}},
    ]})
    assert r.status_code == 201, r.text
    assert [m["content"] for m in r.json()["memories"]] == ["Alice likes green tea", "Alice runs on Sundays"]
    r = client.post("/v1/memories/batch", params=u, json={"memories": [{"content": "fine"}, {"content": ""}]})
    assert_error(r, 422, "RequestValidationError")  # refused by the schema
    # refused by the library (working memory needs a session): nothing of the batch is written
    r = client.post("/v1/memories/batch", params=u, json={"memories": [{"content": "fine"},
                                                                        {"content": "now", "layer": "working"}]})
    assert_error(r, 400, "ValidationError")
    assert len(client.get("/v1/memories", params=u).json()["memories"]) == 2


def test_relations_evidence_and_outcome(client):
    u = as_user("u-rel")
    a = store(client, "u-rel", "The server runs on port 8765")
    b = store(client, "u-rel", "The health check answers on /health")
    r = client.post("/v1/relations", params=u, json={"src": a["id"], "dst": b["id"], "relation": "supports", "weight": 0.7})
    assert r.status_code == 201, r.text
    assert r.json()["relation"] == "supports" and r.json()["weight"] == pytest.approx(0.7)
    edges = client.get(f"/v1/memories/{a['id']}/relations", params=u).json()["relations"]
    assert any(e["src"] == a["id"] and e["dst"] == b["id"] and e["relation"] == "supports" for e in edges)
    only = client.get(f"/v1/memories/{a['id']}/relations", params={**u, "relation": "causes"}).json()["relations"]
    assert only == []
    gone = {**u, "src": a["id"], "dst": b["id"], "relation": "supports"}
    assert client.delete("/v1/relations", params=gone).json() == {"removed": True}
    assert client.delete("/v1/relations", params=gone).json() == {"removed": False}
    assert_error(client.post("/v1/relations", params=u, json={"src": a["id"], "dst": "nope", "relation": "supports"}),
                 404, "NotFoundError")

    r = client.post(f"/v1/memories/{a['id']}/evidence", params=u, json={"supports": True, "strength": 3})
    assert r.status_code == 200, r.text
    assert r.json()["confidence"] > 0.5
    r = client.post(f"/v1/memories/{a['id']}/evidence", params=u, json={"supports": False, "strength": -1})
    assert_error(r, 422, "RequestValidationError")
    r = client.post(f"/v1/memories/{b['id']}/outcome", params=u, json={"success": True})
    assert r.status_code == 200 and r.json()["id"] == b["id"]


def test_review_queue_and_reviews(client):
    u = as_user("u-review")
    a = store(client, "u-review", "Paris is the capital of France")
    b = store(client, "u-review", "Rome is the capital of Italy")
    r = client.get("/v1/review-queue", params={**u, "limit": 5})
    assert r.status_code == 200 and isinstance(r.json()["memories"], list)
    assert_error(client.get("/v1/review-queue", params={**u, "limit": 0}), 422, "RequestValidationError")
    r = client.post("/v1/reviews", params=u, json={"reviews": [{"id": a["id"], "grade": "good"}, {"id": b["id"], "grade": 1}]})
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["memories"]] == [a["id"], b["id"]]
    r = client.post("/v1/reviews", params=u, json={"reviews": [{"id": a["id"], "grade": "superb"}]})
    assert_error(r, 422, "RequestValidationError")


def test_lifecycle_reports_context_and_stats(client):
    u = as_user("u-life")
    store(client, "u-life", "Bob prefers window seats")
    store(client, "u-life", "Bob flew to Lisbon in March", kind="episode")
    for path in ("/v1/sleep", "/v1/decay", "/v1/consolidate"):
        r = client.post(path, params=u)
        assert r.status_code == 200, r.text
        assert r.json()["operation"] == path.rsplit("/", 1)[1] and isinstance(r.json()["stages"], dict)
    assert client.post("/v1/sleep", params={**u, "detail": "true"}).status_code == 200
    body = assert_error(client.post("/v1/sessions/end", params=u), 422, "RequestValidationError")  # no session_id
    assert "session_id" in body["message"]
    store_s = client.post("/v1/memories", params={**u, "session_id": "s1"}, json={"content": "we talk about trains", "layer": "working"})
    assert store_s.status_code == 201 and store_s.json()["layer"] == "working"
    r = client.post("/v1/sessions/end", params={**u, "session_id": "s1"})
    assert r.status_code == 200 and r.json()["operation"] == "end_session"
    r = client.post("/v1/prompt", params=u, json={"query": "where does Bob like to sit?", "budget_tokens": 200})
    assert r.status_code == 200 and "window seats" in r.json()["text"]
    s = client.get("/v1/stats", params=u).json()
    assert s["memories"] == 3 and s["embedder"] == EMB and "by_layer" in s


def test_revise_rollback_and_restore(client):
    u = as_user("u-revise")
    m = store(client, "u-revise", "The team meeting is on Tuesday at ten in room four")
    r = client.post(f"/v1/memories/{m['id']}/revise", params=u,
                    json={"content": "The team meeting is on Wednesday at ten in room four", "correction": True})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["mode"] in {"confirmed", "selective_edit", "integration", "new_episode", "blocked", "protected"}
    assert out["memory"]["id"] == m["id"] and isinstance(out["plan"], dict)
    assert out["new_memory"] is None or out["new_memory"]["metadata"]["revises"] == m["id"]
    events = client.get(f"/v1/memories/{m['id']}/history", params=u).json()["history"]
    # a new episode from the correction supersedes the memory after the reconsolidation
    done = [e for e in events if e["action"] == "reconsolidated"]
    assert done and done[-1]["detail"]["mode"] == out["mode"]

    client.patch(f"/v1/memories/{m['id']}", params=u, json={"content": "The team meeting is cancelled"})
    r = client.post(f"/v1/memories/{m['id']}/rollback", params=u)
    assert r.status_code == 200, r.text
    assert r.json()["content"] == out["memory"]["content"]
    r = client.post(f"/v1/memories/{m['id']}/restore", params=u)
    assert r.status_code == 200 and r.json()["archived"] is False
    assert client.get(f"/v1/memories/{m['id']}/history", params=u).json()["history"][-1]["action"] == "restored"

    fresh = store(client, "u-revise", "Lunch is at noon")
    assert_error(client.post(f"/v1/memories/{fresh['id']}/rollback", params=u), 404, "NotFoundError")
    for path in ("revise", "rollback", "restore"):
        r = client.post(f"/v1/memories/missing/{path}", params=u, json={"content": "x"} if path == "revise" else None)
        assert_error(r, 404, "NotFoundError")
    assert_error(client.post(f"/v1/memories/{m['id']}/revise", params=u, json={"content": " "}), 422,
                 "RequestValidationError")


def test_episodes_in_a_time_range_and_batch_recall(client):
    u = as_user("u-episodes")
    for text, t in [("Anna moved to Oslo", 1683450000.0), ("Anna started a new job", 1690000000.0),
                    ("Anna adopted a cat", 1700000000.0)]:
        store(client, "u-episodes", text, kind="episode", event_time=t)
    r = client.get("/v1/episodes", params={**u, "start": "2023-06-01T00:00:00Z", "end": "1695000000"})
    assert r.status_code == 200, r.text
    assert [m["content"] for m in r.json()["memories"]] == ["Anna started a new job"]
    everything = client.get("/v1/episodes", params={**u, "limit": 2}).json()["memories"]
    assert [m["event_time"] for m in everything] == [1683450000.0, 1690000000.0]  # oldest first
    assert_error(client.get("/v1/episodes", params={**u, "start": "last spring"}), 422, "RequestValidationError")

    r = client.post("/v1/recall/batch", params=u, json={"queries": ["where did Anna move?", "what pet?"], "k": 1})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["query"] for x in results] == ["where did Anna move?", "what pet?"]
    assert results[0]["hits"][0]["content"] == "Anna moved to Oslo"
    assert_error(client.post("/v1/recall/batch", params=u, json={"queries": ["x"], "k": 0}), 422,
                 "RequestValidationError")


def test_intentions_fire_by_cue_and_by_time_and_goal(client):
    u = as_user("u-intend")
    store(client, "u-intend", "My passport expires in June next year")
    r = client.post("/v1/intentions", params=u, json={"action": "Remind the user to renew the passport", "cue": "passport"})
    assert r.status_code == 201, r.text
    cued = r.json()
    assert cued["action"].startswith("Remind") and "cue_embedding" not in cued
    fired = client.post("/v1/recall", params=u, json={"query": "when does my passport expire?"}).json()["intentions"]
    assert [(f["intention_id"], f["trigger"]) for f in fired] == [(cued["id"], "keyword")]

    timed = client.post("/v1/intentions", params=u, json={"action": "Water the plants", "due_at": "2020-01-01T08:00:00Z"})
    assert timed.status_code == 201 and timed.json()["due_at"] == 1577865600.0
    due = client.get("/v1/intentions/due", params=u).json()["intentions"]
    assert [(f["intention_id"], f["trigger"]) for f in due] == [(timed.json()["id"], "time")]
    assert client.get("/v1/intentions/due", params=u).json()["intentions"] == []  # fires once
    assert_error(client.post("/v1/intentions", params=u, json={"action": "do something"}), 400, "ValidationError")

    r = client.put("/v1/goal", params=u, json={"goal": "plan the trip to Norway"})
    assert r.status_code == 200 and r.json() == {"goal": "plan the trip to Norway"}
    assert_error(client.put("/v1/goal", params=u, json={"goal": ""}), 422, "RequestValidationError")


# --------------------------------------------------------------------------- errors


def test_validation_errors_are_json_with_the_exception_class(client):
    u = as_user("u-errors")
    schema = "RequestValidationError"
    body = assert_error(client.post("/v1/memories", params=u, json={"content": "   "}), 422, schema)
    assert body["message"] == "content: must not be blank or contain a NUL character"
    assert_error(client.post("/v1/memories", params=u, json={"content": "x", "layer": "attic"}), 422, schema)
    assert_error(client.post("/v1/memories", params=u, json={"content": "x", "importance": 2}), 422, schema)
    assert_error(client.post("/v1/memories", params=u, json={"content": "x", "importance": True}), 422, schema)
    assert_error(client.post("/v1/recall", params=u, json={"query": "x", "k": 0}), 422, schema)
    assert_error(client.post("/v1/recall", params=u, json={"query": "x", "k": 1001}), 422, schema)
    assert_error(client.post("/v1/recall", params=u, json={"query": "x", "touch": 0}), 422, schema)
    assert client.post("/v1/recall", params=u, json={"query": "x", "time_range": [5, None, 1]}).status_code == 422
    nan = b'{"query": "x", "time_range": [NaN, null]}'
    assert_error(client.post("/v1/recall", params=u, content=nan, headers={"content-type": "application/json"}),
                 422, schema)
    r = client.post("/v1/recall", params=u, json={"query": "x", "k": "many"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "k"]
    r = client.post("/v1/memories", params=u, json={"content": "x", "colour": "red"})
    assert r.status_code == 422  # unknown fields are refused
    assert_error(client.post("/v1/memories", params=u, content=b"{not json", headers={"content-type": "application/json"}),
                 422, schema)
    body = assert_error(client.get("/v1/memories", params={"user_id": "has space"}), 422, schema)
    assert "letters, digits and _.:@+-" in body["message"]
    assert_error(client.get("/v1/memories", params={**u, "limit": 0}), 422, schema)
    assert_error(client.patch("/v1/memories/missing", params=u, json={"content": "y"}), 404, "NotFoundError")
    # refused by the library, not the schema: a working memory needs a session
    assert_error(client.post("/v1/memories", params=u, json={"content": "x", "layer": "working"}), 400, "ValidationError")


HUGE = "16054873920677515264"


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/episodes", "/v1/review-queue", "/v1/archive"])
def test_a_huge_limit_is_a_clear_422_not_an_overflow(client, path):
    body = assert_error(client.get(path, params={"user_id": "u-huge", "limit": HUGE}), 422, "RequestValidationError")
    assert body["message"] == "query.limit: Input should be less than or equal to 10000"
    assert client.get(path, params={"user_id": "u-huge", "limit": 10000}).status_code == 200


def test_an_empty_user_id_is_refused_not_the_default_user(client):
    store(client, "default", "a memory of the shared default user")
    for params in ({"user_id": ""}, {"user_id": "u", "agent_id": ""}, {"user_id": "u", "context": ""}):
        body = assert_error(client.get("/v1/memories", params=params), 422, "RequestValidationError")
        assert "1-128 characters" in body["message"]
    r = client.post("/v1/memories", params={"user_id": ""}, json={"content": "must not land in default"})
    assert r.status_code == 422
    contents = [m["content"] for m in client.get("/v1/memories", params={"user_id": "default"}).json()["memories"]]
    assert "must not land in default" not in contents


def test_paging_lists_every_memory_once(client):
    u = "u-pages"
    made = {store(client, u, f"note number {i}")["id"] for i in range(7)}
    seen: list[str] = []
    offset = 0
    while True:
        page = client.get("/v1/memories", params={"user_id": u, "limit": 3, "offset": offset}).json()
        seen += [m["id"] for m in page["memories"]]
        offset += 3
        if not page["has_more"]:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 7


def test_body_size_limit_and_method_errors(open_server):
    from zenbrain.server.limits import MAX_BODY_BYTES

    with httpx.Client(base_url=open_server.url, timeout=30) as c:
        big = b'{"content": "' + b"x" * MAX_BODY_BYTES + b'"}'
        body = assert_error(c.post("/v1/memories", content=big, headers={"content-type": "application/json"}),
                            413, "PayloadTooLarge")
        assert str(MAX_BODY_BYTES) in body["message"]

        def chunks():  # no Content-Length: the limit holds for a streamed body too
            yield b'{"content": "'
            for _ in range(MAX_BODY_BYTES // 65536 + 1):
                yield b"y" * 65536
            yield b'"}'

        r = c.post("/v1/memories", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413
        r = c.request("OPTIONS", "/v1/memories")
        assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
        assert r.json()["error"] == "MethodNotAllowed"


def test_openapi_states_limits_statuses_and_security_only_with_keys(client, keyed_server):
    from zenbrain.server.limits import MAX_BATCH_MEMORIES, MAX_K, MAX_LIST

    spec = client.get("/openapi.json").json()
    assert "securitySchemes" not in spec.get("components", {})
    ops = [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]
    for path, method, op in ops:
        assert "security" not in op
        codes = set(op["responses"])
        assert any(c.startswith("2") for c in codes), (path, method)
        if path.startswith("/v1"):
            assert {"400", "422", "503"} <= codes, (path, method)
            writes = any(p["name"] == "Idempotency-Key" for p in op.get("parameters", ()))
            assert "401" not in codes and ("403" in codes) == writes, (path, method)  # 403: a read-only store
            if writes:
                assert "ReadOnlyStoreError" in op["responses"]["403"]["description"]
                problem = op["responses"]["403"]["content"]["application/problem+json"]["schema"]
                assert {"type", "title", "status", "detail", "error", "message"} <= set(problem["properties"])
            assert ("413" in codes) == ("requestBody" in op), (path, method)
        ok = next(c for c in codes if c.startswith("2"))
        if ok != "204":
            assert op["responses"][ok]["content"]["application/json"]["schema"], (path, method)
    assert "404" in spec["paths"]["/v1/memories/{memory_id}"]["get"]["responses"]
    params = {p["name"]: p["schema"] for p in spec["paths"]["/v1/memories"]["get"]["parameters"]}
    limit = next(s for s in params["limit"]["anyOf"] if s.get("type") == "integer")
    assert limit["maximum"] == MAX_LIST and limit["minimum"] == 1
    assert params["user_id"]["pattern"]
    schemas = spec["components"]["schemas"]
    assert schemas["RecallRequest"]["properties"]["k"]["maximum"] == MAX_K
    assert schemas["BatchRequest"]["properties"]["memories"]["maxItems"] == MAX_BATCH_MEMORIES
    assert schemas["MemoryRecord"]["properties"]["content"]["maxLength"] == 32_000

    keyed = httpx.get(keyed_server.url + "/openapi.json").json()
    assert keyed["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, item in keyed["paths"].items():
        for method, op in item.items():
            if path.startswith("/v1"):
                assert op["security"] and {"401", "403"} <= set(op["responses"]), (path, method)
            else:
                assert "security" not in op


def test_a_read_only_store_answers_writes_403_problem_json_and_changes_nothing(tmp_path):
    """Over HTTP on 127.0.0.1: reads are served, every write is refused with 403 (not 503,
    which tells the client to retry) and an RFC 9457 body naming ReadOnlyStoreError."""
    path = tmp_path / "ro.db"
    with open_memory(path, embedder=EMB) as mem:
        mid = mem.store("Ana waters the garden at dawn", Scope("ana")).id
    before = path.read_bytes()
    mem = open_memory(path, embedder=EMB, read_only=True)
    server = LiveServer(create_app(mem))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            r = c.post("/v1/recall", params=as_user("ana"), json={"query": "garden", "k": 1})
            assert r.status_code == 200 and r.json()["hits"][0]["id"] == mid
            writes = [c.post("/v1/memories", params=as_user("ana"), json={"content": "must not land"}),
                      c.patch(f"/v1/memories/{mid}", params=as_user("ana"), json={"content": "changed"}),
                      c.delete(f"/v1/memories/{mid}", params=as_user("ana")),
                      c.post("/v1/sleep", params=as_user("ana"), headers={"Idempotency-Key": "k1"})]
            for r in writes:
                body = assert_error(r, 403, "ReadOnlyStoreError")
                assert r.headers["content-type"] == "application/problem+json"
                assert "retry-after" not in r.headers
                assert body["status"] == 403 and body["title"] == "Forbidden" and body["type"] == "about:blank"
                assert body["detail"] == body["message"] and "read-only" in body["message"]
            assert c.get(f"/v1/memories/{mid}", params=as_user("ana")).json()["content"] == "Ana waters the garden at dawn"
    finally:
        server.stop()
        mem.close()
    assert path.read_bytes() == before


# --------------------------------------------------------------------------- authentication


def test_auth_keys_decide_the_user(keyed_server):
    alice = {"Authorization": "Bearer key-alice"}
    bob = {"Authorization": "Bearer key-bob"}
    with httpx.Client(base_url=keyed_server.url, timeout=30) as c:
        h = c.get("/health")
        assert h.status_code == 200 and "memories" not in h.json()  # no counts for anonymous callers
        r = c.get("/v1/memories")
        assert_error(r, 401, "Unauthorized")
        assert r.headers["www-authenticate"] == "Bearer"
        assert_error(c.get("/v1/memories", headers={"Authorization": "Bearer nope"}), 401, "Unauthorized")
        assert_error(c.get("/v1/memories", headers={"Authorization": "Basic a2V5LWFsaWNl"}), 401, "Unauthorized")
        assert_error(c.post("/v1/memories", json={"content": "x"}), 401, "Unauthorized")

        r = c.post("/v1/memories", headers=alice, json={"content": "Alice's locker code is 4711"})
        assert r.status_code == 201 and r.json()["user_id"] == "alice"  # the key's user by default
        mine = r.json()["id"]
        r = c.post("/v1/memories", headers=bob, params={"user_id": "bob"}, json={"content": "Bob's locker code is 1234"})
        assert r.status_code == 201 and r.json()["user_id"] == "bob"
        theirs = r.json()["id"]

        assert_error(c.get("/v1/memories", headers=alice, params={"user_id": "bob"}), 403, "Forbidden")
        assert_error(c.post("/v1/recall", headers=alice, params={"user_id": "bob"}, json={"query": "locker"}),
                     403, "Forbidden")
        assert_error(c.get(f"/v1/memories/{theirs}", headers=alice), 404, "NotFoundError")
        assert_error(c.delete(f"/v1/memories/{theirs}", headers=alice), 404, "NotFoundError")
        assert c.get(f"/v1/memories/{mine}", headers=alice, params={"user_id": "alice"}).status_code == 200
        hits = c.post("/v1/recall", headers=alice, json={"query": "locker code"}).json()["hits"]
        assert [h["id"] for h in hits] == [mine]
        assert c.get("/v1/stats", headers=bob).json()["memories"] == 1


def test_forget_scope_erases_only_the_keys_user(keyed_server):
    alice = {"Authorization": "Bearer key-alice"}
    bob = {"Authorization": "Bearer key-bob"}
    wipe = {"agent_id": "wipe"}
    with httpx.Client(base_url=keyed_server.url, timeout=30) as c:
        for headers, text in [(alice, "Alice parks on level 2"), (alice, "Alice badge 77"), (bob, "Bob parks on level 3")]:
            assert c.post("/v1/memories", headers=headers, params=wipe, json={"content": text}).status_code == 201
        assert_error(c.delete("/v1/scope", headers=alice, params={**wipe, "user_id": "bob"}), 403, "Forbidden")
        assert_error(c.delete("/v1/scope", params=wipe), 401, "Unauthorized")
        r = c.delete("/v1/scope", headers=alice, params=wipe)
        assert r.status_code == 200 and r.json()["forgotten"] == 2
        assert len(r.json()["receipt"]["memory_ids"]) == 2 and r.json()["receipt"]["scrubbed"] is True
        assert c.get("/v1/memories", headers=alice, params=wipe).json()["memories"] == []
        assert [m["content"] for m in c.get("/v1/memories", headers=bob, params=wipe).json()["memories"]] == [
            "Bob parks on level 3"]


def test_create_app_refuses_malformed_keys(tmp_path):
    with open_memory(tmp_path / "m.db", embedder=EMB) as mem, pytest.raises(ScopeError):
        create_app(mem, api_keys={"k": "not a user"})


# --------------------------------------------------------------------------- concurrency


def test_concurrent_writes_from_several_threads_all_land(open_server):
    user, threads, per_thread = "u-concurrent", 4, 8
    errors: list[str] = []

    def work(t: int) -> None:
        with httpx.Client(base_url=open_server.url, timeout=60) as c:
            for i in range(per_thread):
                r = c.post("/v1/memories", params=as_user(user), json={"content": f"thread {t} wrote note number {i}"})
                if r.status_code != 201:
                    errors.append(r.text)
                r = c.post("/v1/recall", params=as_user(user), json={"query": f"note {i}", "k": 3})
                if r.status_code != 200:
                    errors.append(r.text)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(120)
    assert errors == []
    with httpx.Client(base_url=open_server.url, timeout=30) as c:
        items = c.get("/v1/memories", params=as_user(user)).json()["memories"]
    assert len(items) == len({m["id"] for m in items}) == threads * per_thread
    assert {m["content"] for m in items} == {f"thread {t} wrote note number {i}" for t in range(threads) for i in range(per_thread)}


# --------------------------------------------------------------------------- the serve command


def test_serve_refuses_a_public_host_without_keys(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("ZENBRAIN_API_KEYS", raising=False)
    code = main(["serve", "--host", "0.0.0.0", "--path", str(tmp_path / "m.db"), "--embedder", EMB])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to serve on 0.0.0.0 without API keys")
    assert "--insecure" in lines[0]
    assert not (tmp_path / "m.db").exists()  # refused before the store is opened


def test_api_keys_from_a_file_or_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ZENBRAIN_API_KEYS", raising=False)
    assert load_api_keys(None) is None
    monkeypatch.setenv("ZENBRAIN_API_KEYS", "k1:alice, k2:bob")
    assert load_api_keys(None) == {"k1": "alice", "k2": "bob"}
    f = tmp_path / "keys.json"
    f.write_text(json.dumps({"k3": "carol"}))
    assert load_api_keys(str(f)) == {"k3": "carol"}  # the file wins over the environment
    monkeypatch.setenv("ZENBRAIN_API_KEYS", "k1")
    code = main(["serve", "--path", str(tmp_path / "m.db"), "--embedder", EMB])
    assert code == 2 and "key:user pairs" in capsys.readouterr().err
    f.write_text("[1, 2]")
    code = main(["serve", "--api-keys", str(f), "--path", str(tmp_path / "m.db"), "--embedder", EMB])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "JSON object" in err
    assert not Path(tmp_path / "m.db").exists()


def test_a_superseding_memory_replaces_the_old_one_in_current_recall_only(client):
    u = as_user("u-valid")
    old = store(client, "u-valid", "the team meets on Mondays", event_time=1_700_000_000.0)
    new = store(client, "u-valid", "the standup moved to Thursday mornings", event_time=1_700_500_000.0,
                supersedes=old["id"])
    kept = client.get(f"/v1/memories/{old['id']}", params=u).json()
    assert kept["superseded_by"] == new["id"] and kept["valid_until"] == 1_700_500_000.0
    query = {"query": "when does the team meet", "k": 5, "touch": False}
    now = [h["id"] for h in client.post("/v1/recall", params=u, json=query).json()["hits"]]
    then = [h["id"] for h in client.post("/v1/recall", params=u, json={**query, "as_of": 1_700_100_000.0})
            .json()["hits"]]
    assert now == [new["id"]] and then == [old["id"]]
    r = client.post("/v1/memories", params=u, json={"content": "x", "supersedes": "no-such-id"})
    assert_error(r, 400, "ValidationError")
