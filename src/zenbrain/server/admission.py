"""The admission defaults of one server process (``guard.Limits``): how many requests run at
once, how many wait, and for how long. A module of plain numbers, so that ``zenbrain serve
--help`` can state them without importing the server."""

MAX_ACTIVE = 4  # requests under /v1 running at once
MAX_QUEUED = 32  # requests under /v1 waiting to run
MAX_QUEUE_WAIT_S = 2.0  # a request waits this long at most before it is shed

__all__ = ["MAX_ACTIVE", "MAX_QUEUED", "MAX_QUEUE_WAIT_S"]
