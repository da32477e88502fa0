"""``zenbrain export`` and ``zenbrain import``: a user's memories as JSON Lines, through
standard output and input or a file, back into a new store or beside the original."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cli_helpers import EMB, add, run


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))


def listing(capsys, db: str, *scope: str) -> list[dict]:
    code, out, err = run(capsys, "--path", db, "list", "--json", "--archived", *scope)
    assert code == 0, err
    return json.loads(out)


def ranked(capsys, db: str, query: str, *scope: str) -> list[str]:
    code, out, err = run(capsys, "--path", db, "recall", query, "--json", "--no-touch", *scope)
    assert code == 0, err
    return [h["id"] for h in json.loads(out)["hits"]]


def fill(capsys, db: str) -> dict[str, str]:
    ids = {t: add(capsys, db, t, "--user", "ana") for t in (
        "Ana keeps bees in the orchard", "The market opens at 7am on Saturdays", "Ana sells honey at the market")}
    code, _, err = run(capsys, "--path", db, "relate", ids["Ana keeps bees in the orchard"], "causes",
                       ids["Ana sells honey at the market"], "--user", "ana")
    assert code == 0, err
    add(capsys, db, "Bob repairs bicycles", "--user", "bob")  # another user: not exported with ana
    return ids


def test_round_trip_through_standard_output_and_input(capsys, monkeypatch, tmp_path: Path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    ids = fill(capsys, src)
    code, out, err = run(capsys, "--path", src, "export", "--user", "ana")
    assert code == 0, err
    assert "exported 3 memories of user ana" in err  # the status goes to stderr, the data to stdout
    lines = [json.loads(x) for x in out.splitlines()]
    assert lines[0]["format"] == "zenbrain-export" and lines[0]["counts"]["memories"] == 3
    assert sum(x.get("type") == "memory" for x in lines) == 3
    assert not any("Bob" in json.dumps(x) for x in lines)

    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    code, got, err = run(capsys, "--path", dst, "import", "--user", "ana")  # a new store, the export's embedder
    assert code == 0, err
    assert got.startswith(f"imported 3 memories, {lines[0]['counts']['edges']} relations")
    assert listing(capsys, dst, "--user", "ana") == listing(capsys, src, "--user", "ana")
    for query in ("who keeps bees?", "when does the market open?", "honey"):
        assert ranked(capsys, dst, query, "--user", "ana") == ranked(capsys, src, query, "--user", "ana")
    bees = ids["Ana keeps bees in the orchard"]
    code, out, err = run(capsys, "--path", dst, "relations", bees, "--user", "ana", "--json")
    assert code == 0, err
    assert {"src": bees, "dst": ids["Ana sells honey at the market"], "relation": "causes"}.items() <= next(
        e for e in json.loads(out) if e["relation"] == "causes").items()


def test_export_to_a_file_and_import_a_copy_with_new_ids(capsys, tmp_path: Path):
    src = str(tmp_path / "src.db")
    ids = fill(capsys, src)
    dump = tmp_path / "ana.jsonl"
    code, out, err = run(capsys, "--path", src, "export", "--user", "ana", "--out", str(dump))
    assert code == 0, err
    assert f"to {dump}" in out and [p.name for p in tmp_path.iterdir() if p.name.startswith(".export-")] == []
    code, _, err = run(capsys, "--path", src, "import", str(dump), "--user", "ana")  # ids taken: refused whole
    assert code == 2 and "already stored here" in err
    code, out, err = run(capsys, "--path", src, "import", str(dump), "--user", "cleo", "--new-ids", "--json")
    assert code == 0, err
    receipt = json.loads(out)
    assert receipt["memories"] == 3 and set(receipt["id_map"]) == set(ids.values())
    copy = listing(capsys, src, "--user", "cleo")
    assert sorted(m["content"] for m in copy) == sorted(ids)
    assert not {m["id"] for m in copy} & set(ids.values())
    assert len(listing(capsys, src, "--user", "ana")) == 3


def test_a_broken_export_imports_nothing(capsys, tmp_path: Path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    fill(capsys, src)
    dump = tmp_path / "ana.jsonl"
    assert run(capsys, "--path", src, "export", "--user", "ana", "-o", str(dump))[0] == 0
    text = dump.read_text().splitlines()
    dump.write_text("\n".join([*text[:2], "{not json", *text[2:]]) + "\n")
    add(capsys, dst, "already here", "--user", "ana")
    code, _, err = run(capsys, "--path", dst, *EMB, "import", str(dump), "--user", "ana")
    assert code == 2 and "line 3 is not JSON" in err and "nothing was imported" in err
    assert [m["content"] for m in listing(capsys, dst, "--user", "ana")] == ["already here"]
