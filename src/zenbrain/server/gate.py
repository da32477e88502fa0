"""The gate in front of a server's coordinator: operations that only read run side by
side, one that writes runs alone (it is a sequence of reads and writes, and the
coordinator keeps some state in memory), and nobody waits past a deadline.

Writers are served in arrival order and before newly arriving readers, so a steady
stream of reads cannot starve a write. Which operations only read is
``zenbrain.aio.READ_ONLY`` (checked by that module's tests).
"""

from __future__ import annotations

import threading
import time
from collections import deque


class Gate:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers: deque[object] = deque()  # waiting writers, first come first served

    def acquire(self, *, write: bool, timeout: float | None) -> bool:
        """Enter as a reader or a writer; False when ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._cond:
            if not write:
                while self._writer or self._writers:
                    if not self._wait(deadline):
                        return False
                self._readers += 1
                return True
            me = object()
            self._writers.append(me)
            try:
                while self._writer or self._readers or self._writers[0] is not me:
                    if not self._wait(deadline):
                        return False
            finally:
                self._writers.remove(me)
                self._cond.notify_all()  # the next writer in line, or waiting readers
            self._writer = True
            return True

    def release(self, *, write: bool) -> None:
        with self._cond:
            if write:
                self._writer = False
            else:
                self._readers -= 1
            self._cond.notify_all()

    def _wait(self, deadline: float | None) -> bool:
        if deadline is None:
            self._cond.wait()
            return True
        left = deadline - time.monotonic()
        return left > 0 and (self._cond.wait(left) or time.monotonic() < deadline)


__all__ = ["Gate"]
