"""Every key of the state that mechanisms keep, declared once.

Three kinds of state live beside a memory's columns:

- ``MemoryState``: the per-memory mechanism state (``MemoryItem.state``, stored as JSON);
- per-partition key-value records (``KV_*`` keys; one JSON value each, per user and agent);
- the edge relations the library writes itself (``RELATION_*``).

The metadata keys the library reads from (or writes into) a memory's user-visible
metadata are listed as ``META_*``.
"""

from __future__ import annotations

import base64
from typing import Any, Final, TypedDict

import numpy as np


class MemoryState(TypedDict, total=False):
    """Mechanism state of one memory. Every key is optional: a mechanism that is switched
    off writes none of its keys, and a memory stored before a mechanism existed has none."""

    fsrs: dict[str, Any]  # FSRS card (mechanisms.fsrs_schedule card dict)
    due_at: float  # next review (epoch seconds); mirrored in the store's due_at column
    vmpfc: dict[str, float]  # the last review's context-shift prediction error and interval factor
    review_topic: str  # the recall topic vector at the last review (``encode_vec``), for vmPFC
    copies: dict[str, float]  # TripleCopy CopyState.to_dict()
    priority: float  # PriorityMap score in [0, 1]
    significance: float  # emotional significance in [0, 1]
    labile_until: float  # end of the reconsolidation window (epoch seconds)
    outcomes: dict[str, int]  # procedural use: {"ok": n, "fail": n}
    rescued: int  # STC rescue count
    rescued_at: float  # time of the last STC rescue (epoch seconds)
    archived_by: str  # which stage archived the memory: "decay" or "ib_budget"
    consolidated_into: str  # id of the schema that carries this episode's gist
    consolidated_uses: int  # the episode's access_count when it was folded into that schema
    conf_local: list[float]  # [alpha, beta]: local Beta evidence, the unary factor of propagation
    conf_written: list[float]  # [alpha, beta]: what propagation last wrote to conf_alpha / conf_beta
    conf_history: list[list[float]]  # [[t, confidence], ...]: recent confidence points (curiosity's slope)
    mentioned: list[list[float]]  # [[start, end], ...]: the times the text speaks of ("last Saturday")


# Keys of MemoryState, for code that names them as values.
FSRS: Final = "fsrs"
DUE_AT: Final = "due_at"
VMPFC: Final = "vmpfc"
REVIEW_TOPIC: Final = "review_topic"
COPIES: Final = "copies"
PRIORITY: Final = "priority"
SIGNIFICANCE: Final = "significance"
LABILE_UNTIL: Final = "labile_until"
OUTCOMES: Final = "outcomes"
RESCUED: Final = "rescued"
RESCUED_AT: Final = "rescued_at"
ARCHIVED_BY: Final = "archived_by"
CONSOLIDATED_INTO: Final = "consolidated_into"
CONSOLIDATED_USES: Final = "consolidated_uses"
CONF_LOCAL: Final = "conf_local"
CONF_WRITTEN: Final = "conf_written"
CONF_HISTORY: Final = "conf_history"
MENTIONED: Final = "mentioned"

# Per-partition key-value records.
KV_NEURO: Final = "neuromodulator"  # NeuromodulatorState.to_dict()
KV_METACOG: Final = "metacognition"  # the MetacognitiveMonitor's log (segments under "metacognition:...")
KV_HYPER: Final = "hyperagent"  # HyperAgent state and change log; "values" holds the tuned parameters
KV_COMPOSITIONAL: Final = "compositional"  # CompositionalState as JSON
KV_INTENTIONS: Final = "intentions"  # one list per context: see intentions_key
KV_WORKSPACE: Final = "workspace"  # WorkspaceState.to_dict()
KV_TOPIC: Final = "topic_vector"  # running average of recent query vectors (float16 hex)
KV_GOAL: Final = "goal_vector"  # the current goal's vector (float16 hex)
KV_DEBATES: Final = "debates"  # the latest iMAD debate entries
KV_SPECTRAL: Final = "spectral"  # the last spectral health report per context
KV_SPECTRAL_CACHE: Final = "spectral_cache"  # {context: FiedlerMemo entry}: lambda_2 reuse between sleeps
KV_CURIOSITY: Final = "curiosity"  # the ranked knowledge-gap queue
KV_EDGE_DECAY: Final = "edge_decay"  # {"at": time of the last Two-Factor edge decay}
KV_SPEAKERS: Final = "speakers"  # the names of everyone who spoke in the partition's memories
KV_INFORMATION: Final = "information"  # InformationReference.to_dict(): the words' document frequencies
KV_INFORMATION_VERSION: Final = "information_version"  # [time, N, total, fingerprint] of the saved frequencies
KV_NAME_VOCABULARY: Final = "name_vocabulary"  # NameVocabulary.to_dict() and the fingerprint it goes with

