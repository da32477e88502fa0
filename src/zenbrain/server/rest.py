"""The REST API: ``create_app(memory)`` returns a FastAPI application over one coordinator,
with the dashboard at ``/ui`` and the OpenAPI documentation at ``/docs`` and ``/redoc``
(assets served locally: they work offline).

Every route is one ``MemoryCoordinator`` call. The server parses JSON and query
parameters, authenticates, and maps the library's exceptions to HTTP statuses; every
check of content, numbers, layers and scopes is the library's own.

Scope: every route under ``/v1`` takes the scope as query parameters ``user_id``,
``agent_id``, ``session_id`` and ``context`` (POST, PATCH and DELETE routes too; bodies
carry the operation's data only).

Authentication: with ``api_keys`` (key -> user id) every ``/v1`` route needs
``Authorization: Bearer <key>``; the key decides the user. A request without ``user_id``
acts as the key's user, one naming another user gets 403, a missing or unknown key 401.
Without ``api_keys`` the server is open to anyone who can reach it: bind it to 127.0.0.1
only (``zenbrain serve`` refuses other hosts without keys unless told ``--insecure``).

Errors are JSON ``{"error": "<exception class>", "message": "..."}``: 400 for
ValidationError and ConfigError, 404 for NotFoundError, 503 for StorageError and
ProviderError (retry after Retry-After), 403 for ReadOnlyStoreError (a write to a
read-only store: ``application/problem+json`` per RFC 9457, with ``error`` and
``message`` too; no retry helps), 401/403 for authentication, 413 for a body over ``limits.MAX_BODY_BYTES``,
422 for a request the schema refuses (types, ranges, lengths, unknown fields). The OpenAPI document states every
status a route returns and every limit (``limits``); its security scheme appears only
when API keys are configured.

Load (``guard``, ``gate``, ``idempotency``): a server process runs at most a few requests
at once and queues a bounded number more; beyond that it answers 503 with Retry-After at
once, and ``/health`` never waits behind them. Every request has a deadline
(``X-Request-Timeout``); one whose deadline passes or whose client disconnects commits
nothing. Writes take an ``Idempotency-Key``: a retry gets the first answer. Several
server processes may serve one store file (``server.workers``): SQLite in WAL mode lets
their reads run in parallel.

Layout: ``limits`` (every bound), ``schemas`` (bodies), ``api_context`` (gate, scope and
authentication, documented errors), ``guard`` (admission, deadlines, bodies), ``routes/``
(one module per concern), and this module, which assembles them with the error handlers.

Concurrency: FastAPI runs these (synchronous) routes in a thread pool. Operations that
only read run side by side on the store's per-thread read connections; an operation that
writes runs alone in its process (``gate``), and SQLite serialises the writers of all
processes.
"""

# No "from __future__ import annotations": FastAPI reads the routes' annotations.
import re
import time
from collections.abc import Mapping
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException

from .. import __version__
from ..coordinator import MemoryCoordinator
from ..errors import (
    ConfigError,
    DamagedStoreError,
    NotFoundError,
    ProviderError,
    ReadOnlyStoreError,
    StorageError,
    ValidationError,
    ZenBrainError,
)
from ..model import Scope
from . import idempotency
from .activity import ActivityLog
from .api_context import PROBLEM_JSON, ApiContext, AuthError
from .docs_pages import add_redoc
from .guard import DeadlineExceeded, Guard, Limits, Overloaded, Refused, RequestContext
from .limits import CONTENT_PATTERN, MAX_BODY_BYTES, RELATION_PATTERN, SCOPE_PATTERN
from .routes import dashboard, feedback, graph, intentions, lifecycle, memories, recall
from .schemas import HealthOut

_STATUS: tuple[tuple[type[ZenBrainError], int], ...] = (
    (ValidationError, 400),
    (ConfigError, 400),
    (NotFoundError, 404),
    (ReadOnlyStoreError, 403),  # before StorageError: a read-only store is not unavailable
    (StorageError, 503),
    (ProviderError, 503),
)

