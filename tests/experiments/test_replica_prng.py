"""Mulberry32 of the replica (the paper's simulation protocol, not zenbrain) against an
independent emulation of the JavaScript semantics."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.experiments.replica.prng import Mulberry32, Stream, mulberry32_block

# --- an independent implementation: JavaScript's signed int32 semantics, spelled out ----


def _to_int32(x: int) -> int:
    """ECMAScript ToInt32 for an integer-valued number."""
    x %= 1 << 32
    return x - (1 << 32) if x >= 1 << 31 else x


def _js_imul(a: int, b: int) -> int:
    return _to_int32(_to_int32(a) * _to_int32(b))


def _js_ushr(a: int, n: int) -> int:
    """a >>> n: shift the unsigned reading of a."""
    return (a % (1 << 32)) >> n


class _JsMulberry32:
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self) -> float:
        self.seed = _to_int32(self.seed)  # seed |= 0
        self.seed = _to_int32(self.seed + 0x6D2B79F5)  # seed = (seed + 0x6D2B79F5) | 0
        t = _js_imul(self.seed ^ _js_ushr(self.seed, 15), 1 | self.seed)
        t = _to_int32(_to_int32(t + _js_imul(t ^ _js_ushr(t, 7), 61 | t)) ^ t)
        return _js_ushr(t ^ _js_ushr(t, 14), 0) / 4294967296


def test_first_draw_of_seed_zero_traced_by_hand():
    # state = 0 + 0x6D2B79F5
    # a = s ^ (s >>> 15) = 0x6D2BA3A3; b = s | 1 = 0x6D2B79F5; t = imul(a, b) = 0xFE7CA5FF
    # t ^ (t >>> 7) = 0xFF805CB4; t | 61 = 0xFE7CA5FF; imul = 0xBBCC5B4C
    # (t + imul) mod 2^32 = 0xBA49014B; ^ t = 0x4435A4B4
    # t ^ (t >>> 14) = 0x4434B462 = 1144304738 -> / 2^32
    assert 0x6D2BA3A3 * 0x6D2B79F5 % 2**32 == 0xFE7CA5FF
    assert 0xFF805CB4 * 0xFE7CA5FF % 2**32 == 0xBBCC5B4C
    assert (0xFE7CA5FF + 0xBBCC5B4C) % 2**32 ^ 0xFE7CA5FF == 0x4435A4B4
    assert 0x4435A4B4 ^ (0x4435A4B4 >> 14) == 0x4434B462
    assert Mulberry32(0)() == 1144304738 / 2**32
    assert _JsMulberry32(0)() == 1144304738 / 2**32


def test_known_values_seed_42():
    # From the independent JS-semantics emulation above (and the usual JS output).
    rng = Mulberry32(42)
    assert [rng() for _ in range(3)] == [0.6011037519201636, 0.44829055899754167, 0.8524657934904099]


@pytest.mark.parametrize("seed", [0, 1, 42, 123, 6144, -1, -123456789, 2**31, 2**32 + 7, 0x6D2B79F5])
def test_scalar_matches_js_semantics(seed):
    ours, ref = Mulberry32(seed), _JsMulberry32(seed)
    for _ in range(2000):
        assert ours() == ref()


@pytest.mark.parametrize("seed", [42, 3072, -5])
def test_block_matches_scalar(seed):
    rng = Mulberry32(seed)
    seq = np.array([rng() for _ in range(5000)])
    assert np.array_equal(mulberry32_block(seed, 0, 5000), seq)
    assert np.array_equal(mulberry32_block(seed, 1234, 777), seq[1234:2011])
    assert mulberry32_block(seed, 10, 0).shape == (0,)
    assert ((seq >= 0) & (seq < 1)).all()


def test_stream_interleaves_next_and_take_in_order():
    ref = Mulberry32(2048)
    expected = [ref() for _ in range(9000)]
    stream = Stream(2048)
    got: list[float] = []
    for i in range(300):
        if i % 3 == 0:
            got.extend(stream.take(17).tolist())
        else:
            got.append(stream.next())
    got.extend(stream.take(9000 - len(got)).tolist())
    assert got == expected
    assert stream.position == 9000
    fork = stream.fork_at(100)
    assert fork.next() == expected[100]
