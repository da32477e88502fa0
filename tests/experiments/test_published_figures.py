"""The paper's figures in ``published.py`` are the ones printed in the paper: each row is
found, with the same digits, in its table or figure of the paper's TeX source (skipped
when the paper is not next to the repository)."""

import os
import re
from pathlib import Path

import pytest

from zenbrain.experiments import published as P

PAPER = Path(os.environ.get("ZENBRAIN_PAPER", Path(__file__).resolve().parents[2].parent / "shared" / "paper" / "zenbrain-paper.tex"))

pytestmark = pytest.mark.skipif(not PAPER.is_file(), reason=f"paper source not found at {PAPER}")


def _block(label: str, end: str) -> str:
    tex = PAPER.read_text(encoding="utf-8")
    start = tex.index(label)
    return tex[start: tex.index(end, start)]


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+", line.replace("$-$", "-").replace("$+$", "+"))]


def _row(block: str, label: str) -> str:
    rows = [r for r in block.split("\\\\") if r.strip().startswith(label) or f"\n        {label}" in r]
    assert len(rows) == 1, (label, rows)
    return rows[0]


def test_nodecay_rows():
    block = _block("\\label{tab:nodecay}", "\\end{tabular}")
    labels = {"static_rag": "Static RAG", "simple_memory": "Simple Memory", "zenbrain_nodecay": "ZenBrain-NoDecay",
              "zenbrain": "ZenBrain (full)"}
    for key, label in labels.items():
        want = P.PAPER_NODECAY[key]
        assert _numbers(_row(block, label)) == [want["p5"], want["r5"], want["mrr"], want["ndcg5"]]


def test_routing_rows():
    block = _block("\\label{tab:ablation}", "\\end{tabular}")
    labels = {"full": "ZenBrain-Full", "-working": "$-$ Working", "-short_term": "$-$ Short-Term",
              "-episodic": "$-$ Episodic", "-semantic": "$-$ Semantic", "-procedural": "$-$ Procedural",
              "-core": "$-$ Core", "-cross_context": "$-$ Cross-Context", "flat": "Flat Baseline"}
    for key, label in labels.items():
        row = _row(block, label)
        f1, task, delta = P.PAPER_ROUTING[key]
        nums = _numbers(row)
        assert nums[0] == f1 and nums[2] == task, (key, nums)  # mean, std, mean, std
        if delta is None:
            assert len(nums) == 4
        else:
            assert nums[4] == delta, (key, nums)
        assert ("^\\ast" in row) == (key in P.PAPER_ROUTING_STARRED)


def test_retention_curves_and_aurc():
    block = _block("\\label{app:retention}", "\\label{fig:retention}")
    plots = re.findall(r"\\addplot\[[^\]]*\] coordinates \{([^}]*)\};\s*\\addlegendentry\{([^}]*)\}", block)
    names = {"No-decay": "no_decay", "Ebbinghaus": "ebbinghaus", "FSRS-only": "fsrs_only", "ZenBrain": "full"}
    assert len(plots) == 4
    for coords, legend in plots:
        points = re.findall(r"\((\d+),([\d.]+)\)", coords)
        assert tuple(int(h) for h, _ in points) == P.PAPER_RETENTION_HOURS
        assert tuple(float(v) for _, v in points) == P.PAPER_RETENTION_CURVES[names[legend]]
    text = _block("The AURC (Area Under Retention Curve)", "ZenBrain's lower AURC")
    for key, legend in (("no_decay", "No-decay"), ("fsrs_only", "FSRS-only"), ("full", "ZenBrain"), ("ebbinghaus", "Ebbinghaus")):
        assert f"{legend} ({P.PAPER_RETENTION_AURC[key]:.3f})" in text


def test_sleep_table():
    block = _block("\\label{tab:sleep}", "\\end{tabular}")
    (s_mean, s_std), (n_mean, n_std) = P.PAPER_SLEEP["avg_stability"]
    assert f"{s_mean:.2f} $\\pm$ {s_std:.2f} & {n_mean:.2f} $\\pm$ {n_std:.2f}" in block
    with_sleep, without = P.PAPER_SLEEP["storage_tokens"]
    assert f"{with_sleep:,}".replace(",", "{,}") in block and f"{without:,}".replace(",", "{,}") in block
    assert f"{P.PAPER_SLEEP['storage_reduction_pct']:.1f}\\%" in block
    assert f"{P.PAPER_SLEEP['new_associations_per_run']:.1f} / run" in block
    assert f"{P.PAPER_SLEEP['ltp_memories']:.1f} memories" in _row(block, "Strengthened (LTP)")
    assert f"{P.PAPER_SLEEP['ltd_memories']:.1f} memories" in _row(block, "Decayed (LTD)")


def test_hebbian_bayesian_table():
    block = _block("\\label{tab:hebbian-bayesian}", "\\end{tabular}")
    h = P.PAPER_HEBBIAN_BAYESIAN
    assert _numbers(_row(block.split("Part A")[1], "P@5"))[:4] == [*h["p5_weighted"], *h["p5_uniform"]]
    assert _numbers(_row(block, "Intra/Inter Ratio")) == list(h["intra_inter_ratio"])
    auc = _numbers(_row(block, "Pairwise AUC"))
    assert auc == [*h["auc_after"], *h["auc_before"], h["auc_p"]]
    assert _numbers(_row(block, "True $\\Delta$conf")) == [h["delta_conf_true"]]
    assert _numbers(_row(block, "False $\\Delta$conf")) == [h["delta_conf_false"]]
    assert f"$d = {h['auc_cohens_d']:.2f}$" in _block("\\textbf{Part B: Bayesian Propagation.}", "\\begin{table}")
