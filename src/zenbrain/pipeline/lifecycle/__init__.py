"""Offline lifecycle of memory: decay, consolidation and sleep.

Every function works on the scope's whole partition (all contexts of its user and
agent; working and short-term memory are session-bound and left to ``end_session``)
and returns a :class:`~zenbrain.results.Report` whose ``stages`` map a stage name to
a dict of what changed: counts *and* the ids and values changed. A stage whose
mechanism is switched off reports ``{"skipped": "switched off"}`` and changes nothing.

``run_decay`` stages: ``retrievability``, ``stc_rescue``, ``archive``, ``restore``,
``review`` (see :mod:`zenbrain.pipeline.lifecycle.decay`).

``run_consolidate`` stages: ``dual_process_cot``, ``ib_budget``, ``procedures``
(see :mod:`zenbrain.pipeline.lifecycle.consolidate`).

``run_sleep`` stages, in order:

1. ``neuromodulator``: homeostasis of the tonic levels to now (kv ``neuromodulator``);
   its consolidation patience (5HT) moves the replay selection threshold theta_v.
2. ``two_factor_hebbian``: importance-gated decay of association edges for the time
   since the last pass; edges below the prune threshold are deleted. Time passes first,
   then replay acts on the decayed weights.
3. ``simulation_selection_sleep``: replay pool = the most recent real episodes plus
   counterfactuals generated from surprising failures (``engine.rng``); TAG selects LTP
   or LTD on memory strengths and on edge weights (through the EWC constraint when
   Two-Factor is on); a memory's stability and TripleCopy encoding strength scale with
   its strength (new / old), so LTP slows its forgetting and LTD speeds it up; a selected
   counterfactual strengthens or creates its bridge edge; edges below tau are pruned.
4. ``triple_copy``: every replayed memory (LTP, or an endpoint of a selected
   counterfactual) consolidates: its deep copy's target grows by its TAG.
5. ``dual_process_cot``, ``ib_budget``, ``procedures``: as ``run_consolidate``.
6. ``bayesian_confidence``: belief propagation over the semantic facts' supports /
   contradicts / ... edges, updating conf_alpha / conf_beta.
7. ``spectral_kg_health``: Fiedler value per context graph; a fragmented graph gets the
   proposed ``bridge`` edges; before/after reported, the last lambda_2 kept in kv. While a
   graph keeps its nodes and pairs and its weights moved by factors within
   ``SpectralParams.reuse_tolerance`` (relative error of lambda_2, 1 % by default) since
   lambda_2 was last computed, it is rescaled from that value (kv ``spectral_cache``)
   instead of recomputed and reported with ``fiedler_error``. A graph beyond
   ``SpectralParams.dense_max_nodes`` that is costly to factorise gets lambda_2 from LOBPCG
   (warm-started from the last block over the same nodes) to ``SpectralParams.report_rtol``
   (0.1 %) and past the fragmentation threshold for certain. Components and bridges are
   always computed afresh.
8. ``compositional_context``: shared and per-context bases fitted over the partition's
   vectors, saved in kv ``compositional``.
9. ``curiosity``: knowledge gaps ranked, the queue saved in kv ``curiosity``.
10. ``metacognitive_hyperagent``: signals from the MetacognitiveMonitor log (kv
    ``metacognition``), one HyperAgent step, state and change log saved in kv ``hyperagent``.
11. ``retrievability``, ``stc_rescue``, ``archive``, ``restore``, ``review``: as ``run_decay``.

``run_sleep(..., detail=False)`` keeps every count but leaves out the entries that grow
with the store: ``two_factor_hebbian.decayed`` becomes ``decayed_count``;
``simulation_selection_sleep`` drops ``ltp``, ``ltd``, ``skipped_ids`` and
``edges_changed`` (counted in its ``summary``); ``triple_copy`` drops ``memories``
(counted by ``promoted``); ``bayesian_confidence.changed`` becomes ``changed_count``.
Pruned edges, counterfactuals, created edges and bridges, schemas, archived, restored and
rescued memories are listed either way. The history log and every write are the same.

Each stage writes in its own transaction (schemas are created through
``store_many``), so a failure leaves the earlier stages applied and the later
ones untouched; the one exception is the Two-Factor decay, whose edge writes and pass
time are committed in replay's transaction (so an edge decayed and then changed by
replay is written once): a failure in replay leaves the decay unapplied too, and the
next sleep decays the same span. The partition is read once per operation into a
:class:`Snapshot` that the stages keep current as they write (edges are read again
after ``store_many``, which links the new schemas). Caps that keep sleep fast are in
:class:`zenbrain.config.LifecycleLimits` (``Config.lifecycle``).
"""

from __future__ import annotations

from ...engine import Engine
from ...model import Scope
from ...results import Report
from ..access import partition_of
from ..sessions import expire_short_term
from .beliefs import bayesian_stage
from .common import Snapshot
from .consolidate import consolidate_stages
from .context_bases import compositional_stage
from .curiosity import curiosity_stage
from .decay import decay_stages, restore
from .edge_decay import edge_decay_stage
from .graph_health import spectral_stage
from .hyperagent import hyperagent_stage
from .neuromod import neuromodulator_stage
from .promotion import triple_copy_stage
from .replay import selection_stage


def run_decay(engine: Engine, scope: Scope) -> Report:
    """Forgetting: R of every memory, STC rescue, then archive / restore / review."""
    report = Report("decay", engine.clock.now())
    report.stages.update(decay_stages(engine, scope))
    return report


def run_consolidate(engine: Engine, scope: Scope) -> Report:
    """Episodes to schemas (dual process), the IB budget over covered episodes, procedures."""
    report = Report("consolidate", engine.clock.now())
    report.stages.update(consolidate_stages(engine, scope))
    return report


def run_sleep(engine: Engine, scope: Scope, *, detail: bool = True) -> Report:
    """The whole offline pipeline; see the module docstring for the order.

    ``detail=False`` returns a summary: the stages whose entries grow with the store
    report counts instead of one entry per item (see the module docstring); what the
    stages change is the same either way.
    """
    part = partition_of(scope)
    report = Report("sleep", engine.clock.now())
    st = report.stages
    # Sessions nobody ended: short-term memory older than its TTL is consolidated first.
    st["short_term_expiry"] = expire_short_term(engine, scope)
    snap = Snapshot(engine, part)  # read once; every stage keeps it current

    def now() -> float:
        return engine.clock.now()

    st["neuromodulator"], neuro = neuromodulator_stage(engine, part, now())
    # Two-Factor decay is written with replay's edge changes (one write per edge).
    st["two_factor_hebbian"] = edge_decay_stage(engine, snap, now(), detail=detail, defer=True)
    st["simulation_selection_sleep"], replayed = selection_stage(engine, snap, now(), neuro, detail=detail)
    snap.flush()  # the decay, when replay wrote nothing
    st["triple_copy"] = triple_copy_stage(engine, snap, now(), replayed, detail=detail)
    st.update(consolidate_stages(engine, scope, snap))
    st["bayesian_confidence"] = bayesian_stage(engine, snap, now(), detail=detail)
    st["spectral_kg_health"] = spectral_stage(engine, snap, now(), scope.context)
    st["compositional_context"] = compositional_stage(engine, snap, now())
    st["curiosity"] = curiosity_stage(engine, snap, now())
    st["metacognitive_hyperagent"] = hyperagent_stage(engine, part, now())
    st.update(decay_stages(engine, scope, snap))
    return report


__all__ = ["restore", "run_consolidate", "run_decay", "run_sleep"]
