"""ReconsolidationEngine: a recalled memory is briefly labile and can be updated.

A recall opens a lability window (10 minutes). New content about the memory that
arrives inside the window is compared with the old content:

* raw prediction error ``PE`` = Jaccard distance of the normalised token sets,
  + 0.2 when the new content contradicts the old, = 1.0 on an explicit correction;
* ``PE_eff = clamp(PE * (1 + 0.3 NE - 0.2 5HT), 0, 1)`` (1.0 for a correction);
* mode by ``PE_eff``: confirmed < 0.1 <= selective_edit < 0.3 <= integration < 0.7
  <= new_episode, every threshold raised by the resistance of the memory's kind
  (procedural 0.15, core/identity 0.2, schema 0.1, preference 0.05), the
  ``UPDATE_RESISTANCE`` idea the authors defined but never used.

Unlike the authors' engine, which only logs a mode, :func:`plan_update` returns the
content to write:

* selective_edit: token-level diff (difflib) of old against new; replaced and
  inserted spans take the new tokens, spans the new content leaves out inside the
  text are dropped, spans it leaves out at the very start or end are kept (the new
  content is then a fragment, and omission is not negation);
* integration: the union of old and new at sentence level. A new sentence already
  covered by the old tokens is skipped; one that extends an old sentence (a token
  superset) replaces it; any other is appended. When the new content contradicts
  the old, the union would keep both claims, so the token-level edit is used
  instead and the new claim wins on the conflicting span;
* new_episode: the old memory stays untouched and a new memory is requested; on an
  explicit correction the old one is also flagged ``supersede_old``.

Gates: a confirmation changes nothing and needs no window. Otherwise, without an
open window the plan is ``blocked``, and when the StabilityProtector refuses it is
``protected``; in both cases the old memory is left alone and the new content is
requested as a new memory, so nothing the user said is lost. Every plan carries a
snapshot of the old content for rollback.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

CONFIRMED = "confirmed"
SELECTIVE_EDIT = "selective_edit"
INTEGRATION = "integration"
NEW_EPISODE = "new_episode"
BLOCKED = "blocked"
PROTECTED = "protected"
MODES: tuple[str, ...] = (CONFIRMED, SELECTIVE_EDIT, INTEGRATION, NEW_EPISODE)

_TOKEN_RE = re.compile(r"(\s*)(\S+)")
_EDGE_PUNCT_RE = re.compile(r"^[^\w]+|[^\w]+$")
_SENTENCE_SPLIT_RE = re.compile(r"((?<=[.!?;])\s+|\n+)")
_NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without",
     "nicht", "kein", "keine", "keinen", "keiner", "nie", "niemals"}
)


@dataclass(frozen=True)
class ReconsolidationParams(Params):
    lability_window_s: float = bounded(600.0, 0.0, 86400.0, "how long a recalled memory stays labile (s)")
    contradiction_bonus: float = bounded(0.2, 0.0, 1.0, "added to the raw PE when the new content contradicts")
    ne_gain: float = bounded(0.3, 0.0, 1.0, "PE_eff factor gain per unit of NE")
    serotonin_gain: float = bounded(0.2, 0.0, 1.0, "PE_eff factor loss per unit of 5HT")
    confirm_below: float = bounded(0.1, 0.0, 1.0, "PE_eff below this confirms the memory")
    edit_below: float = bounded(0.3, 0.0, 1.0, "PE_eff below this (and above confirm) edits selectively")
    integrate_below: float = bounded(0.7, 0.0, 1.0, "PE_eff below this integrates; at or above: new episode")
    resistance_procedural: float = bounded(0.15, 0.0, 0.29, "threshold shift for skills / procedures")
    resistance_core: float = bounded(0.2, 0.0, 0.29, "threshold shift for core / identity memories")
    resistance_schema: float = bounded(0.1, 0.0, 0.29, "threshold shift for consolidated schemas")
    resistance_preference: float = bounded(0.05, 0.0, 0.29, "threshold shift for preferences")
    negation_overlap: float = bounded(
        0.5, 0.0, 1.0, "token overlap (without negations) above which a negation flip counts as contradiction"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.confirm_below <= self.edit_below <= self.integrate_below:
            raise ConfigError("ReconsolidationParams needs confirm_below <= edit_below <= integrate_below")
        top = max(self.resistance_procedural, self.resistance_core, self.resistance_schema,
                  self.resistance_preference)
        if self.integrate_below + top >= 1.0:
            raise ConfigError(
                "ReconsolidationParams: integrate_below + the largest resistance must stay below 1, "
                "or a correction (PE 1.0) could not start a new episode"
            )


DEFAULT_PARAMS = ReconsolidationParams()


@dataclass(frozen=True)
class TokenEdit:
    """One changed span: old tokens [old_start, old_end) became ``new_text``."""

    op: str  # replace, insert, delete
    old_start: int
    old_end: int
    old_text: str
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "old_start": self.old_start, "old_end": self.old_end,
                "old_text": self.old_text, "new_text": self.new_text}


@dataclass(frozen=True)
class ReconsolidationPlan:
    """What to do with a memory after new content arrived about it.

    ``new_content`` is the content to write into the old memory, or None when it
    stays as it is. ``create_new_episode`` asks the caller to store the incoming
    content as a separate memory. ``snapshot_content`` / ``snapshot_at`` are what a
    rollback restores.
    """

    mode: str
    new_content: str | None
    create_new_episode: bool
    pe_raw: float
    pe_eff: float
    reason: str
    snapshot_content: str
    snapshot_at: float
    contradiction: bool = False
    correction: bool = False
    supersede_old: bool = False
    edits: tuple[TokenEdit, ...] = field(default=())

    @property
    def changes_content(self) -> bool:
        return self.new_content is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "new_content": self.new_content,
            "create_new_episode": self.create_new_episode,
            "pe_raw": self.pe_raw,
            "pe_eff": self.pe_eff,
            "reason": self.reason,
            "snapshot_content": self.snapshot_content,
            "snapshot_at": self.snapshot_at,
            "contradiction": self.contradiction,
            "correction": self.correction,
            "supersede_old": self.supersede_old,
            "edits": [e.to_dict() for e in self.edits],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReconsolidationPlan:
        d = dict(data)
        d["edits"] = tuple(TokenEdit(**e) for e in d.get("edits", ()))
        return cls(**d)


class _PlanBasis(TypedDict):
    """The fields every plan of one update shares, whatever its mode."""

    pe_raw: float
    pe_eff: float
    snapshot_content: str
    snapshot_at: float
    contradiction: bool
    correction: bool


# ---------------------------------------------------------------- tokens


def _norm(token: str) -> str:
    return _EDGE_PUNCT_RE.sub("", token.lower())


def _tokens(text: str) -> list[tuple[str, str]]:
    """(leading whitespace, token) pairs: the text is their concatenation (minus trailing space)."""
    return [(m.group(1), m.group(2)) for m in _TOKEN_RE.finditer(text)]


def token_set(text: str) -> frozenset[str]:
    """Normalised tokens (lower case, edge punctuation stripped), empty ones dropped."""
    return frozenset(t for t in (_norm(tok) for _, tok in _tokens(text)) if t)


def jaccard_distance(a: str, b: str) -> float:
    """1 - |A & B| / |A | B| on normalised token sets; 0 for two empty texts."""
    sa, sb = token_set(a), token_set(b)
    union = sa | sb
    if not union:
        return 0.0
    return 1.0 - len(sa & sb) / len(union)


def _is_negation(t: str) -> bool:
    return t in _NEGATIONS or t.endswith(("n't", "n\u2019t"))


def _negation_count(tokens: frozenset[str] | list[str]) -> int:
    return sum(1 for t in tokens if _is_negation(t))


def detect_contradiction(old: str, new: str, *, params: ReconsolidationParams = DEFAULT_PARAMS) -> bool:
    """Cheap heuristic: the two texts talk about the same thing but one negates it.

    True when the parity of negation words differs and the texts share at least
    ``negation_overlap`` of their other tokens. Callers with a better detector
    (an LLM judge, the debate mechanism) pass ``contradiction=`` instead.
    """
    ta = [_norm(t) for _, t in _tokens(old)]
    tb = [_norm(t) for _, t in _tokens(new)]
    if _negation_count(ta) % 2 == _negation_count(tb) % 2:
        return False
    ca = {t for t in ta if t and not _is_negation(t)}
    cb = {t for t in tb if t and not _is_negation(t)}
    if not ca or not cb:
        return False
    return len(ca & cb) / min(len(ca), len(cb)) >= params.negation_overlap


# ---------------------------------------------------------------- PE and modes


def prediction_error(
    old_content: str,
    new_content: str,
    *,
    contradiction: bool | None = None,
    correction: bool = False,
    params: ReconsolidationParams = DEFAULT_PARAMS,
) -> tuple[float, bool]:
    """(raw PE in [0, 1], contradiction flag). ``contradiction=None`` runs the heuristic."""
    if correction:
        return 1.0, True if contradiction is None else bool(contradiction)
    if contradiction is None:
        flag = detect_contradiction(old_content, new_content, params=params)
    else:
        flag = bool(contradiction)
    pe = jaccard_distance(old_content, new_content) + (params.contradiction_bonus if flag else 0.0)
    return min(1.0, pe), flag


def effective_pe(
    pe_raw: float, *, ne: float = 0.5, serotonin: float = 0.5, params: ReconsolidationParams = DEFAULT_PARAMS
) -> float:
    """PE_eff = clamp(PE * (1 + ne_gain * NE - serotonin_gain * 5HT), 0, 1)."""
    for name, v in (("pe_raw", pe_raw), ("ne", ne), ("serotonin", serotonin)):
        if not math.isfinite(v):
            raise ValidationError(f"{name} must be finite, got {v!r}")
    factor = 1.0 + params.ne_gain * ne - params.serotonin_gain * serotonin
    return min(1.0, max(0.0, pe_raw * factor))


def resistance(memory_kind: str | None, *, params: ReconsolidationParams = DEFAULT_PARAMS) -> float:
    """Threshold shift of a memory kind (Kind or Layer value; unknown kinds resist nothing)."""
    k = (memory_kind or "").strip().lower()
    if k in ("skill", "procedural", "procedure"):
        return params.resistance_procedural
    if k in ("identity", "core"):
        return params.resistance_core
    if k == "schema":
        return params.resistance_schema
    if k == "preference":
        return params.resistance_preference
    return 0.0


def mode_for(pe_eff: float, *, memory_kind: str | None = None, params: ReconsolidationParams = DEFAULT_PARAMS) -> str:
    """The PE-gated mode; monotone in ``pe_eff``."""
    r = resistance(memory_kind, params=params)
    if pe_eff < params.confirm_below + r:
        return CONFIRMED
    if pe_eff < params.edit_below + r:
        return SELECTIVE_EDIT
    if pe_eff < params.integrate_below + r:
        return INTEGRATION
    return NEW_EPISODE


def open_window(*, now: float, params: ReconsolidationParams = DEFAULT_PARAMS) -> float:
    """``labile_until`` for a memory recalled at ``now``: store it with the memory."""
    return now + params.lability_window_s


def is_labile(labile_until: float | None, *, now: float) -> bool:
    return labile_until is not None and now <= labile_until


# ---------------------------------------------------------------- content


def _join(tokens: list[tuple[str, str]]) -> str:
    out = []
    for i, (ws, tok) in enumerate(tokens):
        if i == 0:
            out.append(tok)
        else:
            out.append(ws if ws else " ")
            out.append(tok)
    return "".join(out)


def selective_edit(old_content: str, new_content: str) -> tuple[str, tuple[TokenEdit, ...]]:
    """Apply the token-level differences of ``new_content`` to ``old_content``.

    Equal spans keep the old surface form; replaced and inserted spans take the
    new tokens; interior deletions are applied; deletions at the very start or end
    are kept (the new content is a fragment), and so is the surplus of a longer old
    span replaced at an edge where the new content ends or starts.
    """
    old, new = _tokens(old_content), _tokens(new_content)
    a = [_norm(t) or t for _, t in old]
    b = [_norm(t) or t for _, t in new]
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    out: list[tuple[str, str]] = []
    edits: list[TokenEdit] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out.extend(old[i1:i2])
            continue
        if tag == "delete" and (i1 == 0 or i2 == len(old)):
            out.extend(old[i1:i2])
            continue
        n_new = j2 - j1
        if tag == "replace" and i2 - i1 > n_new:
            # a shorter replacement at an edge of both texts: the new content stops
            # (or starts) there, so the surplus old tokens at that edge are kept
            if i2 == len(old) and j2 == len(new):
                out.extend(new[j1:j2])
                out.extend(old[i1 + n_new : i2])
                edits.append(TokenEdit(tag, i1, i1 + n_new, _join(old[i1 : i1 + n_new]), _join(new[j1:j2])))
                continue
            if i1 == 0 and j1 == 0:
                out.extend(old[i1 : i2 - n_new])
                out.extend(new[j1:j2])
                edits.append(TokenEdit(tag, i2 - n_new, i2, _join(old[i2 - n_new : i2]), _join(new[j1:j2])))
                continue
        out.extend(new[j1:j2])
        edits.append(TokenEdit(tag, i1, i2, _join(old[i1:i2]), _join(new[j1:j2])))
    return _join(out), tuple(edits)


def _sentences(text: str) -> list[str]:
    """Alternating [sentence, separator, sentence, ...] so that ''.join gives the text back."""
    return _SENTENCE_SPLIT_RE.split(text)


def integrate(old_content: str, new_content: str) -> tuple[str, tuple[TokenEdit, ...]]:
    """Sentence-level union of old and new (see the module docstring)."""
    parts = _sentences(old_content.rstrip())
    known: set[str] = set(token_set(old_content))
    edits: list[TokenEdit] = []
    for sent in _sentences(new_content)[::2]:
        sent = sent.strip()
        st = token_set(sent)
        if not st or st <= known:
            continue  # already said
        # an old sentence that the new one extends is replaced by it
        best, best_size = -1, 0
        for i in range(0, len(parts), 2):
            ot = token_set(parts[i])
            if ot and ot <= st and len(ot) > best_size:
                best, best_size = i, len(ot)
        if best >= 0:
            edits.append(TokenEdit("replace", -1, -1, parts[best].strip(), sent))
            lead = parts[best][: len(parts[best]) - len(parts[best].lstrip())]
            parts[best] = lead + sent
        else:
            edits.append(TokenEdit("insert", -1, -1, "", sent))
            if parts and parts[-1].strip():
                last = parts[-1].rstrip()
                if last[-1] not in ".!?;:":
                    parts[-1] = last + "."
                parts.extend([" ", sent])
            else:
                parts = [sent]
        known |= st
    return "".join(parts), tuple(edits)


# ---------------------------------------------------------------- plan


def plan_update(
    old_content: str,
    new_content: str,
    *,
    labile_until: float | None,
    now: float,
    ne: float = 0.5,
    serotonin: float = 0.5,
    stability_allowed: bool = True,
    stability_threshold: float | None = None,
    memory_kind: str | None = None,
    contradiction: bool | None = None,
    correction: bool = False,
    params: ReconsolidationParams = DEFAULT_PARAMS,
) -> ReconsolidationPlan:
    """Decide and produce the update of one memory; pure, the caller writes.

    ``stability_allowed`` is the StabilityProtector's verdict; alternatively pass
    ``stability_threshold`` (from ``stability.update_threshold``) and the plan
    compares it with ``PE_eff`` itself. Both must allow the update.
    """
    if not isinstance(old_content, str) or not isinstance(new_content, str):
        raise ValidationError("old_content and new_content must be strings")
    pe_raw, flag = prediction_error(
        old_content, new_content, contradiction=contradiction, correction=correction, params=params
    )
    pe_eff = 1.0 if correction else effective_pe(pe_raw, ne=ne, serotonin=serotonin, params=params)
    base = mode_for(pe_eff, memory_kind=memory_kind, params=params)
    common = _PlanBasis(pe_raw=pe_raw, pe_eff=pe_eff, snapshot_content=old_content, snapshot_at=float(now),
                        contradiction=flag, correction=bool(correction))

    if base == CONFIRMED:
        return ReconsolidationPlan(mode=CONFIRMED, new_content=None, create_new_episode=False,
                                   reason=f"PE_eff {pe_eff:.3f} below the confirm threshold: nothing to change",
                                   **common)
    if not is_labile(labile_until, now=now):
        return ReconsolidationPlan(mode=BLOCKED, new_content=None, create_new_episode=True,
                                   reason="memory is not labile (no recall within the lability window); "
                                          "the old memory is kept and the new content stored separately",
                                   **common)
    allowed = stability_allowed and (stability_threshold is None or pe_eff >= stability_threshold)
    if not allowed:
        thr = "" if stability_threshold is None else f" (threshold {stability_threshold:.3f})"
        return ReconsolidationPlan(mode=PROTECTED, new_content=None, create_new_episode=True,
                                   reason=f"StabilityProtector refuses PE_eff {pe_eff:.3f}{thr}; "
                                          "the old memory is kept and the new content stored separately",
                                   **common)
    if base == NEW_EPISODE:
        why = "explicit correction" if correction else f"PE_eff {pe_eff:.3f} at or above the new-episode threshold"
        return ReconsolidationPlan(mode=NEW_EPISODE, new_content=None, create_new_episode=True,
                                   supersede_old=bool(correction),
                                   reason=f"{why}: old memory untouched, new memory requested", **common)
    if base == SELECTIVE_EDIT or flag:
        content, edits = selective_edit(old_content, new_content)
        how = "token-level edit" + (" (contradiction: the new claim wins)" if base == INTEGRATION else "")
    else:
        content, edits = integrate(old_content, new_content)
        how = "sentence-level union"
    if content == old_content or not edits:
        return ReconsolidationPlan(mode=base, new_content=None, create_new_episode=False,
                                   reason=f"{base} at PE_eff {pe_eff:.3f}: {how} leaves the content unchanged",
                                   **common)
    return ReconsolidationPlan(mode=base, new_content=content, create_new_episode=False, edits=edits,
                               reason=f"{base} at PE_eff {pe_eff:.3f}: {how}, {len(edits)} change(s)", **common)


def rollback(plan: ReconsolidationPlan) -> str:
    """The content to restore to undo ``plan``."""
    return plan.snapshot_content


__all__ = [
    "BLOCKED",
    "CONFIRMED",
    "DEFAULT_PARAMS",
    "INTEGRATION",
    "MODES",
    "NEW_EPISODE",
    "PROTECTED",
    "SELECTIVE_EDIT",
    "ReconsolidationParams",
    "ReconsolidationPlan",
    "TokenEdit",
    "detect_contradiction",
    "effective_pe",
    "integrate",
    "is_labile",
    "jaccard_distance",
    "mode_for",
    "open_window",
    "plan_update",
    "prediction_error",
    "resistance",
    "rollback",
    "selective_edit",
    "token_set",
]
