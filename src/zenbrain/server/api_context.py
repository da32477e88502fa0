"""What every group of REST routes shares: the coordinator behind its gate, the scope
dependency (authentication), the activity log, and the documented error responses.
``rest.create_app`` builds one ``ApiContext`` and hands it to each route group.

Every coordinator call goes through ``ApiContext.call`` (or ``run`` for a block of
calls): it waits for the gate (reads side by side, a write alone) no longer than the
request's deadline, checks the deadline again before starting, replays the answer of an
idempotent request made before, and installs the hook that, right before the operation's
transaction commits, checks the deadline once more and claims the idempotency key.
"""

# No "from __future__ import annotations": FastAPI reads the dependency's annotations.
import hmac
import inspect
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Header, Query
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..aio import READ_ONLY
from ..coordinator import MemoryCoordinator
from ..model import Scope
from . import idempotency
from .activity import ActivityLog
from .gate import Gate
from .guard import Overloaded, current_request
from .limits import IDEMPOTENCY_KEY_PATTERN, SCOPE_PATTERN
from .schemas import ErrorOut, ProblemOut

T = TypeVar("T")


PROBLEM_JSON = "application/problem+json"


class AuthError(Exception):
    """A request without a valid key (401) or acting for another user (403)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


_WHY = {
    400: "The library refused the input (ValidationError, ScopeError, ConfigError): nothing was changed.",
    401: "Missing or unknown API key.",
    403: "The API key acts for another user than the one named.",

    404: "No such memory in this scope (NotFoundError).",
    409: "A request with this Idempotency-Key is still in progress; retry after Retry-After.",
    413: "The request body is larger than the server accepts.",
    422: "The request does not match this schema (types, ranges, lengths, unknown fields), or its "
         "Idempotency-Key was used for a different request.",
    503: "The server is at capacity or the request's deadline passed (Overloaded, DeadlineExceeded; nothing was "
         "written), or the store or a model provider is unavailable (StorageError, ProviderError); retry after "
         "Retry-After.",
}

# A write route's 403: a read-only store refuses the write whoever asks, so a retry gets the
# same answer (unlike 503, which tells the client to retry, and 409, a state the client can change).
_WHY_READ_ONLY = ("the store is read-only (ReadOnlyStoreError, as application/problem+json): the server was "
                  "started with --read-only, or the store's file or folder cannot be written. Nothing was "
                  "written; retrying gets the same answer.")


def _id_query(description: str) -> Any:
    return Query(pattern=SCOPE_PATTERN, max_length=128, description=description)


_AGENT = "The agent; users and agents are isolated tenants."
_CONTEXT = "The context (personal, work, ...)."
_SESSION = "The session (binds working and short-term memory)."


def _scope_dependency(keys: Mapping[str, str] | None, *, session_required: bool) -> Callable[..., Scope]:
    """The dependency that turns query parameters (and the API key) into a Scope. A route
    that needs a session (ending one) gets ``session_id`` as a required parameter."""
    Session = Annotated[str | None, _id_query(_SESSION)]

    def finish(dependency: Callable[..., Scope]) -> Callable[..., Scope]:
        if not session_required:
            return dependency
        # The same parameters with session_id required (keyword-only, so no default is needed).
        sig = inspect.signature(dependency)
        required = Annotated[str, _id_query(_SESSION + " Required here.")]
        dependency.__signature__ = sig.replace(parameters=[  # type: ignore[attr-defined]  # read by inspect.signature; typeshed's Callable lacks it
            p.replace(annotation=required, default=inspect.Parameter.empty) if p.name == "session_id" else p
            for p in sig.parameters.values()])
        return dependency

    if keys is None:
        def open_scope(
            *,
            user_id: Annotated[str, _id_query("The user (1-128 of letters, digits and _.:@+-).")] = "default",
            agent_id: Annotated[str, _id_query(_AGENT)] = "default",
            session_id: Session = None,
            context: Annotated[str, _id_query(_CONTEXT)] = "default",
        ) -> Scope:
            return Scope(user_id, agent_id, session_id, context)

        return finish(open_scope)

    bearer = HTTPBearer(auto_error=False, description="An API key given to the server (key -> user).")
    encoded = [(k.encode(), u) for k, u in keys.items()]

    def keyed_scope(
        *,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        user_id: Annotated[str | None, _id_query("The user: must be the API key's user (default: the key's user).")]
        = None,
        agent_id: Annotated[str, _id_query(_AGENT)] = "default",
        session_id: Session = None,
        context: Annotated[str, _id_query(_CONTEXT)] = "default",
    ) -> Scope:
        if credentials is None:
            raise AuthError(401, "missing API key: send 'Authorization: Bearer <key>'")
        given = credentials.credentials.encode()
        owner = None
        for key, user in encoded:  # compare with every key: the time taken does not tell which matched
            if hmac.compare_digest(key, given):
                owner = user
        if owner is None:
            raise AuthError(401, "unknown API key")
        if user_id is not None and user_id != owner:
            raise AuthError(403, f"this API key acts for user {owner!r}, not {user_id!r}")
        return Scope(owner, agent_id, session_id, context)

    return finish(keyed_scope)


def idempotency_header(
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Any unique string (1-200 visible ASCII characters): a retry with the same key gets the first "
                    "request's answer instead of writing again (kept 24 h).")] = None,
) -> None:
    """Documents the header; ``guard``/``idempotency`` read it from the raw request."""


@dataclass
class ApiContext:
    memory: MemoryCoordinator
    keys: dict[str, str] | None
    activity: ActivityLog
    snapshot_every_s: float = 3600.0
    gate: Gate = field(default_factory=Gate)

    def __post_init__(self) -> None:
        self.scope = _scope_dependency(self.keys, session_required=False)
        self.session_scope = _scope_dependency(self.keys, session_required=True)
        store = self.memory.storage
        self.requests = store if isinstance(store, idempotency.RequestStore) else None

    @property
    def auth(self) -> bool:
        return self.keys is not None

    def call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """One coordinator call through the gate (see the module docstring)."""
        scope = next((a for a in (*args, *kw.values()) if isinstance(a, Scope)), None)
        return self.run(lambda: fn(*args, **kw), write=getattr(fn, "__name__", "") not in READ_ONLY, scope=scope)

    def run(self, block: Callable[[], T], *, write: bool = True, scope: Scope | None = None) -> T:
        """A block of coordinator calls through the gate, as one operation."""
        ctx = current_request()
        if ctx is None:  # not served by the Guard (a direct call): no deadline, no key
            if not self.gate.acquire(write=write, timeout=None):
                raise Overloaded("the store is busy")
            try:
                return block()
            finally:
                self.gate.release(write=write)
        keyed = ctx.idempotency_key is not None and write and scope is not None and self.requests is not None
        if keyed:
            idempotency.replay_if_known(self.requests, scope, ctx)  # type: ignore[arg-type]
        if not self.gate.acquire(write=write, timeout=ctx.remaining()):
            raise Overloaded("the server is busy: the request waited until its deadline for the store")
        try:
            ctx.check()
            hook = self.requests.before_commit(idempotency.Claimer(ctx, scope if keyed else None)) \
                if self.requests is not None else nullcontext()
            with hook:
                return block()
        except idempotency.DuplicateRequest:
            idempotency.replay_if_known(self.requests, scope, ctx)  # type: ignore[arg-type]
            raise
        finally:
            self.gate.release(write=write)

    def write(self, *extra: int, body: bool = False, pending: Any = None) -> dict[str, Any]:
        """Decorator arguments of a route that changes memories: its documented errors (with
        409 for an idempotent request still in progress and 403 for a read-only store), the
        Idempotency-Key header, and
        with ``pending`` (a response model) a 202 for an erasure whose scrub is pending."""
        responses: dict[int | str, dict[str, Any]] = self.errors(409, *extra, body=body)
        why = f"{_WHY[403]} Or {_WHY_READ_ONLY}" if 403 in responses else _WHY_READ_ONLY[0].upper() + _WHY_READ_ONLY[1:]
        responses[403] = {"model": ErrorOut, "description": why,
                          "content": {PROBLEM_JSON: {"schema": ProblemOut.model_json_schema()}}}
        if pending is not None:
            responses[202] = {"model": pending, "description": "Erased, but the erased text stays in the store's files "
                                                                "until another reader of the file ends (scrubbed: false)."}
        return {"responses": responses, "dependencies": [Depends(idempotency_header)]}

    def errors(self, *extra: int, body: bool = False) -> dict[int | str, dict[str, Any]]:
        """The documented error responses of a /v1 route: 400, 422 and 503 always, 401 and
        403 when API keys are configured, 413 for routes with a body, and ``extra``."""
        codes = {400, 422, 503, *extra}
        if self.auth:
            codes |= {401, 403}
        if body:
            codes.add(413)
        return {code: {"model": ErrorOut, "description": _WHY[code]} for code in sorted(codes)}

    def snapshot(self, scope: Scope, trigger: str) -> None:
        """Record the scope's statistics now (inside ``run``)."""
        self.activity.record_snapshot(scope, trigger, self.memory.clock.now(), self.memory.stats(scope))

    def snapshot_if_due(self, scope: Scope) -> None:
        """A periodic snapshot when the last one is older than ``snapshot_every_s``."""
        def due() -> None:
            last = self.activity.last_snapshot_at(scope)
            if last is None or self.memory.clock.now() - last >= self.snapshot_every_s:
                self.snapshot(scope, "periodic")
        self.run(due, write=False)


__all__ = ["PROBLEM_JSON", "ApiContext", "AuthError"]
