"""What happens to a request around the routes: bounded bodies, admission with a bounded
queue, a deadline, noticing a client that gave up, and errors that never drop the
connection.

* Body. A body over ``max_body_bytes`` gets 413 before anything else runs, whether it
  declares its length or streams it in chunks.
* Admission. At most ``max_active`` requests under ``/v1`` run at once in one server
  process; up to ``max_queued`` more wait, each at most ``max_queue_wait_s`` (and never
  past its deadline). Anything beyond is shed at once with 503, ``Retry-After`` and
  ``Connection: close`` (a retry then reaches whichever process accepts a new
  connection first): an overloaded server answers quickly instead of letting every
  request time out, and
  ``/health``, the docs and the dashboard's files are never queued.
* Deadline. Every request has one: ``X-Request-Timeout`` (seconds, at most
  ``max_timeout_s``) or ``default_timeout_s``. ``RequestContext.check`` raises
  ``DeadlineExceeded`` once it has passed or once the client has disconnected; the
  server calls it before an operation starts and right before its transaction commits,
  so a request whose client gave up commits nothing.
* Errors. An exception no handler knows becomes a 500 JSON answer here, and the
  connection stays open (Starlette's own last-resort handler closes it).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from . import admission

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

log = logging.getLogger("zenbrain.server")

TIMEOUT_HEADER = b"x-request-timeout"


@dataclass(frozen=True)
class Limits:
    """Admission and deadline settings of one server process."""

    max_body_bytes: int = 8 * 1024 * 1024
    max_active: int = admission.MAX_ACTIVE  # requests under /v1 running at once
    max_queued: int = admission.MAX_QUEUED  # requests under /v1 waiting to run
    max_queue_wait_s: float = admission.MAX_QUEUE_WAIT_S  # a request waits this long at most before it is shed
    default_timeout_s: float = 30.0  # a request's deadline unless it asks for another
    max_timeout_s: float = 300.0  # the longest deadline a request may ask for
    retry_after_s: int = 1  # what a shed request is told to wait


class DeadlineExceeded(Exception):
    """The request's deadline passed, or its client disconnected: nothing more is done
    (and nothing is committed) for it."""


class Overloaded(Exception):
    """The request could not start in time (the queue is full or too slow)."""


class Refused(Exception):
    """A request answered without running its route: ``status`` with ``body`` (JSON of
    ``name`` and ``message`` when None) and ``headers``."""

    def __init__(self, status: int, name: str, message: str, *, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.name = name
        self.message = message
        self.body = body
        self.headers = dict(headers or {})


@dataclass
class RequestContext:
    """One request's deadline and state, reachable from the route's worker thread."""

    deadline: float  # time.monotonic() by which the request must be answered
    gone: threading.Event = field(default_factory=threading.Event)  # the client disconnected
    idempotency_key: str | None = None
    fingerprint: str = ""
    owner: str = ""  # this request's unique token in an idempotency record
    claimed: tuple[str, str] | None = None  # the partition whose record this request claimed
    status: int = 0
    body: bytes = b""

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        if self.gone.is_set():
            raise DeadlineExceeded("the client disconnected; the request was abandoned and nothing was committed")
        if self.remaining() <= 0:
            raise DeadlineExceeded("the request's deadline passed before it could finish; nothing was committed")


_CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("zenbrain_request", default=None)


def current_request() -> RequestContext | None:
    """The request being served (None outside a request, e.g. in a test calling a route)."""
    return _CURRENT.get()


def error_body(status: int, name: str, message: str, headers: list[tuple[bytes, bytes]] | None = None,
               ) -> tuple[Message, Message]:
    body = json.dumps({"error": name, "message": message}).encode()
    start: Message = {"type": "http.response.start", "status": status,
                      "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                  *(headers or [])]}
    return start, {"type": "http.response.body", "body": body}


class Guard:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: App, limits: Limits = Limits(), *,
                 on_request: Callable[[RequestContext, MutableMapping[str, Any], bytes], None] | None = None,
                 on_response: Callable[[RequestContext], Awaitable[None]] | None = None) -> None:
        self.app = app
        self.limits = limits
        self.on_request = on_request  # notes what the request carries (an idempotency key); may raise Refused
        self.on_response = on_response  # after the answer went out (an idempotency record keeps it)
        self._active = 0
        self._queued = 0
        self._slots: asyncio.Semaphore | None = None
        self.shed = 0  # requests refused by admission so far

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limits.max_body_bytes):
            await self._refuse(send, 413, "PayloadTooLarge", f"the request body is over {self.limits.max_body_bytes} bytes",
                               close=True)
            return
        chunks = await self._read_body(receive)
        if chunks is None:
            await self._refuse(send, 413, "PayloadTooLarge", f"the request body is over {self.limits.max_body_bytes} bytes",
                               close=True)
            return
        ctx = RequestContext(deadline=time.monotonic() + self._timeout(headers.get(TIMEOUT_HEADER)))
        if self.on_request is not None:
            try:
                self.on_request(ctx, scope, b"".join(m.get("body", b"") for m in chunks))
            except Refused as exc:
                await self._refuse(send, exc.status, exc.name, exc.message)
                return
        admitted = str(scope.get("path", "")).startswith("/v1/")
        if admitted and not await self._admit(ctx):
            self.shed += 1
            # The answer closes its connection: the client's next request goes out on a new
            # one, which the operating system hands to a server process free to accept it,
            # where a kept-alive connection would bring it back to this full one (at 200
            # requests/s offered, one of two processes ran at 92 % CPU, the other at 39 %).
            await self._refuse(send, 503, "Overloaded", "the server is at capacity; retry after the time in "
                               "Retry-After", retry=True, close=True)
            return
        try:
            await self._serve(scope, receive, send, chunks, ctx)
        finally:
            if admitted:
                self._leave()

    # -- admission ---------------------------------------------------------------------------
    async def _admit(self, ctx: RequestContext) -> bool:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_active)
        if not self._slots.locked():
            # A free slot is taken here and now. Through wait_for (a task of its own on
            # Python 3.11) it was taken an event-loop turn later: a burst read in one turn
            # then found the slot still free, every request of it joined the queue, and
            # none was refused at once; they waited out the queue's bound instead.
            await self._slots.acquire()
            self._active += 1
            return True
        if self._queued >= self.limits.max_queued:
            return False
        self._queued += 1
        try:
            wait = min(self.limits.max_queue_wait_s, ctx.remaining())
            await asyncio.wait_for(self._slots.acquire(), timeout=max(0.0, wait))
        except TimeoutError:
            return False
        finally:
            self._queued -= 1
        self._active += 1
        return True

    def _leave(self) -> None:
        self._active -= 1
        if self._slots is not None:
            self._slots.release()

    def _timeout(self, raw: bytes | None) -> float:
        if raw is None:
            return self.limits.default_timeout_s
        try:
            value = float(raw)
        except ValueError:
            return self.limits.default_timeout_s
        if not math.isfinite(value) or value <= 0:
            return self.limits.default_timeout_s
        return min(value, self.limits.max_timeout_s)

    # -- serving -----------------------------------------------------------------------------
    async def _read_body(self, receive: Receive) -> list[Message] | None:
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                return chunks
            size += len(message.get("body", b""))
            if size > self.limits.max_body_bytes:
                return None
            if not message.get("more_body", False):
                return chunks

    async def _serve(self, scope: MutableMapping[str, Any], receive: Receive, send: Send, chunks: list[Message],
                     ctx: RequestContext) -> None:
        loop = asyncio.get_running_loop()
        gone: asyncio.Future[Message] = loop.create_future()

        async def watch() -> None:
            """The next message after the body is the client leaving (or the answer completing)."""
            message = await receive()
            ctx.gone.set()
            if not gone.done():
                gone.set_result(message)

        watcher = loop.create_task(watch()) if chunks and chunks[-1]["type"] == "http.request" else None
        if watcher is None:
            ctx.gone.set()  # the client left while the body was read

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await asyncio.shield(gone)

        started = False

        async def tap(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                ctx.status = int(message["status"])
            elif message["type"] == "http.response.body" and ctx.claimed is not None:
                ctx.body += message.get("body", b"")
            await send(message)

        token = _CURRENT.set(ctx)
        try:
            await self.app(scope, replay, tap)
        except Exception:
            log.exception("unexpected error serving %s %s", scope.get("method"), scope.get("path"))
            if not started:
                start, body = error_body(500, "InternalServerError", "unexpected error; the server's log has details")
                await send(start)
                await send(body)
        finally:
            _CURRENT.reset(token)
            if watcher is not None and not watcher.done():
                watcher.cancel()
        if self.on_response is not None and ctx.claimed is not None:
            try:
                await self.on_response(ctx)
            except Exception:  # the answer is out already; a retry will find the record pending
                log.exception("could not record the response of an idempotent request")

    async def _refuse(self, send: Send, status: int, name: str, message: str, *, retry: bool = False,
                      close: bool = False) -> None:
        extra = [(b"retry-after", str(self.limits.retry_after_s).encode())] if retry else []
        if close:
            extra.append((b"connection", b"close"))
        start, body = error_body(status, name, message, extra)
        await send(start)
        await send(body)


__all__ = ["DeadlineExceeded", "Guard", "Limits", "Overloaded", "RequestContext", "current_request", "error_body"]
