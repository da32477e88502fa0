"""Longitudinal workloads: memory used through simulated months, not filled in one batch.

* :mod:`.timeline` - a zenbrain store driven session by session on a simulated clock, with
  ``decay`` and ``sleep`` every night, and the baselines behind the same interface;
  the runner that asks questions at checkpoints.
* :mod:`.locomo_timeline` - LoCoMo sessions at their own dates (``bench locomo --timeline``).
* :mod:`.updates` - knowledge that changes: seeded update pairs, LoCoMo update pairs,
  LongMemEval knowledge-update items (``bench updates``).
* :mod:`.noise` - low-value chatter beside the facts that matter (``bench noise``).
* :mod:`.ablation` - every mechanism switched off in turn on these workloads, with paired
  statistics (``bench mechanisms``).

docs/benchmarks.md ("Memory through time") describes the protocols.
"""
