"""Idempotency keys on writes: a retried request with the same ``Idempotency-Key`` gets
the first request's answer instead of writing twice.

A write request (POST, PATCH, DELETE) may carry ``Idempotency-Key: <1-200 printable
characters>``. Keys belong to the (user, agent) the request acts for. The server:

1. looks the key up before the operation: a finished request's answer is replayed
   (``Idempotent-Replayed: true``); one still running gets 409 with ``Retry-After``; the
   same key on a different request (method, path, query or body) gets 422;
2. claims the key inside the operation's own transaction, right before it commits
   (``SQLiteStore.before_commit``): the write and its record commit together or not at
   all, and of two concurrent requests with one key only the first to commit writes -
   the other's transaction rolls back and it answers as in 1;
3. records the answer once it has gone out.

So a write is never committed without a record the client can find with its key, even
if the answer is lost (the client timed out, the connection broke): the retry gets it.
Records expire after ``RETENTION_S``; erasing a memory erases the records that returned it.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol, runtime_checkable

from ..model import Scope
from .guard import Refused, RequestContext
from .limits import IDEMPOTENCY_KEY_PATTERN

HEADER = b"idempotency-key"
MAX_KEY_CHARS = 200
RETENTION_S = 24 * 3600.0
EXPIRE_EVERY_S = 600.0  # how often one server process purges expired records


@runtime_checkable
class RequestStore(Protocol):
    """What the store must offer (``SQLiteStore`` does)."""

    def request(self, partition: tuple[str, str], key: str) -> Any: ...

    def before_commit(self, hook: Callable[[Any], None]) -> Any: ...


class DuplicateRequest(Exception):
    """Raised inside a transaction when another request with the key committed first."""


def prepare(ctx: RequestContext, scope: MutableMapping[str, Any], body: bytes) -> None:
    """Note a write request's key and fingerprint in its context (``Guard.on_request``)."""
    method = str(scope.get("method", ""))
    key = dict(scope.get("headers") or []).get(HEADER)
    if key is None or method not in ("POST", "PATCH", "DELETE", "PUT"):
        return
    path = str(scope.get("path", ""))
    query = bytes(scope.get("query_string", b""))
    text = key.decode("latin-1")
    if not re.fullmatch(IDEMPOTENCY_KEY_PATTERN, text):
        raise Refused(422, "RequestValidationError",
                      f"Idempotency-Key must be 1-{MAX_KEY_CHARS} visible ASCII characters (no spaces)")
    ctx.idempotency_key = text
    ctx.fingerprint = hashlib.sha256(b"\0".join([method.encode(), path.encode(), query, body])).hexdigest()
    ctx.owner = uuid.uuid4().hex


def replay_if_known(store: RequestStore, scope: Scope, ctx: RequestContext) -> None:
    """Raise the answer of a request already made with this key (see the module docstring)."""
    key = ctx.idempotency_key
    if key is None:
        return
    rec = store.request((scope.user_id, scope.agent_id), key)
    if rec is None:
        return
    if rec.fingerprint != ctx.fingerprint:
        raise Refused(422, "IdempotencyKeyReused",
                               "this Idempotency-Key was used for a different request; use a new key")
    if rec.status is None:
        raise Refused(409, "RequestInProgress",
                               "a request with this Idempotency-Key is in progress (or its answer was lost in a "
                               f"crash; it wrote memories {rec.memory_ids}); retry later",
                               headers={"Retry-After": "1"})
    raise Refused(int(rec.status), "", "", body=(rec.response or "").encode(),
                           headers={"Idempotent-Replayed": "true"})


class Claimer:
    """The before-commit hook of one request: deadline first, then the key's record."""

    def __init__(self, ctx: RequestContext, scope: Scope | None) -> None:
        self.ctx = ctx
        self.partition = (scope.user_id, scope.agent_id) if scope is not None else None

    def __call__(self, tx: Any) -> None:
        self.ctx.check()
        key = self.ctx.idempotency_key
        if key is None or self.partition is None:
            return
        now = time.time()
        if _expiry_due(now):
            tx.expire_requests(now - RETENTION_S)
        if tx.claim_request(self.partition, key, self.ctx.fingerprint, self.ctx.owner, now) != self.ctx.owner:
            raise DuplicateRequest(key)
        self.ctx.claimed = self.partition


_last_expiry = [0.0]


def _expiry_due(now: float) -> bool:
    if now - _last_expiry[0] < EXPIRE_EVERY_S:
        return False
    _last_expiry[0] = now
    return True


def record_answer(store: Any, ctx: RequestContext) -> None:
    """Keep the answer of a request that claimed its key (run after it went out)."""
    if ctx.claimed is None or ctx.idempotency_key is None:
        return
    with store.transaction(durable=False) as tx:
        tx.finish_request(ctx.claimed, ctx.idempotency_key, ctx.owner, ctx.status or 200, ctx.body.decode("utf-8"))


__all__ = ["HEADER", "Claimer", "DuplicateRequest", "RequestStore", "prepare", "record_answer", "replay_if_known"]
