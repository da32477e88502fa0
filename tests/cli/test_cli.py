"""The zenbrain command line, run in-process with a hashing embedder and a store in tmp_path."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from zenbrain.cli import main
from zenbrain.registry import ALL_MECHANISMS

EMB = ["--embedder", "hashing:384"]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_DATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))


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
    m = re.fullmatch(r"stored ([0-9a-f]{32}) layer=(\w+) kind=(\w+)\n", out)
    assert m, out
    return m.group(1)


def assert_one_line_error(code: int, err: str, needle: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert needle in lines[0]
    assert "Traceback" not in err


# --------------------------------------------------------------------------- store commands


def test_init_creates_a_store_and_reports_an_existing_one(capsys, db):
    code, out, _ = run(capsys, "init", "--path", db, *EMB)
    assert code == 0
    assert f"created store at {db}" in out and "hashing:384" in out
    assert Path(db).exists()
    code, out, _ = run(capsys, "init", "--path", db)
    assert code == 0
    assert f"store exists at {db}" in out and "hashing:384" in out  # embedder read from the store


def test_init_uses_zenbrain_path_by_default(capsys, tmp_path):
    code, out, _ = run(capsys, *EMB, "init")
    assert code == 0
    assert (tmp_path / "default.db").exists()
    assert str(tmp_path / "default.db") in out


def test_add_get_recall_history_forget(capsys, db):
    mid = add(capsys, db, "Caroline went to the LGBTQ support group on 7 May 2023",
              "--meta", '{"source": "chat"}', "--event-time", "2023-05-07T10:00:00Z")
    other = add(capsys, db, "Melanie painted a lake at sunrise last year")
    assert mid != other

    code, out, _ = run(capsys, "--path", db, "get", mid)
    assert code == 0
    assert "Caroline went to the LGBTQ support group" in out
    assert "2023-05-07T10:00:00Z" in out and '"source": "chat"' in out

    code, out, _ = run(capsys, "--path", db, "recall", "support group Caroline", "-k", "2")
    assert code == 0
    rows = [line for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert rows and mid in rows[0] and rows[0].split()[0] == "1"

    code, out, _ = run(capsys, "--path", db, "recall", "support group Caroline", "--why")
    assert code == 0
    for key in ("dense=", "lexical=", "layer_weight=", "final="):
        assert key in out

    code, out, _ = run(capsys, "--path", db, "recall", "support group", "--json", "-k", "1")
    assert code == 0
    data = json.loads(out)
    assert data["hits"][0]["id"] == mid and data["hits"][0]["rank"] == 1
    assert set(data["hits"][0]["why"]) >= {"dense", "lexical", "final"}

    code, out, _ = run(capsys, "--path", db, "history", mid)
    assert code == 0 and "created" in out

    code, out, _ = run(capsys, "--path", db, "forget", mid)
    assert code == 0 and out.strip() == f"forgot {mid}"
    code, _, err = run(capsys, "--path", db, "get", mid)
    assert_one_line_error(code, err, "no memory")


def test_add_json_event_time_epoch_and_layer(capsys, db):
    code, out, err = run(capsys, "--path", db, *EMB, "add", "The office moved to Berlin", "--event-time", "1683453600",
                         "--layer", "semantic", "--kind", "fact", "--importance", "0.9", "--json")
    assert code == 0, err
    item = json.loads(out)
    assert item["layer"] == "semantic" and item["kind"] == "fact"
    assert item["event_time"] == 1683453600.0 and item["importance"] == 0.9
    # An ISO date without zone is read as UTC.
    code, out, _ = run(capsys, "--path", db, "add", "Standup moved to 9am", "--event-time", "2023-05-07", "--json")
    expected = datetime(2023, 5, 7, tzinfo=UTC).timestamp()
    assert json.loads(out)["event_time"] == expected


def test_relate_relations_and_remove(capsys, db):
    a = add(capsys, db, "The museum closes at 6 pm", "--kind", "fact")
    b = add(capsys, db, "The museum stays open until 9 pm", "--kind", "fact")
    code, out, err = run(capsys, "--path", db, "relate", a, "contradicts", b, "--weight", "2")
    assert code == 0, err
    assert out.strip() == f"related {a} -contradicts-> {b} weight=2"
    code, out, _ = run(capsys, "--path", db, "relations", b, "--relation", "contradicts")
    assert code == 0 and out.split() == ["2.000", "<-contradicts-", a]
    code, out, _ = run(capsys, "--path", db, "relations", a, "--json")
    rows = [r for r in json.loads(out) if r["relation"] == "contradicts"]
    assert rows == [{**rows[0], "src": a, "dst": b, "weight": 2.0}]
    code, out, _ = run(capsys, "--path", db, "relate", a, "contradicts", b, "--remove")
    assert code == 0 and out.startswith("removed")
    code, out, _ = run(capsys, "--path", db, "relations", a, "--relation", "contradicts")
    assert out.strip() == "no relations"
    code, _, err = run(capsys, "--path", db, "relate", a, "evidence_of", b)
    assert_one_line_error(code, err, "evidence_of")
    code, _, err = run(capsys, "--path", db, "relate", a, "supports", b, "--user", "bob")
    assert_one_line_error(code, err, "no memory")
    code, out, err = run(capsys, "--path", db, "evidence", a, "for", "--strength", "3")
    assert code == 0, err
    assert out.strip() == f"{a} confidence=0.800 (alpha=4, beta=1)"
    code, out, _ = run(capsys, "--path", db, "evidence", a, "against")
    assert "alpha=4, beta=2" in out
    code, _, err = run(capsys, "--path", db, "evidence", a, "for", "--strength", "-1")
    assert_one_line_error(code, err, "strength")


def test_scope_options_isolate_users(capsys, db):
    add(capsys, db, "Alice keeps bees in the garden", "--user", "alice")
    code, out, _ = run(capsys, "--path", db, "recall", "bees garden", "--user", "bob")
    assert code == 0 and "no memories matched" in out
    code, out, _ = run(capsys, "--path", db, "recall", "bees garden", "--user", "alice")
    assert "Alice keeps bees" in out


def test_stats_sleep_decay_review_queue(capsys, db):
    add(capsys, db, "Paris is the capital of France")
    add(capsys, db, "I prefer green tea")
    code, out, _ = run(capsys, "--path", db, "stats", "--json")
    assert code == 0
    s = json.loads(out)
    assert s["memories"] == 2 and s["embedder"] == "hashing:384"
    code, out, _ = run(capsys, "--path", db, "stats")
    assert code == 0 and "memories:   2" in out
    for cmd in ("sleep", "decay"):
        code, out, err = run(capsys, "--path", db, cmd)
        assert code == 0, err
        assert out.startswith(cmd)
        code, out, _ = run(capsys, "--path", db, cmd, "--json")
        assert json.loads(out)["operation"] == cmd
    code, out, _ = run(capsys, "--path", db, "review-queue", "--json")
    assert code == 0 and isinstance(json.loads(out), list)


def test_store_embedder_is_reused_and_a_mismatch_is_an_error(capsys, db):
    assert run(capsys, "--path", db, "--embedder", "hashing:64", "init")[0] == 0
    code, out, _ = run(capsys, "--path", db, "add", "no embedder given")
    assert code == 0 and "stored" in out
    code, _, err = run(capsys, "--path", db, "--embedder", "hashing:384", "add", "x")
    assert_one_line_error(code, err, "hashing:64")


# --------------------------------------------------------------------------- mechanisms and --off


def test_mechanisms_lists_every_name_on(capsys):
    code, out, _ = run(capsys, "mechanisms")
    assert code == 0
    for name in ALL_MECHANISMS:
        assert re.search(rf"^{name}\s+\w+\s+on$", out, re.MULTILINE), name


@pytest.mark.parametrize(
    "argv",
    [
        ["--off", "bm25_hybrid,fsrs", "mechanisms", "--json"],
        ["mechanisms", "--off", "bm25_hybrid", "--off", "fsrs", "--json"],
        ["--off", "bm25_hybrid", "mechanisms", "--off", "fsrs", "--json"],
    ],
)
def test_off_switches_mechanisms_off_before_or_after_the_command(capsys, argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0
    state = {m["name"]: m["on"] for m in json.loads(out)}
    assert set(state) == set(ALL_MECHANISMS)
    assert [n for n, on in state.items() if not on] == ["fsrs", "bm25_hybrid"]


def test_off_reaches_the_store(capsys, db):
    add(capsys, db, "Mount Fuji is in Japan")
    code, out, _ = run(capsys, "--path", db, "--off", "bm25_hybrid", "stats", "--json")
    assert code == 0 and json.loads(out)["mechanisms_off"] == ["bm25_hybrid"]
    code, out, _ = run(capsys, "--path", db, "--off", "bm25_hybrid", "recall", "Fuji Japan", "--json")
    assert code == 0
    assert all(h["why"]["lexical"] == 0.0 for h in json.loads(out)["hits"])


def test_unknown_mechanism_is_a_clear_error(capsys, db):
    code, _, err = run(capsys, "--off", "bm25_hybrid,telepathy", "mechanisms")
    assert_one_line_error(code, err, "unknown mechanism name(s): telepathy")
    add(capsys, db, "something")
    code, _, err = run(capsys, "--path", db, "recall", "something", "--off", "telepathy")
    assert_one_line_error(code, err, "telepathy")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["add", ""], "content is empty"),
        (["add", "x", "--meta", "{bad"], "--meta is not valid JSON"),
        (["add", "x", "--meta", "[1, 2]"], "--meta must be a JSON object"),
        (["add", "x", "--event-time", "last tuesday"], "--event-time must be ISO 8601"),
        (["add", "x", "--event-time", "nan"], "event_time"),
        (["add", "x", "--layer", "attic"], "unknown layer"),
        (["add", "x", "--kind", "gossip"], "unknown kind"),
        (["add", "x", "--layer", "working"], "session"),
        (["add", "x", "--user", "bad user!"], "user_id"),
        (["add", "x", "--importance", "2"], "importance"),
        (["recall", "x", "-k", "0"], "-k/--k: must be an integer in [1, 1000]"),
        (["get", "0123"], "no memory"),
        (["--embedder", "nonsense:1", "add", "x"], "unknown provider"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, db, argv, needle):
    if argv[0] != "add" and argv[0] != "--embedder":
        add(capsys, db, "a memory to make the store")
    code, _, err = run(capsys, "--path", db, *argv)
    assert_one_line_error(code, err, needle)


def test_missing_store_is_an_error_not_a_new_file(capsys, tmp_path):
    db = tmp_path / "absent.db"
    code, _, err = run(capsys, "--path", str(db), *EMB, "recall", "anything")
    assert_one_line_error(code, err, "zenbrain init")
    assert not db.exists()


def test_unusable_path_is_one_line_exit_2(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, _, err = run(capsys, "--path", str(blocker / "memory.db"), *EMB, "init")
    assert code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_usage_errors_are_one_line_exit_2(capsys):
    code, _, err = run(capsys, "teleport")
    assert_one_line_error(code, err, "invalid choice")
    code, _, err = run(capsys, "recall")
    assert_one_line_error(code, err, "QUERY")
    code, _, err = run(capsys, "recall", "x", "-k", "many")
    assert_one_line_error(code, err, "must be an integer, got")


def test_verbose_shows_the_traceback(capsys, db):
    code, _, err = run(capsys, "--path", db, *EMB, "--verbose", "add", "")
    assert code == 2
    assert "Traceback" in err and err.strip().splitlines()[-1] == "error: content is empty"


def test_help_and_no_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "recall" in out and "bench" in out
    code, _, err = run(capsys)
    assert code == 2 and "COMMAND" in err


def test_console_entry_point_runs_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "zenbrain.cli", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    for cmd in ("init", "add", "recall", "mechanisms", "demo"):
        assert cmd in proc.stdout


def test_add_supersedes_and_recall_as_of(capsys, db):
    old = add(capsys, db, "the team meets on Mondays", "--event-time", "2024-01-01T09:00:00Z")
    new = add(capsys, db, "the standup moved to Thursday mornings", "--event-time", "2024-03-01T09:00:00Z",
              "--supersedes", old)
    code, out, _ = run(capsys, "--path", db, "recall", "when does the team meet", "--json", "--no-touch")
    assert code == 0 and [h["id"] for h in json.loads(out)["hits"]] == [new]
    code, out, _ = run(capsys, "--path", db, "recall", "when does the team meet", "--json", "--no-touch",
                       "--as-of", "2024-02-01")
    assert code == 0 and [h["id"] for h in json.loads(out)["hits"]] == [old]
    code, out, _ = run(capsys, "--path", db, "recall", "team", "--json", "--include-superseded")
    assert code == 0 and {h["id"] for h in json.loads(out)["hits"]} == {old, new}
    code, _, err = run(capsys, "--path", db, "add", "x", "--supersedes", "nope")
    assert code != 0 and "no memory 'nope'" in err
