"""Typed configuration. Nothing here reads the environment at import time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from .errors import ConfigError
from .model import Layer, QueryType
from .params import Params, bounded
from .registry import Mechanisms

MAX_CONTENT_CHARS = 32_000  # documented limit: longer content is refused, not truncated
MAX_METADATA_BYTES = 64_000

P = TypeVar("P", bound=Params)

_ONE = {layer: 1.0 for layer in Layer}


def _weights(**over: float) -> dict[Layer, float]:
    w = dict(_ONE)
    for name, value in over.items():
        w[Layer(name)] = value
    return w


# Query-type layer weights (paper appendix "Query-Aware Cross-Layer Retrieval": temporal
# queries amplify episodic 2.0, factual amplify semantic 1.8; the rest are our choices).
DEFAULT_LAYER_WEIGHTS: dict[str, dict[Layer, float]] = {
    QueryType.TEMPORAL: _weights(episodic=2.0, short_term=1.3, working=1.2),
    QueryType.PROCEDURAL: _weights(procedural=2.0, semantic=1.2),
    QueryType.FACTUAL: _weights(semantic=1.8, core=1.3),
    QueryType.IDENTITY: _weights(core=2.0, semantic=1.3),
    QueryType.GENERAL: _weights(working=1.2, short_term=1.1),
}


@dataclass(frozen=True)
class RecallParams(Params):
    per_layer_k: int = bounded(8, 1, 1000, "dense candidates taken from every layer (paper: K = 8)")
    candidate_factor: int = bounded(3, 1, 50, "candidates per layer are at least factor x k")
    lexical_k: int = bounded(50, 0, 5000, "candidates taken from the BM25 index")
    lexical_weight: float = bounded(0.5, 0.0, 1.0, "share of the BM25 score in the hybrid similarity")
    alpha_boost: float = bounded(0.2, 0.0, 2.0, "Two-Factor boost strength (paper: 0.2)")
    retrievability_floor: float = bounded(0.0, 0.0, 1.0, "score factor = floor + (1 - floor) * R")
    dedup_jaccard: float = bounded(0.9, 0.0, 1.0, "drop a hit whose token Jaccard with a better hit exceeds this")
    temporal_boost: float = bounded(0.25, 0.0, 5.0, "bonus for hits inside a time window named by the query")
    recency_boost: float = bounded(0.15, 0.0, 5.0, "bonus for the most recent (or earliest) hits of last/first queries")
    cross_context_weight: float = bounded(0.8, 0.0, 2.0, "weight of hits from another, allowed, context")


@dataclass(frozen=True)
class LayerParams(Params):
    working_capacity: int = bounded(7, 1, 1000, "items kept in working memory per session (Miller's 7)")
    short_term_ttl_hours: float = bounded(24.0, 0.01, 24 * 365, "a short-term item older than this is consolidated")


@dataclass(frozen=True)
class LifecycleLimits(Params):
    """Caps and couplings of the offline passes (not mechanism parameters of the paper)."""

    sleep_max_episodes: int = bounded(5000, 1, 10_000_000, "most recent active episodes in the replay pool")
    reward_saturation: float = bounded(5.0, 1.0, 1e6, "recalls at which an episode's usage reward reaches 1")
    patience_gain: float = bounded(0.4, 0.0, 1.0, "theta_v = theta_0 + gain * (5HT patience - 0.5)")
    consolidate_max_episodes: int = bounded(
        2000, 2, 100_000, "most recent unconsolidated episodes clustered per context and run"
    )
    schema_attach_similarity: float = bounded(
        0.8, -1.0, 1.0, "a new cluster this similar to an existing schema joins it instead of making another"
    )
    stc_max_pairs: int = bounded(2_000_000, 1_000, 1_000_000_000, "tagged x donor pairs examined per block")
    compositional_max_per_context: int = bounded(
        2000, 3, 10_000_000, "most recent vectors per context used to fit the shared basis"
    )
    curiosity_queue_size: int = bounded(50, 1, 1_000_000, "gaps kept in the curiosity queue")
    curiosity_history: int = bounded(8, 2, 1000, "confidence points kept per fact for learning progress")
    curiosity_min_interval_s: float = bounded(3600.0, 0.0, 1e9, "least time between two confidence points")


@dataclass(frozen=True)
class Config:
    mechanisms: Mechanisms = field(default_factory=Mechanisms)
    recall: RecallParams = field(default_factory=RecallParams)
    layers: LayerParams = field(default_factory=LayerParams)
    lifecycle: LifecycleLimits = field(default_factory=LifecycleLimits)
    layer_weights: dict[str, dict[Layer, float]] = field(default_factory=lambda: DEFAULT_LAYER_WEIGHTS)
    # Which contexts may see which: pairs (reader_context, source_context); "*" matches any.
    context_links: frozenset[tuple[str, str]] = frozenset()
    disabled_layers: frozenset[Layer] = frozenset()
    max_content_chars: int = MAX_CONTENT_CHARS
    seed: int = 0
    # Per-mechanism parameter overrides, by registry name (e.g. {"ebbinghaus_decay": EbbinghausParams(...)}).
    params: dict[str, Params] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for qtype, weights in self.layer_weights.items():
            for layer, w in weights.items():
                if not (0.0 <= float(w) <= 10.0):
                    raise ConfigError(f"layer weight {qtype}/{layer} = {w} is outside [0, 10]")
        for pair in self.context_links:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
                raise ConfigError(f"context_links entries must be (reader, source) pairs, got {pair!r}")
        object.__setattr__(self, "disabled_layers", frozenset(Layer.parse(x) for x in self.disabled_layers))
        from .registry import check_names

        check_names(self.params)

    def param(self, mechanism: str, default: P) -> P:
        """The parameters of a mechanism: the override if one was given, else ``default``."""
        value = self.params.get(mechanism, default)
        if not isinstance(value, type(default)):
            raise ConfigError(f"params[{mechanism!r}] must be a {type(default).__name__}, got {type(value).__name__}")
        return value

    def context_allowed(self, reader: str, source: str) -> bool:
        if reader == source:
            return True
        for r, s in self.context_links:
            if r in (reader, "*") and s in (source, "*"):
                return True
        return False

    def without(self, *mechanisms: str) -> Config:
        from dataclasses import replace

        return replace(self, mechanisms=self.mechanisms.without(*mechanisms))
