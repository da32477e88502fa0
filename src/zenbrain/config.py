"""Typed configuration. Nothing here reads the environment at import time."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .mechanisms.bayesian import BayesianParams
from .mechanisms.compositional import CompositionalParams
from .mechanisms.dual_process import DualProcessParams
from .mechanisms.ebbinghaus import EbbinghausParams
from .mechanisms.emotional import EmotionalParams
from .mechanisms.fsrs_schedule import FsrsParams
from .mechanisms.ib_budget import IBParams
from .mechanisms.imad import IMADParams
from .mechanisms.sleep_selection import SleepParams
from .mechanisms.spectral_params import SpectralParams
from .mechanisms.two_factor import TwoFactorParams
from .mechanisms.vmpfc import VmpfcParams
from .model import Layer, QueryType
from .params import Params, bounded
from .pma.curiosity import CuriosityParams
from .pma.hyperagent import HyperAgentParams
from .pma.metacognition import MetacognitionParams
from .pma.neuromodulator import NeuromodulatorParams
from .pma.priority_map import PriorityParams
from .pma.prospective import ProspectiveParams
from .pma.reconsolidation import ReconsolidationParams
from .pma.stability import StabilityParams
from .pma.stc import STCParams
from .pma.triple_copy import TripleCopyParams
from .pma.workspace import WorkspaceParams
from .registry import Mechanisms, check_names
from .retrieval.fusion import get_recipe

MAX_CONTENT_CHARS = 32_000  # documented limit: longer content is refused, not truncated
MAX_METADATA_BYTES = 64_000

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
    current_inherits: bool = field(default=True, metadata={
        "doc": "current recall: a superseded memory that matched hands its score to the newest version of its fact"})
    subject_focus: float = bounded(1.0, 0.0, 10.0, "weight of meaning without the subject's name against BM25 when "
                                   "the notes about a subject the query names are compared (0: off)")
    answer_shape_weight: float = bounded(0.5, 0.0, 1.0, "among the notes about a subject the query names, the "
                                         "relevance kept by one that holds no answer of the shape the question asks "
                                         "for (who: another name; e-mail: an address; phone: a number), when another does (1: off)")
    foreign_lexical_weight: float = bounded(0.0, 0.0, 1.0, "share of its BM25 score a note keeps when it names "
                                            "others but none of the names the query asks about")
    # Priors from stored state reorder near-ties only: relevance decides. A faded memory loses
    # at most (1 - floor) of its score (the paper multiplies by R, which on a timeline of months
    # buries old but relevant memories below fresh chatter), and the query type's layer weight
    # w enters as w ** strength (the paper's 2.0 becomes 1.19).
    retrievability_floor: float = bounded(0.9, 0.0, 1.0, "score factor = floor + (1 - floor) * R (paper: 0)")
    layer_weight_strength: float = bounded(
        0.25, 0.0, 1.0, "a layer weight w of the query type enters the score as w ** strength (paper: 1)")
    dedup_jaccard: float = bounded(0.9, 0.0, 1.0, "drop a hit whose token Jaccard with a better hit exceeds this")
    temporal_boost: float = bounded(0.25, 0.0, 5.0, "bonus for hits inside a time window named by the query")
    recency_boost: float = bounded(0.15, 0.0, 5.0, "bonus for the most recent (or earliest) hits of last/first queries")
    cross_context_weight: float = bounded(0.8, 0.0, 2.0, "weight of hits from another, allowed, context")
    boost_pool: int = bounded(3, 1, 100, "the Two-Factor boost reads edges among the top (boost_pool x k) candidates")
    coactive_top: int = bounded(5, 2, 100, "top hits of one recall whose pairwise co-recall edges learn")
    topic_rate: float = bounded(0.2, 0.0, 1.0, "how fast the partition's topic vector follows new queries")
    contested_weight: float = bounded(0.3, 0.0, 0.5, "a contested fact's score x (1 - w (1 - confidence))")
    disputed_penalty: float = bounded(0.1, 0.0, 0.3, "score share given up by a fact that lost an iMAD debate")
    exchange_diversity: float = bounded(0.15, 0.0, 1.0, "a broad query's hit next to a better-placed turn of its "
                                        "session gives up this share of its score, once per such turn")
    # The fusion recipe (zenbrain.retrieval.fusion.RECIPES): how dense and lexical evidence
    # are combined, and how conversation turns are indexed when they are stored.
    recipe: str = "conversation"

    def __post_init__(self) -> None:
        super().__post_init__()
        r = get_recipe(self.recipe)
        if r.dense_view not in ("own", "context", "mean"):
            raise ConfigError(f"recipe {self.recipe!r}: dense_view {r.dense_view!r} needs two vectors per memory; "
                              "recall supports own, context and mean")


@dataclass(frozen=True)
class EncodingParams(Params):
    base_strength: float = bounded(0.6, 0.05, 1.0, "encoding strength of a neutral memory; emotion and priority move it")
    novelty_sample: int = bounded(1024, 1, 1_000_000, "stored memories sampled to judge a new one's novelty")


@dataclass(frozen=True)
class LinkParams(Params):
    recent_window: int = bounded(256, 0, 100_000, "recently active memories a new one may link to as co-active")
    links_per_item: int = bounded(3, 0, 100, "similar (and same-entity) memories a new memory links to")
    link_min_similarity: float = bounded(0.5, -1.0, 1.0, "least cosine of a 'similar' link")
    support_min_similarity: float = bounded(0.9, -1.0, 1.0, "least cosine at which an agreeing stored fact supports a new one")
    fact_neighbours: int = bounded(10, 1, 1000, "stored facts a new fact is checked against (contradiction, support)")
    debate_log_size: int = bounded(500, 0, 100_000, "iMAD debate entries kept per partition")


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
class MechanismParams:
    """Every mechanism's parameters, one typed field per registry name (the paper's defaults
    unless overridden): ``MechanismParams(ebbinghaus_decay=EbbinghausParams(archive_threshold=0.05))``."""

    ebbinghaus_decay: EbbinghausParams = field(default_factory=EbbinghausParams)
    fsrs: FsrsParams = field(default_factory=FsrsParams)
    vmpfc_fsrs: VmpfcParams = field(default_factory=VmpfcParams)
    two_factor_hebbian: TwoFactorParams = field(default_factory=TwoFactorParams)
    simulation_selection_sleep: SleepParams = field(default_factory=SleepParams)
    bayesian_confidence: BayesianParams = field(default_factory=BayesianParams)
    emotional_tagging: EmotionalParams = field(default_factory=EmotionalParams)
    ib_budget: IBParams = field(default_factory=IBParams)
    dual_process_cot: DualProcessParams = field(default_factory=DualProcessParams)
    imad_debate: IMADParams = field(default_factory=IMADParams)
    spectral_kg_health: SpectralParams = field(default_factory=SpectralParams)
    compositional_context: CompositionalParams = field(default_factory=CompositionalParams)
    neuromodulator: NeuromodulatorParams = field(default_factory=NeuromodulatorParams)
    reconsolidation: ReconsolidationParams = field(default_factory=ReconsolidationParams)
    triple_copy: TripleCopyParams = field(default_factory=TripleCopyParams)
    priority_map: PriorityParams = field(default_factory=PriorityParams)
    stability_protector: StabilityParams = field(default_factory=StabilityParams)
    metacognitive_monitor: MetacognitionParams = field(default_factory=MetacognitionParams)
    metacognitive_hyperagent: HyperAgentParams = field(default_factory=HyperAgentParams)
    stc_rescue: STCParams = field(default_factory=STCParams)
    global_workspace: WorkspaceParams = field(default_factory=WorkspaceParams)
    prospective_memory: ProspectiveParams = field(default_factory=ProspectiveParams)
    curiosity: CuriosityParams = field(default_factory=CuriosityParams)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            factory = f.default_factory
            if not callable(factory):  # every field has a default factory
                raise TypeError(f"MechanismParams.{f.name} needs a default_factory")
            expected = type(factory())
            if not isinstance(value, expected):
                raise ConfigError(f"params.{f.name} must be a {expected.__name__}, got {type(value).__name__}")

    @classmethod
    def of(cls, overrides: Mapping[str, Params]) -> MechanismParams:
        """From overrides by registry name (the names checked; the rest at their defaults)."""
        names = check_names(overrides)
        fields = {f.name for f in dataclasses.fields(cls)}
        without = sorted(names - fields)
        if without:
            raise ConfigError(f"mechanism(s) {', '.join(without)} take no parameters")
        # A mapping by name cannot carry per-name types; __post_init__ checks each value's type.
        by_name: dict[str, Any] = dict(overrides)
        return cls(**by_name)


@dataclass(frozen=True)
class Config:
    mechanisms: Mechanisms = field(default_factory=Mechanisms)
    recall: RecallParams = field(default_factory=RecallParams)
    layers: LayerParams = field(default_factory=LayerParams)
    encoding: EncodingParams = field(default_factory=EncodingParams)
    links: LinkParams = field(default_factory=LinkParams)
    lifecycle: LifecycleLimits = field(default_factory=LifecycleLimits)
    layer_weights: dict[str, dict[Layer, float]] = field(default_factory=lambda: DEFAULT_LAYER_WEIGHTS)
    # Which contexts may see which: pairs (reader_context, source_context); "*" matches any.
    context_links: frozenset[tuple[str, str]] = frozenset()
    disabled_layers: frozenset[Layer] = frozenset()
    max_content_chars: int = MAX_CONTENT_CHARS
    # Storing a record that repeats a memory word for word returns that memory and counts as
    # a use of it (zenbrain.pipeline.repeats); False keeps every copy. store(dedupe=) overrides it.
    dedupe: bool = True
    seed: int = 0
    # Every mechanism's parameters; a mapping of overrides by registry name is accepted too
    # (e.g. {"ebbinghaus_decay": EbbinghausParams(...)}).
    params: MechanismParams = field(default_factory=MechanismParams)

    def __post_init__(self) -> None:
        for qtype, weights in self.layer_weights.items():
            for layer, w in weights.items():
                if not (0.0 <= float(w) <= 10.0):
                    raise ConfigError(f"layer weight {qtype}/{layer} = {w} is outside [0, 10]")
        for pair in self.context_links:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
                raise ConfigError(f"context_links entries must be (reader, source) pairs, got {pair!r}")
        object.__setattr__(self, "disabled_layers", frozenset(Layer.parse(x) for x in self.disabled_layers))
        params: Any = self.params
        if isinstance(params, Mapping):
            object.__setattr__(self, "params", MechanismParams.of(params))
        elif not isinstance(params, MechanismParams):
            raise ConfigError(f"params must be MechanismParams or a mapping by mechanism name, got {type(params).__name__}")

    def context_allowed(self, reader: str, source: str) -> bool:
        if reader == source:
            return True
        for r, s in self.context_links:
            if r in (reader, "*") and s in (source, "*"):
                return True
        return False

    def without(self, *mechanisms: str) -> Config:
        return dataclasses.replace(self, mechanisms=self.mechanisms.without(*mechanisms))
