"""Vector arithmetic shared by the indexes, the stores and the mechanisms.

float16 <-> float32 conversion of stored vectors:

Vectors are kept as float16 (in the store and in the index files) and scored in float32,
so every search, re-rank and novelty test converts rows. numpy converts half floats one
element at a time in portable code, about 2 ns an element for dense values and 4-5 ns
for zeros (the hashing embedder's vectors are two thirds zeros): a store's novelty sample
of 1,024 rows took 0.7-1.9 ms in that conversion alone. NumKong (a dependency of usearch
already) converts with the CPU's F16C/AVX-512 instructions, 20-40x faster, with the same
bits as numpy for every value but NaN payloads (all 65,536 float16 values and a million
float32 values over 15 decades compared).

Cosines of a few query vectors with many stored rows (``row_cosines``), in float32.
"""

from __future__ import annotations

from typing import Any, Literal

import numkong
import numpy as np


def _converted(a: Any, source: type, target: type, name: Literal["float32", "float16"]) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype != source or not a.size:
        return np.array(a, dtype=target)
    out = np.empty(a.shape, dtype=target)
    numkong.astype(np.ascontiguousarray(a), name, out=out)
    return out


def to_float32(a: Any) -> np.ndarray:
    """``a`` (any shape) as a new float32 array; float16 input through SIMD."""
    return _converted(a, np.float16, np.float32, "float32")


def to_float16(a: Any) -> np.ndarray:
    """``a`` (any shape) rounded to a new float16 array (ties to even, as numpy rounds)."""
    return _converted(a, np.float32, np.float16, "float16")


def row_cosines(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(m, n) cosines of unit float32 ``queries`` (m, d) with float32 ``rows`` (n, d): the
    products divided by the rows' norms after the product (0 for a zero row)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    raw = queries @ rows.T
    return np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
