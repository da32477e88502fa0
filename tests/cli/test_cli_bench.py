"""``zenbrain bench locomo`` and ``zenbrain demo`` on a tiny LoCoMo-format file written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zenbrain.cli import main

EMB = ["--embedder", "hashing:384"]


def tiny_locomo() -> list[dict]:
    """One conversation in the LoCoMo release format: 2 sessions, 9 turns, 3 questions."""
    return [
        {
            "sample_id": "conv-t1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a grey kitten called Pixel yesterday."},
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Congratulations! I have been training for the Lisbon marathon."},
                    {"speaker": "Ana", "dia_id": "D1:3", "text": "Wow, when is the marathon?"},
                    {"speaker": "Ben", "dia_id": "D1:4", "text": "It is in October, I run forty kilometres every week."},
                    {"speaker": "Ana", "dia_id": "D1:5", "text": "I also started a pottery class on Thursdays.",
                     "blip_caption": "a photo of a clay bowl", "img_url": ["http://example.invalid/bowl.jpg"]},
                ],
                "session_2_date_time": "10:15 am on 20 June, 2023",
                "session_2": [
                    {"speaker": "Ben", "dia_id": "D2:1", "text": "How is Pixel doing?"},
                    {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel knocked my pottery bowl off the shelf, it broke."},
                    {"speaker": "Ben", "dia_id": "D2:3", "text": "Oh no! I hurt my knee so I paused marathon training."},
                    {"speaker": "Ana", "dia_id": "D2:4", "text": "Get well soon, maybe try swimming instead."},
                ],
            },
            "qa": [
                {"question": "What is the name of Ana's kitten?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
                {"question": "Which marathon is Ben training for?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 4},
                {"question": "What happened to Ana's pottery bowl?", "answer": "Pixel broke it",
                 "evidence": ["D1:5", "D2:2"], "category": 1},
            ],
        }
    ]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ZENBRAIN_DATA", str(tmp_path / "no-such-folder"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    p = tmp_path / "data" / "locomo_dev.json"
    p.parent.mkdir()
    p.write_text(json.dumps(tiny_locomo()), encoding="utf-8")
    return p


def test_bench_locomo_writes_json_markdown_and_prints_the_table(capsys, tmp_path, data):
    out_dir = tmp_path / "out"
    code = main([*EMB, "bench", "locomo", "--data", str(data), "--systems", "zenbrain,bm25",
                 "--ablate", "bm25_hybrid", "--out", str(out_dir), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "LoCoMo turn-level retrieval" in out
    for name in ("zenbrain", "bm25", "zenbrain-bm25_hybrid"):
        assert any(line.split()[:1] == [name] for line in out.splitlines()), name
    js = out_dir / "locomo_per_conversation.json"
    md = out_dir / "locomo_per_conversation.md"
    assert js.exists() and md.exists()
    assert list(out_dir.glob("*.png"))
    results = json.loads(js.read_text())
    assert set(results["systems"]) == {"zenbrain", "bm25", "zenbrain-bm25_hybrid"}
    assert results["dataset"]["questions_scored"] == 3 and results["dataset"]["turns"] == 9
    assert results["embedder"] == "hashing:384"
    zb = results["systems"]["zenbrain"]
    assert len(zb["questions"]) == 3
    # The kitten question is answered by its evidence turn.
    kitten = next(q for q in zb["questions"] if "kitten" in q["question"])
    assert kitten["ranked"][0] == "D1:1"
    assert "zenbrain-bm25_hybrid" in md.read_text()
    # The embedding cache lives in $ZENBRAIN_CACHE_DIR; a second run embeds nothing.
    assert (tmp_path / "cache" / "embeddings.db").exists()
    code = main([*EMB, "bench", "locomo", "--data", str(data.parent), "--systems", "zenbrain,dense",
                 "--mode", "pooled", "--conversations", "1", "--ablate", "layer:core", "--out", str(out_dir),
                 "--no-plots", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    again = json.loads((out_dir / "locomo_pooled.json").read_text())
    assert again["embedding"]["texts_embedded"] == 0 and again["embedding"]["texts_from_cache"] == 12
    assert set(again["systems"]) == {"zenbrain", "dense", "zenbrain-layer:core"}
    assert again["systems"]["zenbrain"]["questions"][0]["ranked"][0] == "conv-t1/D1:1"


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--systems", "zenbrain,oracle"], "unknown system(s) oracle"),
        (["--ablate", "telepathy"], "unknown mechanism name(s): telepathy"),
        (["--ablate", "layer:attic"], "unknown layer"),
        (["--conversations", "conv-99"], "unknown conversation(s) conv-99"),
        (["--ks", "five"], "--ks must be"),
    ],
)
def test_bench_bad_options_are_one_line_errors(capsys, tmp_path, data, extra, needle):
    code = main([*EMB, "bench", "locomo", "--data", str(data), "--out", str(tmp_path / "o"), "--no-progress", *extra])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().startswith("error: ") and needle in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def test_bench_without_data_is_a_clear_error(capsys, tmp_path):
    code = main([*EMB, "bench", "locomo", "--out", str(tmp_path / "o"), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("error: LoCoMo data not found")


def test_demo_compares_systems_and_keeps_the_store(capsys, tmp_path, data):
    db = tmp_path / "demo.db"
    code = main([*EMB, "--path", str(db), "demo", "--data", str(data), "--conversation", "conv-t1", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "conv-t1 between Ana and Ben: 9 turns in 2 sessions, 3 questions" in out
    for name in ("zenbrain", "bm25", "dense"):
        assert any(line.split()[:1] == [name] for line in out.splitlines()), name
    assert "reference answer: Pixel" in out
    assert "*1. [D1:1]" in out
    # The conversation stays in the store, ready for recall.
    code = main(["--path", str(db), "recall", "Ana's kitten name", "-k", "1", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    hit = json.loads(out)["hits"][0]
    assert hit["metadata"]["doc_id"] == "D1:1" and hit["layer"] == "episodic"
    # A second demo refuses to write into an existing store.
    code = main([*EMB, "--path", str(db), "demo", "--data", str(data), "--conversation", "conv-t1", "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and "already exists" in err
