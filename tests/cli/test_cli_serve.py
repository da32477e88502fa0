"""``zenbrain serve --workers N --durability ...``: a real server in its own processes on
127.0.0.1, its workers found through /proc, requests over HTTP."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cli_helpers import EMB

from zenbrain import Scope
from zenbrain.cli import main
from zenbrain.cli_support import open_store
from zenbrain.errors import ConfigError

SRC = str(Path(__file__).resolve().parents[2] / "src")

pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_API_KEYS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in status:
            found.append(int(entry))
    return found


def _worker_settings(pid: int) -> dict | None:
    """The settings a uvicorn worker process of ``pid`` started with, or None for other children."""
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    if b"spawn_main" not in cmdline:
        return None
    environ = dict(v.split(b"=", 1) for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in v)
    return json.loads(environ[b"ZENBRAIN_SERVE"])


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not start: " + log.read_text())


def test_serve_with_two_worker_processes_on_one_store(tmp_path):
    db, port, log = tmp_path / "m.db", _free_port(), tmp_path / "serve.log"
    argv = [sys.executable, "-m", "zenbrain.cli", "serve", "--path", str(db), *EMB, "--port", str(port),
            "--workers", "2", "--durability", "process", "--off", "bm25_hybrid",
            "--max-active", "3", "--max-queued", "5", "--max-queue-wait", "0.5"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_healthy(url, proc, log)
        workers = [s for s in map(_worker_settings, _children(proc.pid)) if s is not None]
        assert len(workers) == 2
        for settings in workers:  # what each worker opened the store with
            assert settings["path"] == str(db) and settings["embedder"] == "hashing:384"
            assert settings["durability"] == "process" and settings["off"] == ["bm25_hybrid"]
            assert settings["read_only"] is False
            limits = settings["limits"]
            assert (limits["max_active"], limits["max_queued"], limits["max_queue_wait_s"]) == (3, 5, 0.5)
        for i in range(8):  # a new connection each: the kernel hands them to either worker
            r = httpx.post(url + "/v1/memories", params={"user_id": "ana"},
                           json={"content": f"note {i}: Ana waters the garden"}, timeout=30)
            assert r.status_code == 201, r.text
        for _ in range(4):  # every worker sees every write, and runs with the mechanism off
            listed = httpx.get(url + "/v1/memories", params={"user_id": "ana", "limit": 100}, timeout=30).json()
            assert len(listed["memories"]) == 8
            stats = httpx.get(url + "/v1/stats", params={"user_id": "ana"}, timeout=30).json()
            assert stats["mechanisms_off"] == ["bm25_hybrid"] and stats["memories"] == 8
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    text = log.read_text()
    assert "durability process" in text and "2 worker processes" in text
    assert main(["check", str(db)]) == 0  # closed cleanly, every note in the file


def test_durability_reaches_the_store():
    def synchronous(durability: str, path: str) -> int:
        args = argparse.Namespace(path=path, embedder="hashing:384", off=[])
        with open_store(args, create=True, durability=durability) as mem:
            return int(mem.storage.raw_connection().execute("PRAGMA synchronous").fetchone()[0])

    path = os.environ["ZENBRAIN_PATH"]
    assert synchronous("full", path) == 2 and synchronous("process", path) == 1  # FULL, NORMAL


def test_worker_processes_get_every_serve_option(monkeypatch, tmp_path):
    """What ``serve --workers N`` hands to the worker processes (``server.workers.serve``);
    without keys or --insecure a public host is refused before anything starts."""
    from zenbrain.server import workers

    db, calls, serve = tmp_path / "m.db", [], workers.serve
    monkeypatch.setattr(workers, "serve", lambda path, **kw: calls.append((path, kw)))
    argv = ["serve", "--path", str(db), *EMB, "--workers", "3", "--host", "0.0.0.0", "--insecure", "--port", "9",
            "--durability", "process", "--off", "fsrs", "--max-active", "7", "--max-queued", "0",
            "--max-queue-wait", "1.5"]
    assert main(argv) == 0
    assert main([*argv, "--read-only"]) == 0
    (path, kw), (_, ro) = calls
    assert path == str(db) and kw["embedder"] == "hashing:384" and (kw["host"], kw["port"], kw["workers"]) == ("0.0.0.0", 9, 3)
    assert kw["insecure"] and not kw["read_only"] and ro["read_only"] and kw["api_keys"] is None
    assert kw["durability"] == "process" and kw["off"] == ["fsrs"]
    assert (kw["limits"].max_active, kw["limits"].max_queued, kw["limits"].max_queue_wait_s) == (7, 0, 1.5)
    with pytest.raises(ConfigError, match="refusing to serve on 0.0.0.0 without API keys"):
        serve(str(db), embedder="hashing:384", host="0.0.0.0", workers=2)


def test_serve_refuses_bad_options(capsys, tmp_path):
    db = tmp_path / "m.db"
    code = main(["serve", "--path", str(db), *EMB, "--host", "0.0.0.0", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: refusing to serve on 0.0.0.0 without API keys") and "--insecure" in err
    assert not db.exists()
    for bad in ("0", "65", "two"):
        assert main(["serve", "--path", str(db), *EMB, "--workers", bad]) == 2
        assert "--workers" in capsys.readouterr().err
    assert main(["serve", "--path", str(db), *EMB, "--durability", "sometimes"]) == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err
    for option, bad in (("--max-active", "0"), ("--max-queued", "-1"), ("--max-queue-wait", "nan"),
                        ("--max-queue-wait", "soon")):
        assert main(["serve", "--path", str(db), *EMB, option, bad]) == 2
        assert option in capsys.readouterr().err


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_read_only_answers_reads_and_refuses_writes(tmp_path, workers):
    db, port, log = tmp_path / "m.db", _free_port(), tmp_path / "serve.log"
    with open_store(argparse.Namespace(path=str(db), embedder="hashing:384", off=[]), create=True) as mem:
        mem.store("Ana waters the garden at dawn", Scope("ana"))
    before = db.read_bytes()
    argv = [sys.executable, "-m", "zenbrain.cli", "serve", "--path", str(db), *EMB, "--port", str(port), "--read-only",
            "--workers", str(workers), "--max-active", "2", "--max-queued", "4"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_healthy(url, proc, log)
        if workers > 1:  # every worker opened the store read-only, with the limits given
            settings = [s for s in map(_worker_settings, _children(proc.pid)) if s is not None]
            assert len(settings) == workers
            assert all(s["read_only"] and (s["limits"]["max_active"], s["limits"]["max_queued"]) == (2, 4)
                       for s in settings)
        for _ in range(2 * workers):  # a new connection each: the kernel hands them to any worker
            r = httpx.post(url + "/v1/recall", params={"user_id": "ana"}, json={"query": "garden", "k": 1}, timeout=30)
            assert r.status_code == 200 and r.json()["hits"][0]["content"] == "Ana waters the garden at dawn"
            r = httpx.post(url + "/v1/memories", params={"user_id": "ana"}, json={"content": "must not land"},
                           timeout=30)
            assert r.status_code == 403 and r.headers["content-type"] == "application/problem+json"
            assert r.json()["error"] == "ReadOnlyStoreError" and "read-only" in r.json()["message"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    text = log.read_text()
    assert "read-only" in text and "2 at once, 4 queued" in text
    assert db.read_bytes() == before and not (tmp_path / "m.activity.db").exists()
