"""Request and response bodies of the REST API, with the limits of ``limits`` stated in
the schema (lengths, ranges, batch sizes), so that the OpenAPI document tells a client
what the server accepts and what it answers."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    WithJsonSchema,
)

from ..mechanisms import two_factor
from ..model import Kind, Layer
from ..pipeline.relations import RESERVED
from .limits import (
    CONTENT_PATTERN,
    MAX_BATCH_MEMORIES,
    MAX_BATCH_QUERIES,
    MAX_BUDGET_TOKENS,
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_K,
    MAX_REVIEWS,
    MAX_TIME,
    MAX_WEIGHT,
    RELATION_PATTERN,
)


def _number_only(value: Any) -> Any:
    """JSON true is not the number 1 and "3" is not the number 3 (1.0 stays an integer)."""
    if isinstance(value, (bool, str)):
        raise ValueError("must be a JSON number")  # noqa: TRY004 - pydantic reports ValueError only
    return value


_NUMBER = BeforeValidator(_number_only)  # after the bounds in Annotated, so the schema states them
Int = Annotated[int, _NUMBER]
Float = Annotated[float, _NUMBER]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=CONTENT_PATTERN)]
MemoryIdText = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Time = Annotated[float, Field(ge=0.0, le=MAX_TIME), _NUMBER]
Unit = Annotated[float, Field(ge=0.0, le=1.0), _NUMBER]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"Number of hits per query (1-{MAX_K})."), _NUMBER]
RelationName = Annotated[str, Field(min_length=1, max_length=48, pattern=RELATION_PATTERN,
                                    json_schema_extra={"not": {"enum": sorted(RESERVED)}})]
MAX_EDGE_WEIGHT = two_factor.DEFAULTS.max_weight


def _parse_datetime(text: str) -> datetime:
    """An RFC 3339 date-time (lower-case t and z, a leap second at :60 and no zone, read as UTC)."""
    fixed = text.strip().upper().replace(" ", "T")
    leap = ":60" in fixed[13:20]
    if leap:
        fixed = fixed[:17] + "59" + fixed[19:]
    try:
        dt = datetime.fromisoformat(fixed)
    except ValueError:
        raise ValueError(f"not a number of seconds or an RFC 3339 date-time: {text[:40]!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt + timedelta(seconds=1) if leap else dt


def _seconds(value: Any, *, numeric_text: bool) -> float:
    """Seconds since the epoch of a number or a date-time text (or, in a query string, a numeric text)."""
    if isinstance(value, bool):
        raise ValueError("a time is a number of seconds or a date-time")  # noqa: TRY004 - as above
    if isinstance(value, str):
        if numeric_text:
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, str):
            try:
                return _parse_datetime(value).timestamp()
            except OverflowError:
                raise ValueError("date-time out of range") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or abs(value) > MAX_ABS_SECONDS:
        raise ValueError("a time is a finite number of seconds since the epoch or a date-time")
    return float(value)


MAX_ABS_SECONDS = 1e15  # beyond any date-time a client can write (year 9999 is 2.5e11)
_TIME_SCHEMA = {"anyOf": [{"type": "number", "minimum": -MAX_ABS_SECONDS, "maximum": MAX_ABS_SECONDS},
                          {"type": "string", "format": "date-time"}]}
# A time in a body: a JSON number of seconds since the epoch or an RFC 3339 date-time string.
BodyTime = Annotated[float, BeforeValidator(lambda v: _seconds(v, numeric_text=False)), WithJsonSchema(_TIME_SCHEMA)]
# A time in a query string, where a number arrives as text.
QueryTime = Annotated[float, BeforeValidator(lambda v: _seconds(v, numeric_text=True)), WithJsonSchema(_TIME_SCHEMA)]


# --------------------------------------------------------------------------- requests


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MemoryRecord(_Body):
    content: Content = Field(description=f"The memory's text: not blank, at most {MAX_CONTENT_CHARS} characters.")
    kind: Kind | None = Field(None, description="What the memory is about; classified from the text when omitted.")
    layer: Layer | None = Field(None, description="Force a layer (working and short_term need a session_id); "
                                                   "routed from the kind when omitted.")
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object kept with the memory (at most 64 kB "
                                                              "as JSON, nested at most 8 deep).")
    event_time: Time | None = Field(None, description="When it happened, in seconds since the Unix epoch.")
    importance: Unit | None = Field(None, description="Importance in [0, 1] (default 0.5).")
    supersedes: MemoryIdText | Annotated[list[MemoryIdText], Field(min_length=1, max_length=64)] | None = Field(
        None, description="Ids of earlier memories this one replaces: they stop holding when this one begins, "
                          "stay in the history and in `as_of` recall, and leave current recall.")


class BatchRequest(_Body):
    memories: list[MemoryRecord] = Field(min_length=1, max_length=MAX_BATCH_MEMORIES,
                                         description="The memories to store, in one transaction: all or none.")


class UpdateRequest(_Body):
    content: Content | None = Field(None, description="New text; the previous version stays in the history.")
    metadata: dict[str, Any] | None = Field(None, description="New metadata (replaces the old object).")
    importance: Unit | None = Field(None, description="New importance in [0, 1].")
    layer: Layer | None = Field(None, description="Move the memory to this layer.")


class _RecallOptions(_Body):
    k: K = 10
    layers: list[Layer] | None = Field(None, max_length=len(Layer), description="Only these layers (default: all).")
    time_range: tuple[Time | None, Time | None] | None = Field(
        None, description="[start, end] in seconds since the epoch on the event time; either may be null.")
    include_archived: StrictBool = Field(False, description="Also search memories archived by decay.")
    touch: StrictBool = Field(True, description="false makes recall read-only: no access counts, no learning.")
    as_of: Time | None = Field(None, description="Recall what held at this time (seconds since the epoch): "
                                                 "memories superseded later count, ones begun later do not.")
    include_superseded: StrictBool = Field(False, description="Also search memories a later one superseded.")


class RecallRequest(_RecallOptions):
    query: Content = Field(description="What to recall: a question or a cue.")


class RecallBatchRequest(_RecallOptions):
    queries: list[Content] = Field(min_length=1, max_length=MAX_BATCH_QUERIES,
                                   description="The queries, answered in order with their side effects in one "
                                               "transaction.")


class ReviseRequest(_Body):
    content: Content = Field(description="The new information about the memory.")
    correction: StrictBool = Field(False, description="true: an explicit correction of the memory, not just new detail.")


class IntentionRequest(_Body):
    # A cue or a due time: stated in the schema, checked by the library.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": ["cue"], "properties": {"cue": {"type": "string"}}},
        {"required": ["due_at"], "properties": {"due_at": {"not": {"type": "null"}}}}]})

    action: Content = Field(description="What to do (or remind of) when the intention fires.")
    cue: Content | None = Field(None, description="Fire when a recall's query brings this up.")
    due_at: BodyTime | None = Field(None, description="Fire at this time: seconds since the epoch or an RFC 3339 "
                                                      "date-time (without a zone: UTC); a time before 1970 means "
                                                      "now. A cue or a due time is needed.")
    repeat_every_s: Annotated[float, Field(ge=1.0, le=1e9), _NUMBER] | None = Field(
        None, description="Fire again every this many seconds after the due time.")


class GoalRequest(_Body):
    goal: Content = Field(description="The current goal; memories aligned with it get priority.")


class RelationRequest(_Body):
    src: MemoryIdText = Field(description="Id of the source memory.")
    dst: MemoryIdText = Field(description="Id of the target memory.")
    relation: RelationName = Field(
        description="supports, contradicts, causes, requires, part_of, similar_to, or a name of your own "
                    "(a plain link): 1-48 lowercase letters, digits or _, starting with a letter.")
    weight: Annotated[float, Field(gt=0.0, le=MAX_EDGE_WEIGHT), _NUMBER] = Field(
        1.0, description="Edge weight; relating the same triple again sets it.")


class EvidenceRequest(_Body):
    supports: StrictBool = Field(description="true: evidence that the memory is true; false: against it.")
    strength: Annotated[float, Field(ge=0.0, le=MAX_WEIGHT), _NUMBER] = Field(
        1.0, description="Worth of the evidence in pseudo-observations (e.g. a source's reliability).")


class OutcomeRequest(_Body):
    success: StrictBool = Field(description="Whether using the memory (a procedure, say) succeeded.")


Grade = Literal[1, 2, 3, 4, "again", "hard", "good", "easy"]


class Review(_Body):
    id: MemoryIdText = Field(description="Id of the reviewed memory.")
    grade: Grade = Field(description="1-4 or again, hard, good, easy.")


class ReviewsRequest(_Body):
    reviews: list[Review] = Field(min_length=1, max_length=MAX_REVIEWS,
                                  description="One review per memory; all are checked before any is written.")


class PromptRequest(_Body):
    query: Content = Field(description="The prompt's topic: what the context should answer.")
    budget_tokens: Annotated[int, Field(ge=1, le=MAX_BUDGET_TOKENS), _NUMBER] = Field(
        1200, description="Token budget of the assembled context.")
    k: K = 10


# --------------------------------------------------------------------------- responses


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorOut(_Out):
    error: str = Field(description="The exception class: ValidationError, ScopeError, NotFoundError, "
                                   "Unauthorized, Forbidden, PayloadTooLarge, ...")
    message: str = Field(description="What was wrong, in one sentence.")
    detail: list[dict[str, Any]] | None = Field(None, description="422 only: each complaint of the schema with "
                                                                  "its location (loc), message (msg) and type.")


class ProblemOut(_Out):
    """An RFC 9457 problem (``application/problem+json``) that also carries the ``error`` and
    ``message`` members every other error of this API has."""

    type: str = Field("about:blank", description="about:blank: the status says what kind of problem it is.")
    title: str = Field(description="The status's reason phrase (Forbidden).")
    status: int = Field(description="The HTTP status, repeated.")
    detail: str = Field(description="What was refused and why, in one sentence.")
    error: str = Field(description="The exception class: ReadOnlyStoreError.")
    message: str = Field(description="The same sentence as detail.")


class PoolOut(_Out):
    size: int = Field(description="Connections the pool holds now.")
    available: int = Field(description="Of them, idle.")
    max: int = Field(description="The most it may hold.")
    waiting: int = Field(description="Requests waiting for a connection.")


class DatabaseOut(_Out):
    ok: bool = Field(description="Reachable, with every migration of this zenbrain applied and no unknown one.")
    reachable: bool
    latency_ms: float | None = Field(None, description="Connecting and reading the checks, on a connection of its own.")
    server_version: str | None = None
    pgvector_version: str | None = None
    migration_version: int | None = Field(None, description="The highest migration applied.")
    migration_name: str | None = None
    migrations_expected: int = Field(description="Migrations this zenbrain knows.")
    scrubs_pending: int | None = Field(None, description="Users whose erased text still waits for its rewrite.")
    problem: str | None = None
    pool: PoolOut | None = None


class HealthOut(_Out):
    status: Literal["ok", "unavailable"] = Field(
        description="'ok'; 'unavailable' (with status code 503) when the store's database cannot serve.")
    version: str
    auth: bool = Field(description="Whether /v1 routes need an API key.")
    memories: int | None = Field(None, description="Memories in the store (open servers only).")
    database: DatabaseOut | None = Field(None, description="A PostgreSQL store's database: reachable, migration "
                                         "version, connection pool.")


class MemoryOut(_Out):
    id: str
    layer: Layer
    kind: Kind
    content: str
    user_id: str
    agent_id: str
    session_id: str | None
    context: str
    created_at: float
    updated_at: float
    event_time: float | None
    last_access: float
    access_count: int
    importance: float
    strength: float
    stability: float | None = Field(description="Ebbinghaus stability in days.")
    confidence: float = Field(description="Mean of the Beta confidence: conf_alpha / (conf_alpha + conf_beta).")
    conf_alpha: float = Field(description="Beta posterior: evidence for the memory being true, plus 1.")
    conf_beta: float = Field(description="Beta posterior: evidence against it, plus 1.")
    archived: bool
    version: int
    metadata: dict[str, Any]
    valid_until: float | None = Field(None, description="When the memory stopped holding (null: it still holds).")
    superseded_by: str | None = Field(None, description="The memory that replaced it, if any.")


class MemoryList(_Out):
    memories: list[MemoryOut]


class MemoryPage(_Out):
    memories: list[MemoryOut]
    offset: int = Field(description="How many memories were skipped.")
    has_more: bool = Field(description="Whether a further page exists.")


class HitOut(_Out):
    rank: int
    id: str
    score: float
    layer: Layer
    kind: Kind
    content: str
    metadata: dict[str, Any]
    event_time: float | None
    why: dict[str, float | None] = Field(description="The score breakdown: dense, lexical, layer_weight, fused, "
                                                     "hebbian_boost, retrievability, priority, temporal, "
                                                     "mechanism factors, final.")


class RecallOut(_Out):
    query: str
    query_type: str
    hits: list[HitOut]
    core: list[MemoryOut] = Field(description="The scope's core memories (always in context).")
    intentions: list[dict[str, Any]] = Field(description="Cue intentions this recall fired.")


class RecallBatchOut(_Out):
    results: list[RecallOut]


class ReviseOut(_Out):
    mode: str
    memory: MemoryOut
    new_memory: MemoryOut | None
    plan: dict[str, Any] | None


class EventOut(_Out):
    memory_id: str
    at: float
    action: str
    detail: dict[str, Any]


class HistoryOut(_Out):
    history: list[EventOut]


class EdgeOut(_Out):
    src: str
    dst: str
    relation: str
    weight: float
    variance: float | None
    activations: int | float
    updated_at: float | None


class RelationsOut(_Out):
    relations: list[EdgeOut]


class RemovedOut(_Out):
    removed: bool


class ReportOut(_Out):
    operation: str
    at: float
    stages: dict[str, Any] = Field(description="What each stage changed, as the library reports it.")
    summary: list[str] = Field(description="The same report as short sentences: what was strengthened, archived, "
                                           "consolidated, and why.")


class PromptOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    text: str = Field(description="The context, ready to paste into a prompt.")
    tokens: int
    modules: list[dict[str, Any]] = Field(description="The workspace modules it drew on, with why each won.")


class IntentionOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    action: str
    due_at: float | None = None


class IntentionsOut(_Out):
    intentions: list[dict[str, Any]]


class GoalOut(_Out):
    goal: str


class ReceiptOut(_Out):
    """What an erasure removed (``zenbrain.ErasureReceipt``)."""

    memory_ids: list[str] = Field(description="The memories erased as asked.")
    derived_ids: list[str] = Field(description="Memories derived from them (schemas abstracted from erased episodes).")
    edges: int
    history_rows: int
    lexical_entries: int
    vectors: int = Field(description="Vectors this scope's memories no longer use.")
    records: int = Field(description="Partition records or debate-log entries naming an erased memory.")
    requests: int = Field(description="Idempotency records of requests that wrote or returned an erased memory.")
    scrubbed: bool = Field(description="The erased text is gone from the database file and its WAL (false: pending "
                                       "until another reader of the file ends; the store finishes it at its next write).")


class ForgottenOut(_Out):
    forgotten: int = Field(description="How many memories were erased.")
    receipt: ReceiptOut


class StatsOut(_Out):
    memories: int
    archived: int
    edges: int
    by_layer: dict[str, int]
    by_context: dict[str, int]
    cached_embeddings: int = Field(description="The distinct vectors the scope's memories use.")
    stored_bytes: int = Field(description="Bytes of the scope's memories: text, metadata, state and vectors.")
    embedder: str
    mechanisms_off: list[str]


# --------------------------------------------------------------------------- dashboard


class ScopeOut(_Out):
    user_id: str
    agent_id: str
    session_id: str | None
    context: str
    auth: bool = Field(description="Whether this server needs API keys (then the key decides the user).")


class CurvePoint(_Out):
    at: float = Field(description="Seconds since the epoch.")
    days: float = Field(description="Days from now.")
    retrievability: float


class CurveOut(_Out):
    memory: MemoryOut
    now: float
    points: list[CurvePoint]
    next_review: float | None = Field(description="When spaced repetition schedules the next review "
                                                  "(seconds since the epoch), or null.")
    archive_threshold: float = Field(description="Decay archives an active memory at or below this retrievability.")
    review_threshold: float = Field(description="Decay queues a memory for review at or below this retrievability.")
    curves: list[str] = Field(description="The forgetting mechanisms that are on (ebbinghaus_decay, triple_copy).")


class GraphNode(_Out):
    id: str
    content: str
    layer: Layer
    kind: Kind
    archived: bool
    importance: float
    confidence: float


class GraphOut(_Out):
    nodes: list[GraphNode]
    edges: list[EdgeOut]
    truncated: bool = Field(description="Whether the scope holds more memories than were drawn.")


class ActivityEntry(_Out):
    operation: str
    at: float
    summary: list[str]
    stages: dict[str, Any]


class ActivityOut(_Out):
    reports: list[ActivityEntry] = Field(description="Lifecycle reports, newest first.")


class StatsSnapshot(_Out):
    at: float
    trigger: str = Field(description="What took the snapshot: sleep, decay, consolidate, end_session or periodic.")
    memories: int
    archived: int
    edges: int
    by_layer: dict[str, int]


class StatsSeriesOut(_Out):
    snapshots: list[StatsSnapshot] = Field(description="Oldest first.")
