"""Schemathesis against the live REST server: generated requests, valid and invalid, from
the OpenAPI document; every response must have a documented status, match its schema,
and no valid request may be refused, no invalid one accepted, nothing may answer 500.

A few rules relate fields in ways JSON Schema cannot state (a memory related to itself,
the same memory reviewed twice in one call, the working and short-term layers needing a
session_id query parameter, a cue the embedder finds no word in). The library refuses those with a 400 ValidationError whose
message names the rule; only these messages are accepted for schema-valid requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from live_server import LiveServer
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from zenbrain import open_memory
from zenbrain.server.rest import create_app

RULES_THE_SCHEMA_CANNOT_STATE = (
    "a memory cannot be related to itself",
    "each memory may be reviewed once per call",
    "layer is bound to a session",
    "only a memory of this session can move",
    "cue_embedding must be a finite, non-zero vector",  # a cue with no word the embedder knows
    "supersedes: no memory",  # an id that names no memory of the scope
)


@schemathesis.check
def valid_requests_are_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """positive_data_acceptance, except for the cross-field rules above, and an
    Idempotency-Key the generator reused for another request (a rule across requests)."""
    if response.status_code == 400:
        message = (response.json() or {}).get("message", "")
        if any(rule in message for rule in RULES_THE_SCHEMA_CANNOT_STATE):
            return None
    if response.status_code == 422 and (response.json() or {}).get("error") == "IdempotencyKeyReused":
        return None
    return positive_data_acceptance(ctx, response, case)


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    mem = open_memory(tmp_path_factory.mktemp("fuzz") / "fuzz.db", embedder="hashing:64")
    server = LiveServer(create_app(mem))
    yield schemathesis.openapi.from_url(server.url + "/openapi.json")
    server.stop()
    mem.close()


# Hypothesis drives each operation's strategy directly (schemathesis' pytest plugin does not
# yet run under this pytest): a few seeded cases per operation and mode keep it to seconds.
@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_keeps_the_promises_of_its_schema(api_schema: Any, mode: GenerationMode) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 37
    for op in operations:

        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=3, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
        def check(case: Any) -> None:
            case.call_and_validate(excluded_checks=[positive_data_acceptance],
                                   additional_checks=[valid_requests_are_accepted])

        try:
            check()
        except Unsatisfiable:  # no invalid request exists (no parameters, no body): nothing to send
            assert mode is GenerationMode.NEGATIVE, op.label