def _check_keys(api_keys: Mapping[str, str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for key, user in api_keys.items():
        if not isinstance(key, str) or not key:
            raise ConfigError("API keys must be non-empty strings")
        Scope(user)  # a malformed user id is refused here, not at the first request
        keys[key] = user
    return keys


_PATTERN_MEANING = {
    CONTENT_PATTERN: "must not be blank or contain a NUL character",
    SCOPE_PATTERN: "must be 1-128 characters of letters, digits and _.:@+-",
    RELATION_PATTERN: "must be 1-48 lowercase letters, digits or underscores, starting with a letter",
}


def _complaint(err: Mapping[str, Any]) -> str:
    """One complaint of the schema as ``where: what``, a pattern named by what it means."""
    where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "request"
    pattern = (err.get("ctx") or {}).get("pattern")
    meaning = _PATTERN_MEANING.get(pattern) if isinstance(pattern, str) else None
    return f"{where}: {meaning or err.get('msg', 'invalid')}"


def _validation_body(exc: RequestValidationError) -> dict[str, Any]:
    errors = list(exc.errors())
    message = "; ".join(_complaint(e) for e in errors[:5]) or "the request does not match the schema"
    detail = [{"loc": list(e.get("loc", ())), "msg": _complaint(e).split(": ", 1)[-1], "type": e.get("type", "")}
              for e in errors]
    return {"error": "RequestValidationError", "message": message, "detail": detail}


HEALTH_CACHE_S = 1.0  # /health counts memories at most this often


def create_app(
    memory: MemoryCoordinator,
    *,
    api_keys: Mapping[str, str] | None = None,
    activity: ActivityLog | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    limits: Limits | None = None,
) -> FastAPI:
    """A FastAPI app serving ``memory``. ``api_keys`` maps each bearer key to the user it
    acts for; None leaves the API open (bind it to 127.0.0.1 only). ``activity`` keeps
    lifecycle reports and stats snapshots for the dashboard (default: in memory).
    ``limits``: admission and deadlines (``guard.Limits``). The caller keeps ownership of
    ``memory`` and ``activity`` and closes them after the server stops."""
    keys = _check_keys(api_keys) if api_keys is not None else None
    api = ApiContext(memory, keys, activity if activity is not None else ActivityLog())
    limits = limits or Limits(max_body_bytes=max_body_bytes)

    app = FastAPIOffline(
        redoc_url=None,  # docs_pages.add_redoc serves it without the bundle's remote logo
        title="zenbrain",
        version=__version__,
        description="Long-term memory for LLM agents. Every /v1 route takes the scope as query parameters "
                    "(user_id, agent_id, session_id, context)"
                    + (" and needs `Authorization: Bearer <key>`; the key decides the user." if keys is not None
                       else "; this server has no API keys: anyone who reaches it acts as any user.")
                    + " The dashboard is at /ui.",
    )

    async def record_answer(ctx: RequestContext) -> None:
        await anyio.to_thread.run_sync(idempotency.record_answer, memory.storage, ctx)

    app.add_middleware(Guard, limits=limits, on_request=idempotency.prepare, on_response=record_answer)

    # -- errors ----------------------------------------------------------------------------
    retry = {"Retry-After": str(limits.retry_after_s)}
    # A busy process's 503 closes its connection, as the guard's sheds do: the retry then
    # reaches whichever process accepts a new connection.
    busy = {**retry, "Connection": "close"}

    @app.exception_handler(ZenBrainError)
    async def _library_error(request: Request, exc: ZenBrainError) -> JSONResponse:
        status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
        if isinstance(exc, ReadOnlyStoreError):  # RFC 9457, with the members every error here has
            problem = {"type": "about:blank", "title": "Forbidden", "status": status, "detail": str(exc),
                       "error": type(exc).__name__, "message": str(exc)}
            return JSONResponse(problem, status_code=status, media_type=PROBLEM_JSON)
        headers = busy if status == 503 and not isinstance(exc, DamagedStoreError) else None
        return JSONResponse({"error": type(exc).__name__, "message": str(exc)}, status_code=status, headers=headers)

    @app.exception_handler(Overloaded)
    @app.exception_handler(DeadlineExceeded)
    async def _load_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": type(exc).__name__, "message": str(exc)}, status_code=503, headers=busy)

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused) -> Response:
        if exc.body is not None:  # a replayed answer, as it was first sent
            return Response(exc.body, status_code=exc.status, media_type="application/json", headers=exc.headers)
        return JSONResponse({"error": exc.name, "message": exc.message}, status_code=exc.status,
                            headers=exc.headers or None)

    @app.exception_handler(AuthError)
    async def _auth_error(request: Request, exc: AuthError) -> JSONResponse:
        name = "Unauthorized" if exc.status == 401 else "Forbidden"
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"error": name, "message": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """Starlette's own errors (unknown path, wrong method, unparseable JSON) in the same
        shape as every other; a 405 lists every method the path has, not only one route's."""
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.url.path))
        name = "".join(w.capitalize() for w in str(exc.detail).split()) or "HTTPError"
        return JSONResponse({"error": name, "message": str(exc.detail)}, status_code=exc.status_code,
                            headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def _schema_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(_validation_body(exc), status_code=422)

    path_methods: list[tuple[re.Pattern[str], list[str]]] = []

    def allowed_methods(path: str) -> list[str]:
        """Every method the OpenAPI document lists for ``path`` (one route may serve only one)."""
        if not path_methods:
            for template, ops in app.openapi()["paths"].items():
                regex = re.compile("^" + re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)) + "$")
                path_methods.append((regex, sorted(m.upper() for m in ops)))
        return next((methods for regex, methods in path_methods if regex.match(path)), [])

    # -- routes ----------------------------------------------------------------------------
    counted: list[float] = [-HEALTH_CACHE_S, 0.0]  # when the memories were last counted, and how many

    @app.get("/health", tags=["server"], response_model=HealthOut, response_model_exclude_none=True,
             responses={503: {"model": HealthOut, "description": "The store's database cannot serve."}})
    def health() -> Any:
        """Liveness and readiness: the store answers. Never queued behind other requests (it
        reads on a connection of its own). A PostgreSQL store also reports its database
        (reachable, migration version, connection pool), and the answer is 503 when the
        database cannot serve. The memory count is shown only on an open server."""
        out: dict[str, Any] = {"status": "ok", "version": __version__, "auth": keys is not None}
        check = getattr(memory.storage, "health", None)  # stores with a database server (PostgreSQL)
        if check is not None:
            db = check().as_dict()
            if keys is not None and db.get("problem"):  # no addresses or server messages to anonymous callers
                db["problem"] = db["problem"].split(":", 1)[0]
            out["database"] = db
            if not db["ok"]:
                out["status"] = "unavailable"
                return JSONResponse(HealthOut(**out).model_dump(exclude_none=True), status_code=503)
        if time.monotonic() - counted[0] >= HEALTH_CACHE_S:
            counted[1] = memory.storage.count()  # a count: stats() groups every row (9 ms at 10k)
            counted[0] = time.monotonic()
        if keys is None:
            out["memories"] = int(counted[1])
        return out

    for group in (memories, recall, graph, feedback, lifecycle, intentions, dashboard):
        app.include_router(group.router(api))
    dashboard.mount_static(app)
    add_redoc(app)
    return app


__all__ = ["AuthError", "create_app"]
