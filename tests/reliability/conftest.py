"""The reliability suite: faults, hostile input, isolation, erasure on disk and overload.
It reuses the server tests' live uvicorn helper (``tests/server/live_server.py``)."""

import sys
from pathlib import Path

_SERVER_TESTS = str(Path(__file__).resolve().parents[1] / "server")
if _SERVER_TESTS not in sys.path:
    sys.path.insert(0, _SERVER_TESTS)
