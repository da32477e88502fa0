"""Which files the commands open: commands that read need a store, ``add`` may create a
new one where the path is free, ``init`` also makes one of an empty file and is a no-op
on an existing store; another application's database is refused by every command and
left as it was. ``--read-only`` reads without writing anything."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from cli_helpers import EMB, add, run


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("argv", [["stats"], ["add", "hello"], ["recall", "hello"], ["list"], ["init"], ["sleep"],
                                  ["export"], ["check"]])
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_every_command_refuses_another_applications_database(capsys, tmp_path: Path, argv: list[str], journal: str):
    other = tmp_path / "other_app.db"
    con = sqlite3.connect(other, isolation_level=None)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    con.close()
    before = digest(other)
    code, out, err = run(capsys, "--path", str(other), *argv)  # no --embedder: the file is not read for one
    assert "not a zenbrain store" in one_line_error(code, err) and "invoices" in err
    assert out == ""
    assert digest(other) == before and sorted(os.listdir(tmp_path)) == ["other_app.db"]


def test_an_empty_file_is_refused_except_by_init(capsys, tmp_path: Path):
    empty = tmp_path / "empty.db"
    empty.touch()
    for argv in (["stats"], ["add", "hello"], ["recall", "hello"]):
        code, _, err = run(capsys, "--path", str(empty), *EMB, *argv)
        assert "empty file" in one_line_error(code, err) and "zenbrain init" in err
        assert empty.stat().st_size == 0
    code, out, err = run(capsys, "--path", str(empty), *EMB, "init")
    assert code == 0, err
    assert f"created store at {empty}" in out
    add(capsys, str(empty), "Ana keeps bees")
    code, out, err = run(capsys, "--path", str(empty), "init")  # again: a friendly no-op
    assert code == 0, err
    assert "nothing to do" in out and "memories: 1" in out


def test_add_creates_a_new_store_and_reading_commands_do_not(capsys, tmp_path: Path):
    absent = tmp_path / "absent.db"
    code, _, err = run(capsys, "--path", str(absent), *EMB, "list")
    assert "no memory store" in one_line_error(code, err)
    assert not absent.exists()
    add(capsys, str(absent), "Ana keeps bees")
    assert absent.exists()


def test_read_only_reads_and_refuses_writes(capsys, tmp_path: Path):
    db = tmp_path / "m.db"
    mid = add(capsys, str(db), "The market opens at 7am on Saturdays")
    before = digest(db)
    code, out, err = run(capsys, "--path", str(db), *EMB, "--read-only", "recall", "when does the market open?")
    assert code == 0, err
    assert mid in out and "query type: " in out and "QueryType" not in out
    code, out, _ = run(capsys, "--path", str(db), *EMB, "get", mid, "--read-only")  # after the command too
    assert code == 0 and "access_count: 0" in out  # the recall above touched nothing
    for argv in (["add", "more"], ["forget", mid], ["sleep"]):
        code, _, err = run(capsys, "--path", str(db), *EMB, "--read-only", *argv)
        assert "read-only" in one_line_error(code, err)
    code, _, err = run(capsys, "--path", str(db), *EMB, "--read-only", "init")
    assert "--read-only" in one_line_error(code, err)
    assert digest(db) == before


@pytest.mark.parametrize("option", ["--user", "--agent", "--context"])
def test_an_empty_scope_option_is_refused_not_taken_as_default(capsys, tmp_path: Path, option: str):
    db = tmp_path / "m.db"
    add(capsys, str(db), "Ana keeps bees")
    code, _, err = run(capsys, "--path", str(db), *EMB, "add", "lands nowhere", option, "")
    assert "got ''" in one_line_error(code, err)
    code, out, _ = run(capsys, "--path", str(db), *EMB, "list")
    assert "lands nowhere" not in out
    code, out, err = run(capsys, "--path", str(db), *EMB, "mcp", option, "")  # the MCP server's one scope
    assert "got ''" in one_line_error(code, err)
