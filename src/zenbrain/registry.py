"""The mechanism registry: every mechanism of the paper by name, each switchable.

A switched-off mechanism is skipped at the point where the coordinator would call it,
so an ablation runs the same code path minus exactly that mechanism.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from .errors import ConfigError

# Every mechanism's registry name: a type checker refuses a misspelt switch.
MechanismName = Literal[
    "ebbinghaus_decay", "fsrs", "vmpfc_fsrs", "two_factor_hebbian", "simulation_selection_sleep",
    "bayesian_confidence", "emotional_tagging", "query_aware_fusion", "bm25_hybrid", "ib_budget",
    "dual_process_cot", "imad_debate", "spectral_kg_health", "compositional_context",
    "neuromodulator", "reconsolidation", "triple_copy", "priority_map", "stability_protector",
    "metacognitive_monitor",
    "metacognitive_hyperagent", "stc_rescue", "global_workspace", "prospective_memory", "curiosity",
]

FOUNDATIONAL: tuple[MechanismName, ...] = (
    "ebbinghaus_decay",
    "fsrs",
    "vmpfc_fsrs",
    "two_factor_hebbian",
    "simulation_selection_sleep",
    "bayesian_confidence",
    "emotional_tagging",
    "query_aware_fusion",
    "bm25_hybrid",
    "ib_budget",
    "dual_process_cot",
    "imad_debate",
    "spectral_kg_health",
    "compositional_context",
)

PMA: tuple[MechanismName, ...] = (
    "neuromodulator",
    "reconsolidation",
    "triple_copy",
    "priority_map",
    "stability_protector",
    "metacognitive_monitor",
)

ADDITIONAL: tuple[MechanismName, ...] = (
    "metacognitive_hyperagent",
    "stc_rescue",
    "global_workspace",
    "prospective_memory",
    "curiosity",
)

ALL_MECHANISMS: tuple[MechanismName, ...] = FOUNDATIONAL + PMA + ADDITIONAL
if set(ALL_MECHANISMS) != set(get_args(MechanismName)) or len(ALL_MECHANISMS) != len(get_args(MechanismName)):
    raise RuntimeError("the registry's groups and MechanismName disagree")

# The fifteen mechanisms of the paper's one-at-a-time ablation (its Tables 7-9).
PAPER_FIFTEEN: tuple[MechanismName, ...] = (
    "two_factor_hebbian",
    "simulation_selection_sleep",
    "vmpfc_fsrs",
    "imad_debate",
    "spectral_kg_health",
    "compositional_context",
    "ib_budget",
    "dual_process_cot",
    "metacognitive_hyperagent",
    "neuromodulator",
    "reconsolidation",
    "triple_copy",
    "priority_map",
    "stability_protector",
    "metacognitive_monitor",
)


def check_names(names: Iterable[str]) -> frozenset[str]:
    """Return the names as a set, or raise ConfigError naming every unknown one."""
    names = frozenset(names)
    unknown = sorted(names.difference(ALL_MECHANISMS))
    if unknown:
        raise ConfigError(
            f"unknown mechanism name(s): {', '.join(unknown)}; known: {', '.join(ALL_MECHANISMS)}"
        )
    return names


@dataclass(frozen=True)
class Mechanisms:
    """Which mechanisms are on. Default: all of them."""

    disabled: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "disabled", check_names(self.disabled))

    @classmethod
    def all_on(cls) -> Mechanisms:
        return cls()

    @classmethod
    def only(cls, names: Iterable[str]) -> Mechanisms:
        keep = check_names(names)
        return cls(disabled=frozenset(ALL_MECHANISMS) - keep)

    @classmethod
    def none(cls) -> Mechanisms:
        return cls(disabled=frozenset(ALL_MECHANISMS))

    def on(self, name: str) -> bool:
        if name not in ALL_MECHANISMS:
            raise ConfigError(f"unknown mechanism name: {name}")
        return name not in self.disabled

    def without(self, *names: str) -> Mechanisms:
        return Mechanisms(disabled=self.disabled | check_names(names))

    def with_(self, *names: str) -> Mechanisms:
        return Mechanisms(disabled=self.disabled - check_names(names))

    def as_dict(self) -> Mapping[str, bool]:
        return {name: name not in self.disabled for name in ALL_MECHANISMS}


__all__ = ["ADDITIONAL", "ALL_MECHANISMS", "FOUNDATIONAL", "PAPER_FIFTEEN", "PMA", "MechanismName", "Mechanisms",
           "check_names"]
