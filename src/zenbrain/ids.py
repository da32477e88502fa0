"""New ids for memories and intentions: random by default, reproducible on request.

Ids are 32 hex digits of a version-4 UUID. Inside ``seeded_ids(seed)`` they are drawn from
a generator seeded with ``seed`` instead of the operating system's randomness, so a run
stores the same ids every time - and every tie the library breaks by id (the order of
sleep's replay pool, of consolidation's clusters, of equally scored recall hits) falls the
same way. Experiments and tests use it; an application never needs to.

The seeded generator lives in a context variable: it applies to the block's thread (or
task) only, and nested blocks restore the outer one when they end.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["new_id", "seeded_ids"]

_SEEDED: ContextVar[random.Random | None] = ContextVar("zenbrain_seeded_ids", default=None)


def new_id() -> str:
    """A new id: ``uuid4().hex``, or the next seeded one inside ``seeded_ids``."""
    rng = _SEEDED.get()
    if rng is None:
        return uuid.uuid4().hex
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex


@contextlib.contextmanager
def seeded_ids(seed: int) -> Iterator[None]:
    """Ids from a generator seeded with ``seed`` for the duration of the block."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        from .errors import ValidationError

        raise ValidationError(f"seed must be an integer, got {seed!r}")
    token = _SEEDED.set(random.Random(seed))
    try:
        yield
    finally:
        _SEEDED.reset(token)
