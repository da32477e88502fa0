"""Global-workspace context assembler: specialist modules compete for a token budget.

Each specialist (core facts, working memory, recalled episodes, semantic facts,
procedures, intentions, curiosity prompts, recent session, ...) submits a
:class:`Bid`: a salience in [0, 1] and its text items in order of preference.

1. Hysteresis: a module that won the previous round (within ``hysteresis_ttl_s``)
   bids with ``salience + hysteresis_bonus``, so a challenger must beat it by that
   margin to displace it. The authors' version has no hysteresis although the
   paper claims "hysteresis-stabilised broadcast".
2. Modules marked ``always`` (core facts) are placed first, inside a reserved
   share of the budget (``reserved_fraction``, 5 %: the authors' 600 of 12,000).
3. The other modules compete: those with effective salience >= ``min_salience``
   (0.2), best first (ties by name), at most ``max_winners`` (4); if fewer than
   ``min_winners`` (2) qualify, the best ones are taken anyway.
4. The rest of the budget is split among the winners in proportion to their
   effective salience; each fills its share with whole items in order; what is
   left is then offered to the winners again, in order.

Tokens are estimated as ``ceil(characters / 4)`` (``chars_per_token``):
deterministic, needs no tokenizer, and close to BPE tokenizers on English text.
The estimate is exact in characters, so the assembled text never exceeds the
budget. The text is Markdown: a ``## title`` line per module, one ``- item`` line
per item, modules separated by a blank line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

# Suggested module names for the eight specialists.
CORE = "core"
WORKING = "working"
EPISODIC = "episodic"
SEMANTIC = "semantic"
PROCEDURAL = "procedural"
INTENTIONS = "intentions"
CURIOSITY = "curiosity"
SESSION = "session"

_SEP = "\n\n"
_BULLET = "\n- "


@dataclass(frozen=True)
class WorkspaceParams(Params):
    reserved_fraction: float = bounded(0.05, 0.0, 1.0, "share of the budget reserved for always-included modules")
    max_winners: int = bounded(4, 1, 64, "most competitive modules admitted")
    min_winners: int = bounded(2, 0, 64, "fallback: admit this many even below min_salience")
    min_salience: float = bounded(0.2, 0.0, 1.0, "effective salience a module needs to compete")
    hysteresis_bonus: float = bounded(0.1, 0.0, 1.0, "salience bonus of last round's winners")
    hysteresis_ttl_s: float = bounded(3600.0, 0.0, 365 * 86400.0, "how long a win keeps its bonus (s)")
    chars_per_token: float = bounded(4.0, 1.0, 16.0, "characters per estimated token")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("max_winners", "min_winners"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"WorkspaceParams.{name} must be a whole number")


DEFAULT_PARAMS = WorkspaceParams()


@dataclass(frozen=True)
class Bid:
    module: str
    salience: float
    items: tuple[str, ...]
    always: bool = False
    title: str | None = None


@dataclass(frozen=True)
class WorkspaceState:
    winners: tuple[str, ...] = ()
    at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"winners": list(self.winners), "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkspaceState:
        return cls(winners=tuple(data.get("winners", ())), at=data.get("at"))


@dataclass(frozen=True)
class Selection:
    module: str
    salience: float
    effective: float
    won: bool
    items_used: int
    items_offered: int
    tokens: int
    reason: str


@dataclass(frozen=True)
class Workspace:
    text: str
    tokens: int
    budget: int
    selections: tuple[Selection, ...]
    state: WorkspaceState = field(default_factory=WorkspaceState)

    @property
    def winners(self) -> tuple[str, ...]:
        return tuple(s.module for s in self.selections if s.won)


def estimate_tokens(text: str, *, params: WorkspaceParams = DEFAULT_PARAMS) -> int:
    """ceil(len(text) / chars_per_token)."""
    return math.ceil(len(text) / params.chars_per_token)


class _Section:
    def __init__(self, bid: Bid) -> None:
        self.bid = bid
        self.header = f"## {bid.title or bid.module}"
        self.used: list[int] = []  # indices of placed items

    def cost_of(self, i: int, first_section: bool) -> int:
        c = len(_BULLET) + len(self.bid.items[i])
        if not self.used:
            c += len(self.header) + (0 if first_section else len(_SEP))
        return c

    def text(self) -> str:
        return self.header + "".join(_BULLET + self.bid.items[i] for i in sorted(self.used))


def assemble(
    bids: Sequence[Bid],
    *,
    budget_tokens: int,
    now: float,
    state: WorkspaceState = WorkspaceState(),
    params: WorkspaceParams = DEFAULT_PARAMS,
) -> Workspace:
    """Run one competition and return the assembled context, who won and why."""
    if budget_tokens < 0:
        raise ValidationError(f"budget_tokens must be >= 0, got {budget_tokens}")
    names = [b.module for b in bids]
    if len(set(names)) != len(names):
        raise ValidationError("module names in one competition must be unique")
    for b in bids:
        if not math.isfinite(b.salience):
            raise ValidationError(f"salience of {b.module!r} must be finite")
    budget_chars = math.floor(budget_tokens * params.chars_per_token)
    recent = state.at is not None and 0.0 <= now - state.at <= params.hysteresis_ttl_s
    prev = set(state.winners) if recent else set()

    def eff(b: Bid) -> float:
        return min(1.0, max(0.0, b.salience)) + (params.hysteresis_bonus if b.module in prev else 0.0)

    used_chars = 0
    sections: list[_Section] = []
    reasons: dict[str, str] = {}

    def place(sec: _Section, limit: int) -> int:
        """Greedily place the section's remaining items within ``limit`` chars; return chars used."""
        nonlocal used_chars
        spent = 0
        for i in range(len(sec.bid.items)):
            if i in sec.used or not sec.bid.items[i]:
                continue
            c = sec.cost_of(i, first_section=not any(s.used for s in sections if s is not sec))
            if spent + c <= limit and used_chars + c <= budget_chars:
                sec.used.append(i)
                spent += c
                used_chars += c
        return spent

    # 1. always-included modules inside the reserve
    always = sorted((b for b in bids if b.always), key=lambda b: (-eff(b), b.module))
    reserve = math.floor(params.reserved_fraction * budget_chars) if always else 0
    for b in always:
        sec = _Section(b)
        sections.append(sec)
        reserve -= place(sec, reserve)
        reasons[b.module] = "always included (reserved share)"

    # 2. competition
    rivals = sorted((b for b in bids if not b.always), key=lambda b: (-eff(b), b.module))
    with_items = [b for b in rivals if any(b.items)]
    qualified = [b for b in with_items if eff(b) >= params.min_salience]
    if len(qualified) < params.min_winners:
        qualified = with_items[: int(params.min_winners)]
    winners = qualified[: int(params.max_winners)]
    for b in rivals:
        if not any(b.items):
            reasons[b.module] = "no items to offer"
        elif b not in qualified:
            reasons[b.module] = f"effective salience {eff(b):.2f} below {params.min_salience:.2f}"
        elif b not in winners:
            reasons[b.module] = f"outside the top {int(params.max_winners)}"

    # 3. proportional shares, then leftovers in order
    free = budget_chars - used_chars
    total = sum(eff(b) for b in winners)
    won_secs = [_Section(b) for b in winners]
    sections.extend(won_secs)
    for sec in won_secs:
        share = free * (eff(sec.bid) / total if total > 0 else 1.0 / len(won_secs))
        place(sec, math.floor(share))
    for sec in won_secs:
        place(sec, budget_chars - used_chars)

    text = _SEP.join(s.text() for s in sections if s.used)
    selections: list[Selection] = []
    placed: set[str] = set()
    for sec in sections:
        b = sec.bid
        n = len(sec.used)
        tok = estimate_tokens(sec.text(), params=params) if n else 0
        bonus = " (+hysteresis)" if b.module in prev else ""
        if n:
            placed.add(b.module)
            reason = reasons.get(b.module) or f"won with effective salience {eff(b):.2f}{bonus}"
            reason += f"; {n}/{len(b.items)} items"
        else:
            reason = (reasons.get(b.module, "won") + "; no item fitted the budget")
        selections.append(Selection(b.module, b.salience, eff(b), n > 0, n, len(b.items), tok, reason))
    for b in rivals:
        if b not in winners:
            selections.append(Selection(b.module, b.salience, eff(b), False, 0, len(b.items), 0, reasons[b.module]))
    new_state = WorkspaceState(winners=tuple(b.module for b in winners if b.module in placed), at=float(now))
    return Workspace(text=text, tokens=estimate_tokens(text, params=params), budget=int(budget_tokens),
                     selections=tuple(selections), state=new_state)


__all__ = [
    "CORE",
    "CURIOSITY",
    "DEFAULT_PARAMS",
    "EPISODIC",
    "INTENTIONS",
    "PROCEDURAL",
    "SEMANTIC",
    "SESSION",
    "WORKING",
    "Bid",
    "Selection",
    "Workspace",
    "WorkspaceParams",
    "WorkspaceState",
    "assemble",
    "estimate_tokens",
]
