#!/usr/bin/env python
"""Load test of the REST server: an open-loop generator against a server in other processes.

What it does, all on 127.0.0.1:

1. Builds (or reuses, ``--workdir``) a store of ``--memories`` memories spread over
   ``--users`` users: LoCoMo dialogue turns (``--data``, default ``$ZENBRAIN_DATA`` or
   ../shared/data), cycled with varied names and words beyond the distinct turns.
2. Starts the server in its own processes: ``python -m zenbrain.server.workers`` with
   ``--workers`` worker processes and the chosen ``--embedder``.
3. For each rate of ``--rates``: sends requests at that fixed rate for ``--seconds``
   (after ``--warmup`` seconds at the same rate that are not counted). Open loop: a
   request is sent at its scheduled time whether or not earlier ones have been answered,
   and its latency counts from that time, so a slow server cannot slow the generator down
   and hide its own queueing. The mix is ``--recall-share`` recalls (POST /v1/recall, k=10,
   a LoCoMo question of a random user) and stores (POST /v1/memories with an
   Idempotency-Key). Each request gives up after ``--client-timeout`` seconds. Beside it a
   probe asks GET /health every 50 ms.
4. Prints per rate: offered and achieved rate (answers with 2xx per second), latency
   p50/p95/p99 of the successful answers, counts of each failure (503 shed, other
   statuses, client timeouts, connection errors), the /health latency (p50, p99, max)
   during the run, and the load average before and after. ``--json`` writes it all.

The generator is a small asyncio HTTP/1.1 client over keep-alive connections (no HTTP
library: httpx costs about a millisecond of CPU a request, which at these rates would take
the cores the server needs). It runs in this process; the server runs in others.

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python scripts/load_rest.py --rates 100,200 --seconds 20
    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python scripts/load_rest.py --embedder minilm-onnx --rates 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("Avery", "Blake", "Carmen", "Dario", "Elena", "Farah", "Gustav", "Hana", "Ibrahim", "Jonas", "Keiko", "Luca")


def say(msg: str = "") -> None:
    print(msg, flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- data


def locomo(data: str | None) -> tuple[list[str], list[str]]:
    """Distinct LoCoMo turns ("Speaker: text") and questions."""
    base = Path(data or os.environ.get("ZENBRAIN_DATA") or ROOT.parent / "shared" / "data")
    file = base / "locomo_dev.json" if base.is_dir() else base
    convs = json.loads(file.read_text())
    turns: dict[str, None] = {}
    for c in convs:
        for key, value in c["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for t in value:
                    turns.setdefault(f"{t['speaker']}: {t['text']}", None)
    questions = list(dict.fromkeys(q["question"] for c in convs for q in c["qa"] if q.get("question")))
    return list(turns), questions


def varied(turns: list[str], n: int, seed: int) -> list[str]:
    """``n`` texts: the distinct turns, then copies with another speaker and three added words."""
    rng = random.Random(seed)
    vocab = sorted({w.lower() for t in turns for w in re.findall(r"[A-Za-z]{4,}", t)})
    out = []
    for i in range(n):
        text = turns[i % len(turns)]
        cycle = i // len(turns)
        if cycle:
            _, _, rest = text.partition(": ")
            text = f"{NAMES[(i * 7 + cycle) % len(NAMES)]}: {rest} (also {' '.join(rng.sample(vocab, 3))})"
        out.append(text)
    return out


def build_store(path: Path, embedder: str, memories: int, users: int, turns: list[str]) -> None:
    from zenbrain import Scope, open_memory

    if path.exists():
        say(f"store: reusing {path}")
        return
    t0 = time.perf_counter()
    texts = varied(turns, memories, seed=0)
    per = memories // users
    with open_memory(path, embedder=embedder) as mem:
        for u in range(users):
            chunk = texts[u * per:(u + 1) * per]
            for i in range(0, len(chunk), 500):
                mem.store_many([{"content": t, "kind": "episode"} for t in chunk[i:i + 500]], Scope(f"user{u}"))
    say(f"store: {memories} memories over {users} users built in {time.perf_counter() - t0:.0f} s ({path})")


# --------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(path: Path, embedder: str, workers: int, port: int, max_active: int, max_queued: int,
                 max_queue_wait: float, durability: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "zenbrain.server.workers", "--path", str(path), "--embedder", embedder,
           "--workers", str(workers), "--port", str(port), "--max-active", str(max_active),
           "--max-queued", str(max_queued), "--max-queue-wait", str(max_queue_wait), "--durability", durability]
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode}); see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not start in 300 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group (start_new_session)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --------------------------------------------------------------------------- the generator


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def request(self, raw: bytes) -> tuple[int, bytes, bool]:
        """The answer's status and body, and whether the server closed the connection
        after it (``Connection: close``: the answer is complete, the connection not reusable)."""
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        body = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, body, close

    def close(self) -> None:
        self.writer.close()


def http(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{extra}\r\n").encode() + data


@dataclass
class Result:
    kind: str
    latency: float
    status: int  # 0: client timeout, -1: connection error


@dataclass
class Run:
    rate: float
    seconds: float
    results: list[Result] = field(default_factory=list)
    health: list[float] = field(default_factory=list)
    health_failures: int = 0
    saturated: int = 0  # requests the generator could not send (no connection left)
    stores_ok: int = 0  # stores answered 2xx, warm-up included
    stores_unanswered: int = 0  # stores without an answer (timeout, broken connection), warm-up included


async def run_rate(port: int, rate: float, seconds: float, warmup: float, recall_share: float, users: int,
                   questions: list[str], new_texts: list[str], client_timeout: float, seed: int,
                   touch: bool = True, max_conns: int = 1024) -> Run:
    rng = random.Random(seed)
    idle: list[Conn] = []
    open_conns = 0
    run = Run(rate, seconds)
    t_start = time.perf_counter() + 0.2
    t_count = t_start + warmup
    t_end = t_count + seconds
    pending: set[asyncio.Task[None]] = set()

    async def connection() -> tuple[Conn | None, bool]:
        """An idle keep-alive connection (reused: True) or a new one; None when none is left."""
        nonlocal open_conns
        if idle:
            return idle.pop(), True
        if open_conns >= max_conns:
            return None, False
        open_conns += 1
        try:
            return await Conn.open(port), False
        except OSError:
            open_conns -= 1
            raise

    async def one(at: float, kind: str, raw: bytes) -> None:
        nonlocal open_conns
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        counted = at >= t_count
        for attempt in (1, 2):  # a reused connection the server closed meanwhile is retried once on a new one
            try:
                conn, reused = await connection()
            except OSError:
                if counted:
                    run.results.append(Result(kind, time.perf_counter() - at, -1))
                return
            if conn is None:
                if counted:
                    run.saturated += 1
                return
            try:
                status, _, closed = await asyncio.wait_for(conn.request(raw), client_timeout - (time.perf_counter() - at))
            except (TimeoutError, ValueError):  # ValueError: no time was left
                conn.close()
                open_conns -= 1
                run.stores_unanswered += kind == "store"
                if counted:
                    run.results.append(Result(kind, client_timeout, 0))
                return
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                conn.close()
                open_conns -= 1
                if reused and attempt == 1:
                    continue
                run.stores_unanswered += kind == "store"
                if counted:
                    run.results.append(Result(kind, time.perf_counter() - at, -1))
                return
            if closed:
                open_conns -= 1
            else:
                idle.append(conn)
            run.stores_ok += kind == "store" and 200 <= status < 300
            if counted:
                run.results.append(Result(kind, time.perf_counter() - at, status))
            return

    async def probe() -> None:
        conn: Conn | None = None
        while time.perf_counter() < t_end:
            t = time.perf_counter()
            try:
                conn = conn or await Conn.open(port)
                await asyncio.wait_for(conn.request(http("GET", "/health")), 10)
                if t >= t_count:
                    run.health.append(time.perf_counter() - t)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                if conn is not None:
                    conn.close()
                conn = None
                if t >= t_count:
                    run.health_failures += 1
            await asyncio.sleep(max(0.0, 0.05 - (time.perf_counter() - t)))
        if conn is not None:
            conn.close()

    prober = asyncio.create_task(probe())
    n = int((warmup + seconds) * rate)
    run_mark = uuid.uuid4().hex[:8]
    for i in range(n):
        at = t_start + i / rate
        user = f"user{rng.randrange(users)}"
        if rng.random() < recall_share:
            kind = "recall"
            raw = http("POST", f"/v1/recall?user_id={user}", {"query": rng.choice(questions), "k": 10, "touch": touch})
        else:
            kind = "store"
            # Numbered within the run and marked with the run, so no two stores repeat a text
            # (runs on one store draw the same sequence): an exact repeat is answered with the
            # memory already stored (no new row), which would blur "acknowledged = added".
            raw = http("POST", f"/v1/memories?user_id={user}",
                       {"content": f"{rng.choice(new_texts)} (note {run_mark}-{i})"},
                       {"Idempotency-Key": uuid.uuid4().hex})  # unique in every run: a replay would not write
        # Tasks are created a little ahead of their time and sleep until it.
        while at - time.perf_counter() > 0.05:
            await asyncio.sleep(0.01)
        task = asyncio.create_task(one(at, kind, raw))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.wait(pending)
    await prober
    for c in idle:
        c.close()
    return run


def count_memories(port: int, users: int) -> int:
    """Every user's memory count, through GET /v1/stats (outside any run)."""
    async def count() -> int:
        conn = await Conn.open(port)
        total = 0
        for u in range(users):
            status, body, _ = await conn.request(http("GET", f"/v1/stats?user_id=user{u}"))
            assert status == 200, body
            total += int(json.loads(body)["memories"])
        conn.close()
        return total
    return asyncio.run(count())


