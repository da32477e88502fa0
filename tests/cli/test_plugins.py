"""Command plugins: found through the ``zenbrain.commands`` entry point group, skipped when
they cannot be imported, and the benchmark commands name the extra they need."""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from zenbrain.cli import PLUGIN_GROUP, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
EMB = ["--embedder", "hashing:384"]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_PATH", str(tmp_path / "default.db"))
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))


def _declared() -> dict[str, str]:
    """The plugins pyproject.toml declares."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["entry-points"][PLUGIN_GROUP]


def _use_entry_points(monkeypatch: pytest.MonkeyPatch, plugins: dict[str, str]) -> None:
    """Make importlib.metadata report exactly these plugins (name -> 'module:function')."""
    eps = metadata.EntryPoints(metadata.EntryPoint(name, value, PLUGIN_GROUP) for name, value in plugins.items())

    def entry_points(**params: str) -> metadata.EntryPoints:
        return eps.select(**params)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


def _commands(parser) -> set[str]:
    return set(parser._subparsers._group_actions[0].choices)


def test_the_declared_plugins_add_the_benchmark_and_experiment_commands(monkeypatch):
    assert _declared() == {"bench": "zenbrain.bench.commands:register",
                           "experiments": "zenbrain.experiments.commands:register"}
    _use_entry_points(monkeypatch, {})
    core = _commands(build_parser())
    assert {"init", "add", "recall", "serve", "mcp"} <= core and not core & {"bench", "demo", "experiments"}
    _use_entry_points(monkeypatch, _declared())
    parser = build_parser()
    assert _commands(parser) == core | {"bench", "demo", "experiments"}
    assert "zenbrain demo" in parser.format_help()


def test_the_installed_metadata_declares_the_same_plugins():
    # The commands' other tests run them through this metadata: a stale install (made before
    # the entry points were declared) lacks the benchmark and experiment commands.
    installed = {ep.name: ep.value for ep in metadata.entry_points(group=PLUGIN_GROUP)
                 if ep.dist is None or ep.dist.name == "zenbrain"}
    assert installed == _declared(), "the installed zenbrain is older than pyproject.toml: pip install -e ."


def test_a_plugin_of_another_package_adds_its_command(monkeypatch, tmp_path, capsys):
    (tmp_path / "zb_hello_plugin.py").write_text(
        "from zenbrain.cli_support import command, make_scope\n"
        "def register(subparsers):\n"
        "    command(subparsers, 'hello', lambda args: print('hello', make_scope(args).user_id) or 0, 'say hello')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _use_entry_points(monkeypatch, {"hello": "zb_hello_plugin:register"})
    assert main(["hello", "--user", "ana"]) == 0
    assert capsys.readouterr().out == "hello ana\n"


def test_a_plugin_that_cannot_be_imported_is_skipped(monkeypatch, capsys, tmp_path):
    _use_entry_points(monkeypatch, {**_declared(), "broken": "zb_no_such_module_here:register"})
    db = str(tmp_path / "m.db")
    assert main(["--path", db, *EMB, "add", "Ana adopted a kitten"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("stored ") and err == ""  # quiet without --verbose
    assert main(["--path", db, *EMB, "--verbose", "recall", "kitten", "-k", "1", "--json"]) == 0
    _, err = capsys.readouterr()
    notes = err.strip().splitlines()
    assert len(notes) == 1 and "'broken'" in notes[0] and "zb_no_such_module_here" in notes[0]
    assert main(["demo", "--help"]) == 0  # the other plugins still load


def test_a_plugin_that_fails_otherwise_is_skipped_with_a_warning(monkeypatch, capsys, tmp_path):
    (tmp_path / "zb_buggy_plugin.py").write_text("def register(subparsers):\n    raise RuntimeError('oops')\n",
                                                 encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _use_entry_points(monkeypatch, {"buggy": "zb_buggy_plugin:register"})
    assert main(["mechanisms", "--json"]) == 0
    _, err = capsys.readouterr()
    assert err.strip() == "warning: commands of plugin 'buggy' (zb_buggy_plugin:register) skipped: RuntimeError: oops"


@pytest.mark.parametrize("argv", [["bench", "locomo"], ["bench", "longmemeval"], ["demo"]])
def test_benchmark_commands_without_the_bench_extra_name_it(monkeypatch, capsys, argv):
    _use_entry_points(monkeypatch, _declared())
    monkeypatch.setitem(sys.modules, "bm25s", None)  # as if not installed
    assert main([*argv, *EMB, "--no-progress"]) == 2
    _, err = capsys.readouterr()
    assert err.strip() == (f"error: 'zenbrain {argv[0]}' needs zenbrain's 'bench' extra (missing: bm25s): "
                           'pip install "zenbrain[bench]"')


def test_experiments_without_the_plotting_library_name_the_extra(monkeypatch, capsys, tmp_path):
    _use_entry_points(monkeypatch, _declared())
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["experiments", "kg", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    _, err = capsys.readouterr()
    assert "(missing: matplotlib)" in err and 'pip install "zenbrain[bench]"' in err
