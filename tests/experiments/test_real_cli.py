"""``zenbrain experiments`` writes JSON, markdown and PNG plots (small workloads)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zenbrain.cli import main
from zenbrain.experiments.real import ablation, retention
from zenbrain.experiments.real.ablation import Condition


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(ablation, "CONDITIONS", {"moderate": Condition("moderate", 24, 8, 10, 0.15)})
    monkeypatch.setattr(retention, "CHECKPOINT_HOURS", (1, 24, 72))
    monkeypatch.setattr(retention, "QUICK_FACTS", 40)


def test_cli_pma_writes_json_markdown_png(tmp_path, capsys):
    out = tmp_path / "pma"
    assert main(["experiments", "pma", "--seeds", "42", "123", "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["real"]["seeds"] == [42, 123] and "pma" in data["real"]
    assert data["replica"]["label"].startswith("the paper's simulation protocol")
    md = (out / "report.md").read_text()
    assert "| Metric | published | replica | real |" in md
    assert (out / "triple_copy.png").stat().st_size > 1000
    assert "wrote" in capsys.readouterr().out


def test_cli_ablation_and_retention_plots(tmp_path, tiny):
    out = tmp_path / "abl"
    assert main(["experiments", "moderate", "--seeds", "42", "--out", str(out), "--no-progress", "--workers", "1",
                 "--quick", "--no-replica"]) == 0
    assert (out / "criticality.png").stat().st_size > 1000
    md = (out / "report.md").read_text()
    assert "− TripleCopy" in md and "Bare (15 off)" in md
    data = json.loads((out / "results.json").read_text())
    rows = data["real"]["ablation"]["moderate"]["rows"]
    assert len(rows) == 18 and rows["-triple_copy"]["vs_full"]["quality"]["m_tests"] == 15
    out2 = tmp_path / "ret"
    assert main(["experiments", "retention", "--seeds", "42", "--out", str(out2), "--no-progress", "--workers", "1",
                 "--quick"]) == 0
    assert (out2 / "retention_curves.png").stat().st_size > 1000
    md2 = (out2 / "report.md").read_text()
    # the paper's figure has other checkpoints than this small run: its row says so
    assert "| fsrs_only, published | n/p |" in md2 and "| fsrs_only, real |" in md2


def test_cli_rejects_unknown_name(capsys):
    assert main(["experiments", "nonsense"]) == 2


def _published_literals() -> set[str]:
    from zenbrain.experiments import published as pub

    out: set[str] = set()

    def walk(obj) -> None:
        if isinstance(obj, dict):
            for x in obj.values():
                walk(x)
        elif isinstance(obj, (tuple, list)):
            for x in obj:
                walk(x)
        elif isinstance(obj, float) and not isinstance(obj, bool):
            if abs(obj) < 0.02 or abs(obj) in (0.95, 1.0, 2.0, 30.0, 100.0):
                return
            text = repr(obj)
            if len(text.replace("-", "").replace("0.", "", 1)) >= 3:
                out.add(text)

    for name in dir(pub):
        if name.startswith(("PAPER_", "REFERENCE_", "AUTHORS_")):
            walk(getattr(pub, name))
    return out


def test_no_published_figure_is_typed_into_the_real_experiments():
    root = Path(__file__).resolve().parents[2] / "src" / "zenbrain" / "experiments"
    files = sorted((root / "real").glob("*.py")) + [root / "stats.py", root / "commands.py"]
    literals = _published_literals()
    assert literals
    for path in files:
        numbers = set(re.findall(r"(?<![\w.-])-?\d+\.\d+(?:e-?\d+)?", path.read_text(encoding="utf-8")))
        assert not numbers & literals, (path.name, sorted(numbers & literals))


def test_only_some_ablation_rows_read_as_in_the_whole_ablation(tmp_path, tiny):
    whole = tmp_path / "whole"
    assert main(["experiments", "moderate", "--seeds", "42", "123", "--out", str(whole), "--no-progress", "--workers",
                 "1", "--quick", "--no-replica", "--no-plots"]) == 0
    part = tmp_path / "part"
    assert main(["experiments", "moderate", "--seeds", "42", "123", "--out", str(part), "--no-progress", "--workers",
                 "2", "--quick", "--no-replica", "--only", "triple_copy", "bare"]) == 0
    rows_whole = json.loads((whole / "results.json").read_text())["real"]["ablation"]["moderate"]["rows"]
    data = json.loads((part / "results.json").read_text())["real"]
    assert set(data["ablation"]["moderate"]["rows"]) == {"full", "-triple_copy", "bare"}
    assert data["runs"] == 6
    for cfg, row in data["ablation"]["moderate"]["rows"].items():
        assert row == rows_whole[cfg], cfg  # every statistic, bootstrap intervals included
    assert (part / "criticality.png").stat().st_size > 1000  # rows not run are left out of the plot


def test_only_rejects_unknown_rows_and_non_ablation_runs(tmp_path, capsys):
    assert main(["experiments", "moderate", "--only", "no_such_mechanism", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "unknown ablation row" in capsys.readouterr().err
    assert main(["experiments", "pma", "--only", "triple_copy", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "runs no ablation" in capsys.readouterr().err
