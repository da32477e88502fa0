"""Mulberry32, bit-exact with the JavaScript generator of the paper's simulation protocol.

Part of the replica of *the paper's simulation protocol, not zenbrain*.

The protocol draws every random number from Mulberry32 (REFERENCE.md section 3.1)::

    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
    t = imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2**32;

Every operation is a 32-bit integer operation, so it is emulated here on unsigned
32-bit values: ``Math.imul`` keeps the low 32 bits of the product (identical for the
signed and unsigned reading of the operands), ``>>>`` is a logical shift of the
unsigned bit pattern, and ``(a + b) ^ c`` wraps the sum modulo 2**32 (``ToInt32``).

The generator is *counter based*: after ``n`` calls the state is
``seed + n * 0x6D2B79F5 (mod 2**32)`` and the output depends on that state alone.
:func:`mulberry32_block` uses this to produce any stretch of the stream with numpy in
one vectorised step; :class:`Stream` hands the draws out in order, one at a time or in
blocks, so a sequential protocol keeps its exact draw order while the arithmetic is
vectorised.
"""

from __future__ import annotations

import numpy as np

__all__ = ["INCREMENT", "MASK32", "Mulberry32", "Stream", "mulberry32_block"]

MASK32 = 0xFFFFFFFF
INCREMENT = 0x6D2B79F5
_TWO32 = 4294967296.0


def _imul(a: int, b: int) -> int:
    """Math.imul on unsigned 32-bit patterns: the low 32 bits of the product."""
    return (a * b) & MASK32


def _output(state: int) -> int:
    """The tempering of one Mulberry32 state into a 32-bit output word."""
    t = _imul(state ^ (state >> 15), state | 1)
    t = ((t + _imul(t ^ (t >> 7), t | 61)) & MASK32) ^ t
    return (t ^ (t >> 14)) & MASK32


class Mulberry32:
    """The scalar generator: one call, one draw in [0, 1).

    ``Mulberry32(42)()`` returns the same double as ``mulberry32(42)()`` in JavaScript.
    """

    __slots__ = ("calls", "state")

    def __init__(self, seed: int) -> None:
        self.state = int(seed) & MASK32
        self.calls = 0

    def next_uint32(self) -> int:
        self.state = (self.state + INCREMENT) & MASK32
        self.calls += 1
        return _output(self.state)

    def random(self) -> float:
        return self.next_uint32() / _TWO32

    __call__ = random


def mulberry32_block(seed: int, start: int, count: int) -> np.ndarray:
    """Draws number ``start`` .. ``start + count - 1`` (0-based) of the stream for ``seed``.

    Returns float64 values in [0, 1), equal bit for bit to calling the scalar
    generator ``start + count`` times and keeping the last ``count`` results.
    """
    if count <= 0:
        return np.empty(0, dtype=np.float64)
    mask = np.uint64(MASK32)
    n = np.arange(start + 1, start + count + 1, dtype=np.uint64)
    state = (np.uint64(int(seed) & MASK32) + n * np.uint64(INCREMENT)) & mask
    t = ((state ^ (state >> np.uint64(15))) * (state | np.uint64(1))) & mask
    t = ((t + (((t ^ (t >> np.uint64(7))) * (t | np.uint64(61))) & mask)) & mask) ^ t
    out = (t ^ (t >> np.uint64(14))) & mask
    return out.astype(np.float64) / _TWO32


class Stream:
    """One seed's stream, consumed strictly in order.

    ``next()`` gives one draw, ``take(n)`` the next ``n`` draws as an array; both advance
    the same position, so mixing them keeps the JavaScript draw order. ``fork_at``
    starts a second reader of the same seed at a given position (the protocol re-seeds
    ``mulberry32(seed)`` for every configuration and replays the same dataset draws).
    """

    _CHUNK = 4096

    def __init__(self, seed: int, position: int = 0) -> None:
        self.seed = int(seed)
        self.position = int(position)
        self._buf: list[float] = []
        self._buf_start = self.position

    def _refill(self) -> None:
        self._buf_start = self.position
        self._buf = mulberry32_block(self.seed, self.position, self._CHUNK).tolist()

    def next(self) -> float:
        offset = self.position - self._buf_start
        if offset < 0 or offset >= len(self._buf):
            self._refill()
            offset = 0
        self.position += 1
        return self._buf[offset]

    __call__ = next

    def take(self, count: int) -> np.ndarray:
        values = mulberry32_block(self.seed, self.position, count)
        self.position += int(count)
        return values

    def fork_at(self, position: int) -> Stream:
        return Stream(self.seed, position)
