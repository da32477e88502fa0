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

from zenbrain.cli import main
from zenbrain.cli_support import open_store

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
            "--workers", "2", "--durability", "process", "--off", "bm25_hybrid"]
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


def test_several_workers_refuse_a_public_host_without_keys(capsys, tmp_path):
    db = tmp_path / "m.db"
    code = main(["serve", "--path", str(db), *EMB, "--host", "0.0.0.0", "--insecure", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --insecure serves from one process only") and "--api-keys" in err
    assert not db.exists()
    for bad in ("0", "65", "two"):
        assert main(["serve", "--path", str(db), *EMB, "--workers", bad]) == 2
        assert "--workers" in capsys.readouterr().err
    assert main(["serve", "--path", str(db), *EMB, "--durability", "sometimes"]) == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err
