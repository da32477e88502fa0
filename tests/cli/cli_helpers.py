"""Helpers of the CLI tests: run the ``zenbrain`` command in-process, store a memory."""

from __future__ import annotations

import re

import pytest

from zenbrain.cli import main

EMB = ["--embedder", "hashing:384"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``zenbrain ARGV``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def add(capsys: pytest.CaptureFixture[str], db: str, text: str, *extra: str) -> str:
    """Store ``text`` in the store at ``db`` with the hashing embedder; the new memory's id."""
    code, out, err = run(capsys, "--path", db, *EMB, "add", text, *extra)
    assert code == 0, err
    m = re.match(r"stored ([0-9a-f]{32})", out)
    assert m, out
    return m.group(1)
