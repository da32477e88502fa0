"""Ebbinghaus forgetting curve with emotional slowing, review band and archiving.

    R = exp(-elapsed_days / (S * m)),   m = 1 + (cap - 1) * clip(max(|valence|, arousal, significance), 0, 1)

``S`` is the memory's stability in days (``MemoryItem.stability``), clamped to
[min_stability, max_stability]; ``m`` in [1, cap] is the emotional multiplier
(McGaugh: arousing experiences are forgotten more slowly). Core memories never
decay (R = 1). Below ``review_threshold`` a memory needs review; at or below
``archive_threshold`` it is archived (kept, recoverable), and an archived memory
whose retrievability has recovered (because it was accessed again, resetting
its clock, or its stability grew) is restored.

Every function accepts scalars or numpy arrays (broadcast together) and returns a
float for all-scalar input, an ndarray otherwise: ageing N memories by one
simulated day is one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

SECONDS_PER_DAY = 86400.0

# Status codes returned by ``status`` (small ints so they vectorise).
KEEP = 0  # active and healthy
REVIEW = 1  # active, retrievability in the review band
ARCHIVE = 2  # active, retrievability at or below the archive threshold: archive it now
RESTORE = 3  # archived, retrievability recovered above the review band: restore it
ARCHIVED = 4  # archived and still faded: leave it archived

STATUS_NAMES = {KEEP: "keep", REVIEW: "review", ARCHIVE: "archive", RESTORE: "restore", ARCHIVED: "archived"}


@dataclass(frozen=True)
class EbbinghausParams(Params):
    default_stability: float = bounded(1.0, 0.01, 36500.0, "S0 in days for a new memory (paper table: 1.0 day)")
    min_stability: float = bounded(0.1, 0.001, 36500.0, "lower clamp for S in days (code: 0.1)")
    max_stability: float = bounded(365.0, 0.01, 36500.0, "upper clamp for S in days (code: 365)")
    emotional_cap: float = bounded(3.0, 1.0, 10.0, "largest emotional multiplier of S (paper table: 3.0x)")
    review_threshold: float = bounded(0.3, 0.0, 1.0, "R at or below which an active memory needs review")
    archive_threshold: float = bounded(0.1, 0.0, 1.0, "R at or below which an active memory is archived")
    growth_factor: float = bounded(1.3, 1.0, 10.0, "S multiplier on a successful review (paper table: 1.3x)")
    lapse_factor: float = bounded(0.5, 0.01, 1.0, "S multiplier on a failed review")
    low_information_words: float = bounded(
        6.0, 0.0, 1000.0, "decay archives only memories that say less than this many words said once in the store "
        "(mechanisms.information), once R falls to review_threshold; 0 archives every memory at archive_threshold "
        "(the paper)")
    rehearsal_min_words: float = bounded(
        1.0, 0.0, 1000.0, "a recall rehearses a hit only when the words they share say at least this many words "
        "said once; 0 rehearses every hit (the paper)")
    archive_cue_words: float = bounded(
        1.0, 0.0, 1000.0, "recall reaches an archived memory when the query shares at least this many words said "
        "once with it (a specific cue brings a forgotten memory back); 0: archived memories are recalled only when "
        "asked for (the paper)")

    spare_named: bool = field(default=True, metadata={
        "doc": "value-aware forgetting never archives a memory that names someone or something beyond the "
               "partition's speakers or gives a number (text.names_something), however few words it says"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.spare_named, bool):
            raise ConfigError(f"EbbinghausParams.spare_named must be True or False, got {self.spare_named!r}")
        if self.min_stability > self.max_stability:
            raise ConfigError("EbbinghausParams.min_stability must not exceed max_stability")
        if not self.min_stability <= self.default_stability <= self.max_stability:
            raise ConfigError("EbbinghausParams.default_stability must lie in [min_stability, max_stability]")
        if self.archive_threshold > self.review_threshold:
            raise ConfigError("EbbinghausParams.archive_threshold must not exceed review_threshold")


DEFAULTS = EbbinghausParams()


def _out(x: np.ndarray, *inputs: Any) -> Any:
    """A Python float/int/bool when every input was a scalar, else the array."""
    if all(np.ndim(v) == 0 for v in inputs):
        return x.item()
    return x


def emotional_multiplier(
    *, arousal: Any = 0.0, valence: Any = 0.0, significance: Any = 0.0, params: EbbinghausParams = DEFAULTS
) -> Any:
    """m in [1, emotional_cap]: how much emotion stretches the forgetting curve.

    The strongest of |valence|, arousal and significance drives it (the tagger's
    decay multiplier uses the same rule, so a stored tag and this agree).
    """
    a = np.asarray(arousal, dtype=float)
    v = np.asarray(valence, dtype=float)
    s = np.asarray(significance, dtype=float)
    intensity = np.clip(np.maximum(np.maximum(np.abs(v), a), s), 0.0, 1.0)
    m = 1.0 + (params.emotional_cap - 1.0) * intensity
    return _out(m, arousal, valence, significance)


def elapsed_days(*, now: Any, last_access: Any) -> Any:
    """Days since ``last_access`` (both seconds since the epoch); never negative."""
    d = np.maximum(0.0, (np.asarray(now, dtype=float) - np.asarray(last_access, dtype=float)) / SECONDS_PER_DAY)
    return _out(d, now, last_access)


def retrievability(
    *,
    elapsed_days: Any,
    stability: Any,
    arousal: Any = 0.0,
    valence: Any = 0.0,
    significance: Any = 0.0,
    core: Any = False,
    params: EbbinghausParams = DEFAULTS,
) -> Any:
    """R = exp(-t / (S * m)) in (0, 1]; exactly 1 for core memories and for t <= 0."""
    t = np.maximum(0.0, np.asarray(elapsed_days, dtype=float))
    s = np.clip(np.asarray(stability, dtype=float), params.min_stability, params.max_stability)
    m = np.asarray(
        emotional_multiplier(arousal=arousal, valence=valence, significance=significance, params=params), dtype=float
    )
    r = np.exp(-t / (s * m))
    r = np.where(np.asarray(core, dtype=bool), 1.0, r)
    return _out(r, elapsed_days, stability, arousal, valence, significance, core)


def status(
    *, retrievability: Any, archived: Any = False, core: Any = False, low_value: Any = None,
    params: EbbinghausParams = DEFAULTS,
) -> Any:
    """What decay() should do with each memory: KEEP, REVIEW, ARCHIVE, RESTORE or ARCHIVED.

    Active memories: R <= archive_threshold -> ARCHIVE; R <= review_threshold -> REVIEW.
    Archived memories come back (RESTORE) only once R is above the review band, so a
    memory hovering around the archive threshold does not flap in and out.
    Core memories are always KEEP (or RESTORE if someone archived one).

    With ``low_value`` (a flag per memory: it says little, see ``mechanisms.information``)
    forgetting is value-aware: a low-value memory is archived as soon as it needs review
    (R <= review_threshold), any other one is never archived (an archived one is restored),
    however faded: forgetting then takes small talk, not what the store knows.
    """
    r = np.asarray(retrievability, dtype=float)
    arch = np.asarray(archived, dtype=bool)
    is_core = np.asarray(core, dtype=bool)
    if low_value is None:
        active = np.where(
            r <= params.archive_threshold, ARCHIVE, np.where(r <= params.review_threshold, REVIEW, KEEP)
        )
        faded = np.where(r > params.review_threshold, RESTORE, ARCHIVED)
    else:
        low = np.asarray(low_value, dtype=bool)
        needs_review = r <= params.review_threshold
        active = np.where(needs_review, np.where(low, ARCHIVE, REVIEW), KEEP)
        faded = np.where(needs_review & low, ARCHIVED, RESTORE)
    code = np.where(arch, faded, active)
    code = np.where(is_core, np.where(arch, RESTORE, KEEP), code)
    return _out(code.astype(np.int8), retrievability, archived, core, *(() if low_value is None else (low_value,)))


def review_stability(*, stability: Any, success: Any = True, params: EbbinghausParams = DEFAULTS) -> Any:
    """New S after a review: x growth_factor when recalled, x lapse_factor when forgotten, clamped."""
    s = np.asarray(stability, dtype=float)
    ok = np.asarray(success, dtype=bool)
    new = np.clip(s * np.where(ok, params.growth_factor, params.lapse_factor), params.min_stability, params.max_stability)
    return _out(new, stability, success)


def days_until(
    *,
    threshold: float,
    stability: Any,
    arousal: Any = 0.0,
    valence: Any = 0.0,
    significance: Any = 0.0,
    params: EbbinghausParams = DEFAULTS,
) -> Any:
    """Days after the last access at which R falls to ``threshold`` (e.g. review_threshold).

    Solves exp(-t / (S m)) = threshold: t = -S m ln(threshold). Infinite for threshold 0.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValidationError(f"threshold must be in [0, 1], got {threshold!r}")
    s = np.clip(np.asarray(stability, dtype=float), params.min_stability, params.max_stability)
    m = np.asarray(
        emotional_multiplier(arousal=arousal, valence=valence, significance=significance, params=params), dtype=float
    )
    neg_log = 0.0 - math.log(threshold) if threshold > 0.0 else math.inf  # 0.0 - avoids -0.0
    return _out(s * m * neg_log, stability, arousal, valence, significance)


__all__ = [
    "ARCHIVE",
    "ARCHIVED",
    "KEEP",
    "RESTORE",
    "REVIEW",
    "STATUS_NAMES",
    "EbbinghausParams",
    "days_until",
    "elapsed_days",
    "emotional_multiplier",
    "retrievability",
    "review_stability",
    "status",
]