def summarize(run: Run, load_before: str, load_after: str) -> dict[str, Any]:
    ok = [r for r in run.results if 200 <= r.status < 300]
    lat = np.array([r.latency for r in ok]) * 1000 if ok else np.array([np.nan])
    statuses = Counter(r.status for r in run.results if not 200 <= r.status < 300)
    health = np.array(run.health) * 1000 if run.health else np.array([np.nan])
    shed = np.array([r.latency for r in run.results if r.status == 503]) * 1000
    shed = shed if shed.size else np.array([np.nan])
    by_kind = {k: round(float(np.percentile([r.latency * 1000 for r in ok if r.kind == k], 95)), 1)
               for k in ("recall", "store") if any(r.kind == k for r in ok)}
    return {
        "offered_per_s": run.rate,
        "achieved_per_s": round(len(ok) / run.seconds, 1),
        "sent": len(run.results) + run.saturated,
        "ok": len(ok),
        "p50_ms": round(float(np.percentile(lat, 50)), 1),
        "p95_ms": round(float(np.percentile(lat, 95)), 1),
        "p99_ms": round(float(np.percentile(lat, 99)), 1),
        "p95_ms_by_kind": by_kind,
        "shed_503": statuses.pop(503, 0),
        "shed_p50_ms": round(float(np.percentile(shed, 50)), 1),
        "shed_p95_ms": round(float(np.percentile(shed, 95)), 1),
        "client_timeouts": statuses.pop(0, 0),
        "connection_errors": statuses.pop(-1, 0),
        "other_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "generator_saturated": run.saturated,
        "health_p50_ms": round(float(np.percentile(health, 50)), 1),
        "health_p99_ms": round(float(np.percentile(health, 99)), 1),
        "health_max_ms": round(float(np.max(health)), 1),
        "health_failures": run.health_failures,
        "stores_acknowledged": run.stores_ok,  # warm-up included, as memories_added counts it
        "stores_unanswered": run.stores_unanswered,
        "load_before": load_before,
        "load_after": load_after,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="hashing:384")
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-active", type=int, default=1, help="requests one worker runs at once")
    ap.add_argument("--max-queued", type=int, default=8, help="requests one worker queues")
    ap.add_argument("--max-queue-wait", type=float, default=0.25, help="seconds a request may wait in the queue")
    ap.add_argument("--durability", choices=["full", "process"], default="full",
                    help="the store's durability (full: fsync at every commit)")
    ap.add_argument("--rates", default="50,100,200", help="requests per second, comma-separated")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--recall-share", type=float, default=0.8)
    ap.add_argument("--read-only-recall", action="store_true",
                    help="recall with touch=false (no access bookkeeping written); default: as the API does")
    ap.add_argument("--client-timeout", type=float, default=5.0)
    ap.add_argument("--data", default=None)
    ap.add_argument("--workdir", default="/tmp/zenbrain-load")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.seconds > 120 or args.memories > 200_000:
        ap.error("kept bounded: at most 120 s per rate and 200k memories")
    rates = [float(r) for r in args.rates.split(",") if r.strip()]

    turns, questions = locomo(args.data)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    db = work / f"load-{args.embedder.replace(':', '')}-{args.memories}-{args.users}.db"
    build_store(db, args.embedder, args.memories, args.users, turns)
    new_texts = varied(turns, 3 * len(turns), seed=7)[len(turns):]
    port = free_port()
    log = work / "server.log"
    say(f"server: {args.workers} worker(s), embedder {args.embedder}, durability {args.durability}, "
        f"recall touch={not args.read_only_recall}, 127.0.0.1:{port} (log {log}); "
        f"load average {load_average()}")
    proc = start_server(db, args.embedder, args.workers, port, args.max_active, args.max_queued, args.max_queue_wait,
                        args.durability, log)
    out: list[dict[str, Any]] = []
    try:
        try:
            import uvloop
            runner = uvloop.run
        except ImportError:
            runner = asyncio.run
        for i, rate in enumerate(rates):
            before = load_average()
            stored_before = count_memories(port, args.users)
            run = runner(run_rate(port, rate, args.seconds, args.warmup, args.recall_share, args.users, questions,
                                  new_texts, args.client_timeout, args.seed + i, touch=not args.read_only_recall))
            s = summarize(run, before, load_average())
            time.sleep(1)  # stores of the warm-up and of the last requests have finished
            s["memories_added"] = count_memories(port, args.users) - stored_before
            out.append(s)
            say(f"rate {rate:.0f}/s: achieved {s['achieved_per_s']}/s ok, p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, "
                f"p99 {s['p99_ms']} ms {s['p95_ms_by_kind']}; shed 503 {s['shed_503']} (answered in p50 "
                f"{s['shed_p50_ms']} / p95 {s['shed_p95_ms']} ms), timeouts "
                f"{s['client_timeouts']}, conn errors {s['connection_errors']}, other {s['other_statuses']}; "
                f"/health p50 {s['health_p50_ms']} ms p99 {s['health_p99_ms']} ms max {s['health_max_ms']} ms "
                f"failed {s['health_failures']}; stores acknowledged {s['stores_acknowledged']}, "
                f"unanswered {s['stores_unanswered']}, memories added {s['memories_added']}; "
                f"load {s['load_before']} -> {s['load_after']}")
            time.sleep(2)
    finally:
        stop_server(proc)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": out}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
