"""scripts/bench_night.py on a small store: a copy is measured, the original is left as it
was, and two runs on copies of one store fingerprint alike."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from zenbrain.api import open_memory
from zenbrain.clock import SimulatedClock
from zenbrain.model import Scope
from zenbrain.providers.hashing import HashingEmbedder

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_a_night_on_a_copy_fingerprints_alike_twice(tmp_path, monkeypatch, capsys):
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    import bench_night

    store = tmp_path / "scale.db"
    mem = open_memory(store, embedder=HashingEmbedder(64), clock=SimulatedClock(1_700_000_000.0))
    mem.store_many([{"content": f"Note {k}: the {'red' if k % 2 else 'blue'} team met about item {k % 5}",
                     "kind": "episode", "layer": "episodic"} for k in range(40)], Scope("speed"))
    mem.close()
    before = store.read_bytes()
    lines = []
    for op in ("sleep", "sleep", "decay"):
        monkeypatch.setattr(sys, "argv", ["bench_night.py", str(store), str(tmp_path / "copy.db"), op,
                                          "--embedder", "hashing:64", "--days", "30"])
        bench_night.main()
        out = capsys.readouterr().out.splitlines()
        lines.append((json.loads(out[0]), json.loads(out[1])))
    assert store.read_bytes() == before
    (a, counts_a), (b, counts_b), (d, _) = lines
    assert {k: v for k, v in a.items() if not k.endswith(("_s", "_mb"))} == {
        k: v for k, v in b.items() if not k.endswith(("_s", "_mb"))}
    assert counts_a == counts_b and counts_a["retrievability.memories"] >= 40  # with the new schemas
    assert a["op"] == "sleep" and d["op"] == "decay" and d["memories"] == 40
