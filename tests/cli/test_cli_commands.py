"""The CLI commands list, episodes, update, revise and rollback, text from standard input,
range errors for counts, init on an existing store, and readable lifecycle summaries."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from zenbrain.cli import main

EMB = ["--embedder", "hashing:384"]
HUGE = "16054873920677515264"


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_DATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def add(capsys, db: str, text: str, *extra: str) -> str:
    code, out, err = run(capsys, "--path", db, *EMB, "add", text, *extra)
    assert code == 0, err
    return re.match(r"stored ([0-9a-f]{32})", out).group(1)


def test_add_dash_reads_standard_input(capsys, db, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("Lena keeps bees on the roof\n"))
    mid = add(capsys, db, "-")
    _, out, _ = run(capsys, "--path", db, "get", mid, "--json")
    assert json.loads(out)["content"] == "Lena keeps bees on the roof"


def test_counts_out_of_range_are_clear_errors(capsys, db):
    add(capsys, db, "one memory")
    for argv, needle in [
        (["recall", "x", "--k", "0"], "argument -k/--k: must be an integer in [1, 1000], got 0"),
        (["recall", "x", "-k", HUGE], "must be an integer in [1, 1000]"),
        (["review-queue", "--limit", HUGE], "argument --limit: must be an integer in [1, 10000]"),
        (["episodes", "--limit", HUGE], "argument --limit: must be an integer in [1, 10000]"),
        (["list", "--limit", "0"], "argument --limit: must be an integer in [1, 10000], got 0"),
        (["list", "--limit", "many"], "must be an integer, got 'many'"),
    ]:
        code, _, err = run(capsys, "--path", db, *argv)
        assert code == 2 and needle in err and "Traceback" not in err, (argv, err)
    code, out, _ = run(capsys, "--path", db, "recall", "memory", "--k", "1")
    assert code == 0 and "one memory" in out


def test_init_on_an_existing_store_is_a_friendly_no_op(capsys, db):
    assert run(capsys, "--path", db, *EMB, "init")[0] == 0
    add(capsys, db, "kept as it is")
    code, out, err = run(capsys, "--path", db, "--embedder", "hashing:128", "init")
    assert code == 0, err
    assert "nothing to do" in out and "hashing:384" in out and "memories: 1" in out
    assert "--embedder hashing:128 not applied" in out


def test_list_pages_and_episodes_in_a_time_range(capsys, db):
    ids = [add(capsys, db, f"note {i}") for i in range(5)]
    code, out, _ = run(capsys, "--path", db, "list", "--limit", "2")
    assert code == 0 and out.count("note ") == 2 and "(more: --offset 2)" in out
    code, out, _ = run(capsys, "--path", db, "list", "--limit", "2", "--offset", "4", "--json")
    assert [m["id"] for m in json.loads(out)] == [ids[4]]
    add(capsys, db, "Caroline went to the support group", "--kind", "episode", "--event-time", "2023-05-07")
    add(capsys, db, "Caroline went hiking", "--kind", "episode", "--event-time", "2023-08-01")
    code, out, _ = run(capsys, "--path", db, "episodes", "--start", "2023-05-01", "--end", "2023-06-01")
    assert code == 0 and "support group" in out and "hiking" not in out
    code, out, _ = run(capsys, "--path", db, "episodes", "--json")
    assert [m["content"] for m in json.loads(out)] == ["Caroline went to the support group", "Caroline went hiking"]


def test_update_revise_and_rollback(capsys, db):
    mid = add(capsys, db, "The office is in Hamburg")
    code, out, err = run(capsys, "--path", db, "update", mid, "--text", "The office is in Berlin")
    assert code == 0 and "version 2" in out, err
    code, out, _ = run(capsys, "--path", db, "rollback", mid)
    assert code == 0 and "Hamburg" in out
    code, out, _ = run(capsys, "--path", db, "revise", mid, "The office is in Munich", "--correction", "--json")
    assert code == 0 and json.loads(out)["mode"]
    code, _, err = run(capsys, "--path", db, "update", mid)
    assert code == 2 and "nothing to update" in err


def test_sleep_and_decay_print_what_changed_in_words(capsys, db):
    a = add(capsys, db, "Alice likes tea")
    b = add(capsys, db, "Alice likes green tea a lot")
    assert run(capsys, "--path", db, "relate", a, "supports", b)[0] == 0
    run(capsys, "--path", db, "recall", "tea")
    code, out, _ = run(capsys, "--path", db, "sleep")
    assert code == 0 and out.startswith("sleep at ")
    assert "=[" not in out and "={" not in out  # no list lengths in jargon
    assert re.search(r"^  - \w", out, re.MULTILINE)
    code, out, _ = run(capsys, "--path", db, "decay")
    assert code == 0 and "mean recall probability" in out
    code, out, _ = run(capsys, "--path", db, "decay", "--json")
    assert "archive" in json.loads(out)["stages"]


def test_metadata_errors_name_the_path_once(capsys, db):
    code, _, err = run(capsys, "--path", db, *EMB, "add", "x", "--meta", '{"x": [1, {"y": 1e999}]}')
    assert code == 2 and "error: metadata.x[1].y is not finite" in err and "metadata metadata" not in err
