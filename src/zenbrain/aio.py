"""The async facade: every public operation of :class:`MemoryCoordinator`, awaitable.

    from zenbrain import open_async_memory, Scope

    async with open_async_memory("memory.db") as memory:
        await memory.store("Alice prefers tea", Scope("alice"))
        hits = await memory.recall("what does Alice drink?", Scope("alice"))

There is one implementation of each operation: the synchronous coordinator's. The methods
of :class:`AsyncMemory` are generated from the coordinator's public methods when this
module is imported (same names, same signatures, same docstrings), each running its call
in a bounded thread pool, so the event loop never blocks on SQLite or on the embedder and
a new coordinator method is awaitable here without a line of code.

Concurrency follows what the store allows. ``SQLiteStore`` keeps one connection
(``check_same_thread=False``) behind a re-entrant lock, so each store call is atomic, but
an operation is several of them (read state, compute, write in a transaction), and the
coordinator keeps some state in memory (the query-embedding cache, the random generator).
Two operations that change anything (``store``, ``update``, ``recall`` with its
reinforcement writes, ``sleep``, ...) therefore never overlap: they take the write side
of a readers-writer lock, one at a time, in arrival order. Operations that only read
(``get``, ``list_memories``, ``episodes``, ``history``, ``relations``, ``stats``,
``review_queue``; the :data:`READ_ONLY` set) share the read side and may run together.
Any coordinator method not named there counts as a writer, so a new method is safe by
default. Writers are preferred: a steady stream of reads cannot starve a write.

A task that is cancelled while its operation runs does not stop the operation: it finishes
(or fails) in its thread, atomically as in the sync API, and its result is dropped.
While an ``AsyncMemory`` is open, reach the store only through it (or through
:meth:`AsyncMemory.run`); a direct call on the wrapped coordinator from another thread
would bypass the lock.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .api import MemoryCoordinator
from .errors import StorageError, ValidationError

__all__ = ["READ_ONLY", "AsyncMemory", "ReadWriteLock", "facade_methods", "open_async_memory"]

T = TypeVar("T")

# Coordinator methods that only read the store and touch no in-memory state of the
# coordinator (checked by a test that runs each of them and watches the file's change
# counter). Everything else takes the write side of the lock.
READ_ONLY: frozenset[str] = frozenset({"get", "list_memories", "episodes", "history", "relations", "stats", "review_queue",
                                     "contexts", "forgetting_curve"})

# Public methods of the coordinator that are not operations on memories.
_NOT_DELEGATED = frozenset({"close"})


class ReadWriteLock:
    """Many readers or one writer, writers first (a waiting writer holds back new readers)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_read(self) -> None:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True

    def release_write(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()

    def run(self, fn: Callable[[], T], *, write: bool) -> T:
        if write:
            self.acquire_write()
            try:
                return fn()
            finally:
                self.release_write()
        self.acquire_read()
        try:
            return fn()
        finally:
            self.release_read()


def facade_methods(cls: type = MemoryCoordinator) -> dict[str, Callable[..., Any]]:
    """The public methods of the sync facade that the async one mirrors, by name."""
    out: dict[str, Callable[..., Any]] = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or name in _NOT_DELEGATED:
            continue
        if inspect.isfunction(member):
            out[name] = member
    return out


def _delegate(name: str, sync_fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    write = name not in READ_ONLY

    @functools.wraps(sync_fn)
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(self.sync, name)
        return await self._submit(functools.partial(bound, *args, **kwargs), write=write)

    method.__doc__ = f"Awaitable :meth:`MemoryCoordinator.{name}`.\n\n{inspect.getdoc(sync_fn) or ''}".rstrip()
    return method


class AsyncMemory:
    """Awaitable operations over one :class:`MemoryCoordinator` (see the module docstring).

    ``max_workers`` bounds the threads that run operations (default: the number of
    processors, at most 4): reads run side by side up to that many, writes one at a time.
    """

    def __init__(self, memory: MemoryCoordinator, *, max_workers: int | None = None) -> None:
        if not isinstance(memory, MemoryCoordinator):
            raise ValidationError(f"AsyncMemory wraps a MemoryCoordinator, got {type(memory).__name__}")
        if max_workers is None:
            max_workers = min(4, os.cpu_count() or 1)
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValidationError(f"max_workers must be a positive integer, got {max_workers!r}")
        self.sync = memory
        self.max_workers = max_workers
        self._lock = ReadWriteLock()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="zenbrain")
        self._closed = False

    async def run(self, fn: Callable[[MemoryCoordinator], T], *, write: bool = True) -> T:
        """Run ``fn(coordinator)`` in the pool under the lock: several calls as one
        operation, or anything the generated methods do not cover. ``write=False``
        promises that ``fn`` only reads."""
        return await self._submit(functools.partial(fn, self.sync), write=write)

    def locked(self, fn: Callable[[MemoryCoordinator], T], *, write: bool = True) -> T:
        """Run ``fn(coordinator)`` in the calling thread under the same lock: for synchronous
        code that shares the store with this facade (a framework's sync entry points)."""
        if self._closed:
            raise StorageError("this memory is closed")
        return self._lock.run(functools.partial(fn, self.sync), write=write)

    async def _submit(self, call: Callable[[], T], *, write: bool) -> T:
        if self._closed:
            raise StorageError("this memory is closed")
        loop = asyncio.get_running_loop()
        # The caller's context variables (e.g. ``ids.seeded_ids``) apply in the worker thread too.
        ctx = contextvars.copy_context()
        job = functools.partial(ctx.run, self._lock.run, call, write=write)
        try:
            return await loop.run_in_executor(self._pool, job)
        except RuntimeError as exc:
            if self._closed:  # the pool refused the job: closed while the call was queued
                raise StorageError("this memory is closed") from exc
            raise

    async def aclose(self) -> None:
        """Let the operations already submitted finish, then close the store; calls made after
        this raise StorageError."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._shutdown)

    def _shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        self.sync.close()

    def close(self) -> None:
        """``aclose`` for code outside an event loop."""
        if not self._closed:
            self._closed = True
            self._shutdown()

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    if TYPE_CHECKING:  # the generated methods, for type checkers
        def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...


for _name, _fn in facade_methods().items():
    setattr(AsyncMemory, _name, _delegate(_name, _fn))
del _name, _fn


def open_async_memory(path: str | os.PathLike[str] | None = None, *, max_workers: int | None = None,
                      **options: Any) -> AsyncMemory:
    """:func:`zenbrain.open_memory` wrapped in :class:`AsyncMemory` (same options).

    Opening loads the embedder and may take a second; it happens here, before the first await.
    """
    from .api import open_memory

    return AsyncMemory(open_memory(path, **options), max_workers=max_workers)
