"""The admission defaults of one server process (``guard.Limits``): how many requests run at
once, how many wait, and for how long. A module of plain numbers, so that ``zenbrain serve
--help`` can state them without importing the server."""

# Requests under /v1 running at once. One: a recall (it records its use) or a store holds
# the process's gate alone anyway, and requests beside it only fight over the GIL; on the
# REST load test (2 processes, 80 % recall, 20 % store) 4 served 126 and 92 requests/s at an
# offered 150 and 200, 1 served 147.6 and 122.1 (docs/reliability.md). Reads that run side
# by side (recall without touch) gain little within one process; use more processes.
MAX_ACTIVE = 1
MAX_QUEUED = 32  # requests under /v1 waiting to run
MAX_QUEUE_WAIT_S = 2.0  # a request waits this long at most before it is shed

__all__ = ["MAX_ACTIVE", "MAX_QUEUED", "MAX_QUEUE_WAIT_S"]
