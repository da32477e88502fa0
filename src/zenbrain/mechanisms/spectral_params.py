"""Parameters of the spectral health check (``mechanisms.spectral``), kept apart from the
solver so that building a ``Config`` does not import scipy's sparse linear algebra."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..params import Params, bounded

__all__ = ["SpectralParams"]


@dataclass(frozen=True)
class SpectralParams(Params):
    fragmentation_threshold: float = bounded(0.01, 0.0, 1e6, "lambda_2 below which the graph counts as fragmented")
    min_weight: float = bounded(0.01, 0.0, 1e6, "floor applied to every edge weight")
    dense_max_nodes: int = bounded(500, 2, 20_000, "largest graph solved with a dense eigensolver")
    shift: float = bounded(1e-3, 1e-9, 1.0, "shift-invert offset for the sparse eigensolver (L + shift I is invertible)")
    max_bridges: int = bounded(1, 0, 1000, "bridges proposed: largest component to each of the next ones")
    min_bridge_similarity: float = bounded(0.3, -1.0, 1.0, "cosine below which no bridge is proposed")
    report_rtol: float = bounded(
        1e-3, 1e-12, 0.5, "relative error of a lambda_2 computed iteratively for a health report (the "
        "fragmentation decision is settled whatever it is)"
    )
    reuse_tolerance: float = bounded(
        0.01, 0.0, 1.0, "largest relative error of a lambda_2 rescaled from the last one instead of recomputed"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("dense_max_nodes", "max_bridges"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ConfigError(f"SpectralParams.{name} must be an integer")
