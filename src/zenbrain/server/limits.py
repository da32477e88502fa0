"""Every limit the REST server enforces, in one place; the OpenAPI schema states each one.

The library checks content, numbers and scopes itself (``zenbrain.validation``); these are
the transport's own bounds on top: request size, batch sizes and the ranges of counts, so
that a huge number is a clear 422 instead of an overflow deep in the store.
"""

from __future__ import annotations

from ..config import MAX_CONTENT_CHARS, MAX_METADATA_BYTES

MAX_BODY_BYTES = 8 * 1024 * 1024  # a request body larger than this is refused with 413
MAX_BATCH_MEMORIES = 1000  # memories per POST /v1/memories/batch
MAX_BATCH_QUERIES = 100  # queries per POST /v1/recall/batch (each runs as its own operation)
MAX_REVIEWS = 1000  # reviews per POST /v1/reviews
MAX_K = 1000  # hits per recall (the library's own bound)
MAX_LIST = 10_000  # memories per list, episodes or review-queue page
MAX_OFFSET = 1_000_000  # paging offset of a list
MAX_BUDGET_TOKENS = 100_000  # token budget of an assembled context
MAX_GRAPH_NODES = 500  # memories drawn in one knowledge-graph picture
MAX_CURVE_DAYS = 3650.0  # horizon of a forgetting curve
MAX_CURVE_POINTS = 400  # points of a forgetting curve
MAX_SERIES = 1000  # stats snapshots or reports returned at once
MAX_ID_CHARS = 128  # memory ids and relation names
MAX_WEIGHT = 1e6  # edge weights and evidence strength
MAX_TIME = 1e11  # seconds since the epoch (year 5138): times beyond are refused

IDEMPOTENCY_KEY_PATTERN = r"^[!-~]{1,200}$"  # visible ASCII, no spaces (server.idempotency)
RELATION_PATTERN = r"^[a-z][a-z0-9_]{0,47}$"  # relation names (zenbrain.pipeline.relations)
SCOPE_PATTERN = r"^[A-Za-z0-9_.:@+\-]{1,128}$"  # user, agent, session and context ids (zenbrain.Scope)
# Content with at least one character that is not whitespace, and no NUL (the library's check).
CONTENT_PATTERN = r"^[^\x00]*[^\s\x00\x1c-\x1f\x85][^\x00]*$"

__all__ = [
    "CONTENT_PATTERN",
    "IDEMPOTENCY_KEY_PATTERN",
    "MAX_BATCH_MEMORIES",
    "MAX_BATCH_QUERIES",
    "MAX_BODY_BYTES",
    "MAX_BUDGET_TOKENS",
    "MAX_CONTENT_CHARS",
    "MAX_CURVE_DAYS",
    "MAX_CURVE_POINTS",
    "MAX_GRAPH_NODES",
    "MAX_ID_CHARS",
    "MAX_K",
    "MAX_LIST",
    "MAX_METADATA_BYTES",
    "MAX_OFFSET",
    "MAX_REVIEWS",
    "MAX_SERIES",
    "MAX_TIME",
    "MAX_WEIGHT",
    "RELATION_PATTERN",
    "SCOPE_PATTERN",
]