# Edge relations the library's own mechanisms write.
RELATION_TEMPORAL: Final = "temporal"  # consecutive memories of one batch
RELATION_SIMILAR: Final = "similar"  # a new memory and a similar recently active one
RELATION_SHARES_ENTITY: Final = "shares_entity"  # memories naming the same entity
RELATION_CO_RECALL: Final = "co_recall"  # top hits of one recall (Hebbian co-activation)
RELATION_CONTRADICTS: Final = "contradicts"  # a new fact and a stored one it contradicts
RELATION_SUPPORTS: Final = "supports"  # near-duplicate facts that agree
RELATION_EVIDENCE_OF: Final = "evidence_of"  # episode -> schema: provenance, never decayed or pruned
RELATION_BRIDGE: Final = "bridge"  # spectral health: joins two components of the graph
RELATION_COUNTERFACTUAL: Final = "counterfactual"  # sleep: a selected counterfactual's bridge edge
PROVENANCE: Final = frozenset({RELATION_EVIDENCE_OF})
# Relations only the library's mechanisms write: an application cannot declare them
# (``relate``), so an edge of any other relation was declared (``contradicts`` and
# ``supports`` may be either).
MECHANISM_RELATIONS: Final = frozenset({RELATION_EVIDENCE_OF, RELATION_COUNTERFACTUAL, RELATION_BRIDGE,
                                        RELATION_CO_RECALL, RELATION_TEMPORAL, RELATION_SIMILAR,
                                        RELATION_SHARES_ENTITY})

# Metadata keys the library reads or writes.
META_KIND: Final = "kind"  # an explicit kind given in metadata
META_EVENT_TIME: Final = "event_time"  # an explicit event time given in metadata
META_ENTITIES: Final = "entities"  # named entities found in a fact (written at store time)
META_DISPUTED: Final = "disputed"  # a new fact that lost an iMAD debate
META_EVIDENCE_IDS: Final = "evidence_ids"  # the episodes a schema was abstracted from
META_SCHEMA_METHOD: Final = "method"  # how a schema was written (dual_process.Schema.method)
META_REPRESENTATIVE_ID: Final = "representative_id"  # the episode nearest a schema's centroid
META_REVISES: Final = "revises"  # the memory a reconsolidated new episode revises
META_REWARD: Final = "reward"  # task outcome in [0, 1] (sleep selection, priority)
META_TD_ERROR: Final = "td_error"  # |delta_TD| in [0, 1] (sleep selection)
META_STEPS: Final = "steps"  # list of step strings of a procedure-like memory
META_SOURCE_RELIABILITY: Final = "source_reliability"  # weight of a fact's evidence
META_SPEAKER: Final = "speaker"  # who said it, when a record gives it in its metadata


def intentions_key(context: str) -> str:
    """Intentions belong to the context they were made in, and fire only there."""
    return f"{KV_INTENTIONS}:{context}"


VEC_BASE64: Final = "z"  # begins a vector in base64; the hex of earlier versions never has a "z"


def encode_vec(v: np.ndarray) -> str:
    """A vector as stored in state and kv records: little-endian float16 in base64, after
    ``VEC_BASE64``. A memory's review topic (a MiniLM vector) takes 1,025 characters of its
    state instead of the 1,536 of the hex earlier versions wrote (three quarters of a
    reviewed memory's state), which ``decode_vec`` still reads."""
    return VEC_BASE64 + base64.b64encode(np.asarray(v, dtype="<f2").tobytes()).decode("ascii")


def decode_vec(s: str) -> np.ndarray:
    raw = base64.b64decode(s[1:]) if s[:1] == VEC_BASE64 else bytes.fromhex(s)
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)
