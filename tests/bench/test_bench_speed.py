"""scripts/bench_speed.py at tiny sizes: the scale part, planner statistics, memory and disk
figures, the lifecycle cap, and a peer in its own process (ChromaDB, when installed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
HAVE_CHROMA = importlib.util.find_spec("chromadb") is not None


@pytest.fixture(scope="module")
def speed():
    # Importable by name, so a spawned peer process can find peer_worker.
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import bench_speed

    return bench_speed


@pytest.fixture
def run(speed, locomo_file, tmp_path, monkeypatch):
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))

    def go(*extra: str) -> dict:
        out = tmp_path / "speed.json"
        argv = ["--data", str(locomo_file), "--embedder", "hashing", "--parts", "scale", "--queries", "4",
                "--scale-batch", "50", "--workdir", str(tmp_path / "work"), "--json", str(out), *extra]
        assert speed.main(argv) == 0
        return json.loads(out.read_text())

    return go


def test_scale_sizes_memory_disk_lifecycle_cap_and_analyze(run, capsys):
    res = run("--sizes", "100,200,300", "--lifecycle-max", "100", "--analyze-above", "150", "--peers", "none")
    rows = {r["size"]: r for r in res["scale"]}
    assert sorted(rows) == [100, 200, 300]
    for r in rows.values():
        assert r["memories"] >= r["size"]  # sleep may add memories (consolidated facts)
        assert r["peak_rss_mb"] > 0 and r["file_bytes"]["db"] > 0
        disk = r["file_bytes"]["db"] + r["file_bytes"]["wal"] + r["file_bytes"]["index"]
        assert r["file_bytes"]["index"] > 0  # the search indexes' directory, saved on close
        assert r["disk_bytes_per_memory"] == pytest.approx(disk / r["memories"])
        assert r["reopen"]["first_recall_ms"] > 0 and r["reopen"]["index_rebuilds"] == []
        assert r["recall_ms_query_embedded"]["p50"] > 0 and r["queries"] == 4
        assert [n for n, _ in r["ingest_items_per_s_by_batch"]][-1] == r["size"]
    # decay and sleep only up to --lifecycle-max
    assert rows[100]["sleep_seconds"] is not None and rows[100]["decay_seconds"] is not None
    assert rows[200]["sleep_seconds"] is None and rows[300]["decay_seconds"] is None
    # recall once more after the night, where there was one
    assert rows[100]["recall_ms_after_night_cached"]["p50"] > 0 and rows[200]["recall_ms_after_night_cached"] is None
    # ANALYZE once, while growing past 150; sizes above it are measured with statistics
    assert rows[100]["analyze"] is None and not rows[100]["planner_statistics"]
    assert rows[200]["analyze"]["at_size"] == 150 and rows[300]["planner_statistics"]
    assert res["peers"] == {}
    out = capsys.readouterr().out
    assert "decay() and sleep() not timed at 200, 300" in out and "B/memory" in out and "peakRSS_MB" in out
    assert "after decay() and sleep(), reopened, queries cached, p50/p95 ms: 100: " in out


def test_analyze_at_a_size_boundary_comes_after_the_lifecycle_with_a_control(run, speed, tmp_path, capsys):
    res = run("--sizes", "100,200", "--lifecycle-max", "100", "--analyze-above", "100", "--peers", "none")
    first, second = res["scale"]
    assert first["analyze"]["at_size"] == 100 and not first["planner_statistics"]
    assert first["sleep_seconds"] is not None  # sleep ran on the store as shipped, before ANALYZE
    ctl = first["recall_ms_analyze_control"]
    assert ctl["before"]["p50"] > 0 and ctl["after"]["p50"] > 0
    assert second["planner_statistics"] and second["recall_ms_analyze_control"] is None
    capsys.readouterr()
    assert speed.main(["--summary", str(tmp_path / "speed.json")]) == 0
    out = capsys.readouterr().out
    assert "control at 100: recall with cached queries" in out and "Summary" in out


def test_budgets_curves_and_peer_skip(speed, capsys):
    assert speed.parse_budgets("5", speed.PEER_NAMES) == {"chroma": 300.0, "mem0": 300.0}
    assert speed.parse_budgets("chroma=60,mem0=0.5", speed.PEER_NAMES) == {"chroma": 3600.0, "mem0": 30.0}
    with pytest.raises(ValueError):
        speed.parse_budgets("weaviate=3", speed.PEER_NAMES)
    curve = [(i * 10, 100.0) for i in range(1, 101)]
    thin = speed.thin_curve(curve, 10)
    assert len(thin) == 10 and thin[-1] == (1000, pytest.approx(100.0))
    # a peer that managed 10 items/s up to 1000 would need 9000 s for the next 90,000
    peer = SimpleNamespace(name="slowpeer", have=1000, skipped=None, rows=[
        {"ingest_items_per_s": 10.0, "recall_ms": {"p50": 5.0}}])
    assert speed.peer_projection(peer, 91000, 10) == pytest.approx(9000 + 10 * 0.005 * 91)
    speed.run_peer(peer, 91000, 90000, None, 8, [], ["q"] * 10, {}, 600.0, 100)
    assert "over the --peer-budget of 10 min" in peer.skipped and "10 items/s" in peer.skipped
    assert "slowpeer: skipped at 91000" in capsys.readouterr().out


def test_unknown_peer_is_refused(speed):
    with pytest.raises(SystemExit):
        speed.main(["--peers", "pinecone", "--parts", "scale"])


@pytest.mark.skipif(not HAVE_CHROMA, reason="chromadb is not installed (zenbrain[peers])")
def test_chroma_beside_zenbrain_in_its_own_process(run, capsys):
    res = run("--sizes", "100,200", "--no-lifecycle", "--analyze-above", "none", "--peers", "chroma")
    peer = res["peers"]["chroma"]
    assert peer["skipped"] is None and [r["size"] for r in peer["rows"]] == [100, 200]
    for z, p in zip(res["scale"], peer["rows"]):
        assert p["ingest_items_per_s"] > 0 and p["recall_ms"]["p50"] > 0 and p["disk_bytes"] > 0
        assert p["peak_rss_mb"] > 0 and p["queries"] == z["queries"]
        ratio = p["ratio_zenbrain_over_peer"]
        assert ratio["recall_p50"] == pytest.approx(z["recall_ms_query_embedded"]["p50"] / p["recall_ms"]["p50"])
        assert ratio["ingest_items_per_s"] == pytest.approx(z["ingest_items_per_s"] / p["ingest_items_per_s"])
    assert "zen/peer ingest/s" in capsys.readouterr().out
