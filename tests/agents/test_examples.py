"""The examples run as users run them (a subprocess each) and remember across runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zenbrain.providers.testing import FakeProviderServer

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ZENBRAIN_CHAT")}
    base.update(ZENBRAIN_EMBEDDER="hashing:384", PYTHONPATH=str(ROOT / "src"), **(env or {}))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], check=False, input=stdin, text=True,
                          capture_output=True, env=base, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_chat_agent_remembers_what_the_first_run_was_told(tmp_path):
    db = str(tmp_path / "agent.db")
    first = _run("chat_agent.py", "--path", db, stdin="My name is Alice and I live in Lyon.\nI love green tea.\n")
    assert "Got it" in first.stdout and "slept" in first.stderr
    second = _run("chat_agent.py", "--path", db, stdin="Where do I live?\nWhat do I love to drink?\n")
    assert "You told me: I live in Lyon." in second.stdout
    assert "You told me: I love green tea." in second.stdout
    # A store that was never told anything has nothing to recall.
    fresh = _run("chat_agent.py", "--path", str(tmp_path / "other.db"), stdin="Where do I live?\n")
    assert "I don't remember that yet." in fresh.stdout


def test_the_chat_agent_talks_to_a_configured_openai_compatible_endpoint(tmp_path):
    with FakeProviderServer() as server:
        spec = f"openai:fake-model@{server.openai_url}"
        out = _run("chat_agent.py", "--path", str(tmp_path / "a.db"), stdin="I live in Oslo.\n",
                   env={"ZENBRAIN_CHAT": spec})
        assert "echo: I live in Oslo." in out.stdout
        out = _run("chat_agent.py", "--path", str(tmp_path / "a.db"), stdin="Where do I live?\n",
                   env={"ZENBRAIN_CHAT": spec})
        system = server.requests_to("/v1/chat/completions")[-1].body["messages"][0]["content"]
        assert "I live in Oslo." in system  # recalled from the first run, in the prompt


def test_the_langgraph_example_runs(tmp_path):
    pytest.importorskip("langgraph")
    out = _run("langgraph_store.py", "--path", str(tmp_path / "lg.db"))
    assert "my sister Lea lives in Porto" in out.stdout.splitlines()[3]


@pytest.mark.slow
def test_the_openai_agents_example_runs(tmp_path):
    pytest.importorskip("agents")
    out = _run("openai_agents_session.py", "--path", str(tmp_path / "oa.db"))
    assert "history items: 4" in out.stdout and "- I live in Porto" in out.stdout
