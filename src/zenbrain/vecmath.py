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

from typing import Any

import numkong
import numpy as np


def to_float32(a: Any) -> np.ndarray:
    """``a`` (any shape) as a new float32 array; float16 input through SIMD."""
    a = np.asarray(a)
    if a.dtype != np.float16 or not a.size:
        return np.array(a, dtype=np.float32)
    out = np.empty(a.shape, dtype=np.float32)
    numkong.astype(np.ascontiguousarray(a), "float32", out=out)
    return out


def to_float16(a: Any) -> np.ndarray:
    """``a`` (any shape) rounded to a new float16 array (ties to even, as numpy rounds)."""
    a = np.asarray(a)
    if a.dtype != np.float32 or not a.size:
        return np.array(a, dtype=np.float16)
    out = np.empty(a.shape, dtype=np.float16)
    numkong.astype(np.ascontiguousarray(a), "float16", out=out)
    return out


def row_cosines(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(m, n) cosines of unit float32 ``queries`` (m, d) with float32 ``rows`` (n, d): the
    products divided by the rows' norms after the product (0 for a zero row)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    raw = queries @ rows.T
    return np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
