"""Waiting for a forked child in a test (shared by the tests of threads a fork leaves behind)."""

from __future__ import annotations

import os
import signal
import time

import pytest


def child_exit_code(pid: int, what: str, timeout: float = 30.0) -> int:
    """The forked child's exit code; kills it and fails the test (saying ``what``) if it
    has not ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(what)
        time.sleep(0.05)
