#!/usr/bin/env python
"""The cost model's plot: how recall, ingest, decay and sleep grow with the store, from
the JSON that ``scripts/bench_speed.py --json`` writes (zenbrain and, when measured,
ChromaDB beside it).

    .venv/bin/python scripts/plot_scale.py /tmp/speed.json docs/images/scale.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(argv[0]).read_text())
    rows = data["scale"]
    sizes = [r["size"] for r in rows]
    chroma = {r["size"]: r for r in data.get("peers", {}).get("chroma", {}).get("rows", [])}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))

    ax = axes[0]
    ax.plot(sizes, [r["recall_ms_query_embedded"]["p50"] for r in rows], "o-", label="zenbrain recall p50 (query embedded)")
    ax.plot(sizes, [r["recall_ms_query_cached"]["p50"] for r in rows], "o--", label="zenbrain recall p50 (query cached)")
    ax.plot(sizes, [r["recall_ms_query_embedded"]["p95"] for r in rows], "o:", label="zenbrain recall p95 (embedded)")
    if chroma:
        cs = sorted(chroma)
        ax.plot(cs, [chroma[s]["recall_ms"]["p50"] for s in cs], "s-", label="ChromaDB search p50 (embedded)")
    ax.set_title("recall latency (k=10, touch=True)")
    ax.set_ylabel("ms")

    ax = axes[1]
    ax.plot(sizes, [r["ingest_items_per_s"] for r in rows], "o-", label="zenbrain store_many (storage only)")
    if chroma:
        cs = sorted(chroma)
        ax.plot(cs, [chroma[s]["ingest_items_per_s"] for s in cs], "s-", label="ChromaDB add")
    ax.set_title("ingest while growing to the size")
    ax.set_ylabel("items/s")

    ax = axes[2]
    lif = [r for r in rows if r.get("decay_seconds") is not None]
    ax.plot([r["size"] for r in lif], [r["decay_seconds"] for r in lif], "o-", label="decay()")
    ax.plot([r["size"] for r in lif], [r["sleep_seconds"] for r in lif], "o-", label="sleep()")
    ax.set_title("lifecycle (one partition)")
    ax.set_ylabel("s")

    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    load = data.get("environment", {})
    fig.suptitle(f"scripts/bench_speed.py on real text, 2 shared cores (load average {load.get('load_average_start')} "
                 f"at the start, {load.get('load_average_end')} at the end)", fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    print(f"wrote {argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
