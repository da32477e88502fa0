"""The float16 conversions give numpy's bits, fast; row cosines as the novelty test uses them."""

import numpy as np

from zenbrain.vecmath import row_cosines, to_float16, to_float32


def test_every_half_float_widens_to_numpys_value():
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    got, want = to_float32(halves), halves.astype(np.float32)
    assert got.dtype == np.float32 and got.shape == halves.shape
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))
    assert np.isnan(got[~finite]).all()


def test_float32_rounds_to_half_as_numpy_rounds():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-9, 6, 200_000)).astype(np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(to_float16(x).view(np.uint16), want.view(np.uint16))


def test_conversions_keep_shape_and_take_views_and_empties():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((9, 384)).astype(np.float16)
    np.testing.assert_array_equal(to_float32(m[::2]), m[::2].astype(np.float32))  # strided rows
    assert to_float32(np.zeros((0, 384), np.float16)).shape == (0, 384)
    assert to_float32(np.ones(3, np.float64)).dtype == np.float32  # other types through numpy


def test_row_cosines():
    q = np.array([[1.0, 0.0]], np.float32)
    rows = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 0.0], [-3.0, 0.0]], np.float32)
    np.testing.assert_allclose(row_cosines(q, rows), [[1.0, 2 ** -0.5, 0.0, -1.0]], rtol=1e-6)


def test_stored_vectors_are_base64_and_old_hex_still_reads():
    from zenbrain.state import decode_vec, encode_vec

    v = np.random.default_rng(2).standard_normal(384).astype(np.float32)
    text = encode_vec(v)
    assert text.startswith("z") and len(text) == 1 + 1024
    np.testing.assert_array_equal(decode_vec(text), v.astype(np.float16).astype(np.float32))
    old = v.astype("<f2").tobytes().hex()  # as versions before wrote it
    np.testing.assert_array_equal(decode_vec(old), decode_vec(text))
