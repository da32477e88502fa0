"""The admission of the REST server's Guard, driven directly on an event loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from zenbrain.server.guard import Guard, Limits


def test_a_burst_read_in_one_loop_turn_is_shed_at_once_beyond_the_queue() -> None:
    """Requests that reach the Guard in the same turn of the event loop: one takes the only
    slot, two wait in the queue, and every other one is refused at once, not after the
    queue's bound."""
    served: list[float] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(0.3)
        served.append(time.monotonic())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    guard = Guard(app, Limits(max_active=1, max_queued=2, max_queue_wait_s=2.0, retry_after_s=1))

    async def one() -> tuple[int, float]:
        sent: list[dict[str, Any]] = []
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)  # the client stays connected
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        t = time.monotonic()
        await guard({"type": "http", "path": "/v1/recall", "method": "POST", "headers": []}, receive, send)
        return int(sent[0]["status"]), time.monotonic() - t

    async def burst() -> list[tuple[int, float]]:
        return list(await asyncio.gather(*(one() for _ in range(12))))

    results = asyncio.run(burst())
    shed = [t for status, t in results if status == 503]
    assert sorted(status for status, _ in results) == [200] * 3 + [503] * 9
    assert max(shed) < 0.2  # refused at once: before the first served answer (0.3 s)
    assert guard.shed == 9
