"""Several server processes, one PostgreSQL database: ``zenbrain serve --workers 2`` and a
second server beside it, written to and recalled from concurrently by many clients.
Nothing is lost, nobody reads another user's memories, nothing deadlocks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from postgres_server import new_schema_url

pytest.importorskip("psycopg")
pytest.importorskip("uvicorn")

USERS = [f"user{i}" for i in range(6)]
PER_USER = 12


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(url: str, port: int, workers: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "zenbrain.cli", "serve", "--path", url, "--embedder", "hashing:64", "--port", str(port),
         "--workers", str(workers)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_ready(base: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not start")


@pytest.fixture(scope="module")
def servers():
    url = new_schema_url("rest")
    ports = [_free_port(), _free_port()]
    procs = [_serve(url, ports[0], 2)]
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    try:
        _wait_ready(bases[0], procs[0])  # the first server creates the schema; the second opens it
        procs.append(_serve(url, ports[1], 1))
        _wait_ready(bases[1], procs[1])
        yield bases
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def _post(client: httpx.Client, path: str, **kw) -> httpx.Response:
    """POST as a well-behaved client does: a shed request (429/503 with Retry-After) was not
    carried out, so it is sent again after the time the server asks for."""
    for _ in range(50):
        r = client.post(path, **kw)
        if r.status_code not in (429, 503) or "retry-after" not in r.headers:
            return r
        time.sleep(min(float(r.headers["retry-after"]), 2.0))
    return r


def test_concurrent_writers_and_readers_on_three_processes(servers):
    clients = [httpx.Client(base_url=b, timeout=60) for b in servers]

    def write(job: tuple[int, str, int]) -> tuple[str, str]:
        n, user, i = job
        r = _post(clients[n % len(clients)], "/v1/memories", params={"user_id": user},
                                           json={"content": f"{user} secret number {i} about topic{i} of {user}"})
        assert r.status_code == 201, r.text
        return user, r.json()["id"]

    def recall(job: tuple[int, str]) -> None:
        n, user = job
        r = _post(clients[n % len(clients)], "/v1/recall", params={"user_id": user},
                                           json={"query": f"secret topic{n % PER_USER} user0 user1 user2", "k": 10})
        assert r.status_code == 200, r.text
        for hit in r.json()["hits"]:
            assert hit["content"].endswith(f"of {user}"), (user, hit["content"])  # never another user's

    jobs = [(n, user, i) for n, (i, user) in enumerate((i, u) for i in range(PER_USER) for u in USERS)]
    with ThreadPoolExecutor(12) as ex:
        writes = ex.map(write, jobs)
        recalls = ex.map(recall, [(n, USERS[n % len(USERS)]) for n in range(60)])
        stored = list(writes)
        list(recalls)
    ids: dict[str, set[str]] = {}
    for user, mid in stored:
        ids.setdefault(user, set()).add(mid)
    for n, user in enumerate(USERS):
        r = clients[n % 2].get("/v1/memories", params={"user_id": user, "limit": 500})
        assert r.status_code == 200, r.text
        assert {m["id"] for m in r.json()["memories"]} == ids[user]  # every write, no other user's

    # One memory recalled by many clients through every process: no access is lost.
    target = next(iter(ids["user0"]))
    content = clients[0].get(f"/v1/memories/{target}", params={"user_id": "user0"}).json()["content"]
    before = clients[0].get(f"/v1/memories/{target}", params={"user_id": "user0"}).json()["access_count"]

    def recall_target(n: int) -> int:
        r = _post(clients[n % 2], "/v1/recall", params={"user_id": "user0"}, json={"query": content, "k": 1})
        assert r.status_code == 200, r.text
        return int(r.json()["hits"][0]["id"] == target)

    with ThreadPoolExecutor(8) as ex:
        found = sum(ex.map(recall_target, range(40)))
    after = clients[1].get(f"/v1/memories/{target}", params={"user_id": "user0"}).json()["access_count"]
    assert after - before == found == 40
    for c in clients:
        c.close()


def test_one_idempotency_key_sent_to_every_process_writes_once(servers):
    """Retries of one request reach different processes at once: the key's record, claimed
    in the write's own transaction, lets one of them write; the others answer with its
    result (or 409 while it is in progress), and a later retry replays it."""
    key = {"Idempotency-Key": "pg-retry-4b1e"}
    user = {"user_id": "idem"}
    body = {"content": "written exactly once across processes"}

    def post(n: int) -> httpx.Response:
        return httpx.post(servers[n % len(servers)] + "/v1/memories", params=user, json=body, headers=key, timeout=60)

    with ThreadPoolExecutor(6) as ex:
        answers = list(ex.map(post, range(6)))
    assert all(a.status_code in (201, 409) for a in answers), [a.text for a in answers]
    ids = {a.json()["id"] for a in answers if a.status_code == 201}
    assert len(ids) == 1
    final = post(1)
    assert final.status_code == 201 and final.json()["id"] in ids and final.headers.get("idempotent-replayed") == "true"
    listed = httpx.get(servers[0] + "/v1/memories", params={**user, "limit": 50}, timeout=60).json()["memories"]
    assert [m["id"] for m in listed] == list(ids)
    # Erasing the memory erases the record that returned it: the key is free again.
    gone = httpx.delete(servers[1] + f"/v1/memories/{final.json()['id']}", params=user, timeout=60)
    assert gone.status_code == 200 and gone.json()["scrubbed"] is True and gone.json()["requests"] == 1, gone.text
    again = post(0)
    assert again.status_code == 201 and again.json()["id"] not in ids and "idempotent-replayed" not in again.headers
