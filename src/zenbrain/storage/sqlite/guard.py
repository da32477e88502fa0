"""What SQLite and the ``sqlite3`` module raise, turned into zenbrain's errors.

Every read and write of the store passes its failures through ``translate``, so a caller
only ever sees the exception tree of ``zenbrain.errors``: a damaged file becomes a
``DamagedStoreError`` with a recovery hint, a full disk or a lock held too long a
``StorageError`` saying so, text that cannot be encoded a ``ValidationError``.
"""

from __future__ import annotations

import sqlite3

from ...errors import (
    DamagedStoreError,
    StorageError,
    StoreClosedError,
    ValidationError,
    ZenBrainError,
)

# What SQLite raises that zenbrain translates (anything else is a bug and propagates as is).
TRANSLATED: tuple[type[BaseException], ...] = (sqlite3.Error, UnicodeEncodeError, OverflowError)


def recovery_hint(path: str) -> str:
    return (f"check it with `zenbrain check --path {path}`; restore the newest backup, or salvage what is "
            f"readable with `sqlite3 {path} .recover | sqlite3 recovered.db`")


def error_name(exc: BaseException) -> str:
    """SQLite's primary result code name (SQLITE_BUSY, SQLITE_CORRUPT, ...), or ''."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    code = getattr(exc, "sqlite_errorcode", None)
    if not name and isinstance(code, int):
        name = {5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 11: "SQLITE_CORRUPT", 13: "SQLITE_FULL",
                26: "SQLITE_NOTADB"}.get(code & 0xFF, "")
    return name


def is_busy(exc: BaseException) -> bool:
    name = error_name(exc)
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or (not name and "locked" in str(exc))


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite found the file malformed (not a transient failure)."""
    name = error_name(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text)


def translate(exc: BaseException, path: str, doing: str) -> ZenBrainError:
    """The zenbrain error for ``exc``, raised while ``doing`` something with the store at ``path``."""
    if isinstance(exc, ZenBrainError):
        return exc
    if isinstance(exc, UnicodeEncodeError):
        return ValidationError(f"text is not valid Unicode (a lone surrogate at position {exc.start}); nothing was "
                               "written")
    if isinstance(exc, OverflowError):
        return ValidationError(f"a number is too large to store or compare ({exc}); nothing was written")
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc).lower():
        return StoreClosedError(f"{path}: the store is closed")
    if is_damage(exc):
        return DamagedStoreError(f"{path} is damaged ({exc}) while {doing}: {recovery_hint(path)}")
    name = error_name(exc)
    if name.startswith("SQLITE_FULL"):
        return StorageError(f"{path}: the disk is full while {doing} ({exc}); the operation was rolled back: free "
                            "space and retry")
    if is_busy(exc):
        return StorageError(f"{path} is locked by another connection for longer than the timeout while {doing}; "
                            "retry later")
    if name.startswith("SQLITE_READONLY"):
        return StorageError(f"{path} is read-only while {doing} ({exc}): check the file's permissions")
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return StorageError(f"{path}: input/output error while {doing} ({exc}): check the disk and the file")
    return StorageError(f"{path}: {doing} failed: {exc}")


__all__ = ["TRANSLATED", "error_name", "is_busy", "is_damage", "recovery_hint", "translate"]
