"""Before a store writes anything to a path: what the file there is, and how a new one is made.

* ``identify`` reads a file without writing to it (its header, then its schema through a
  read-only connection) and says whether it is absent, empty, a zenbrain store, another
  application's SQLite database, not SQLite at all, or damaged. A store opens only its own
  files: another application's database or a file that is not SQLite is refused whatever
  the caller asks, an empty file only becomes a store when creating one was asked for.
* ``create_new`` makes a new store file atomically: the schema is written into a hidden file
  beside the path, which is then hard-linked to it (``os.link`` fails if the path exists).
  Another process therefore never sees a half-made store, and an empty file at a store's
  path is never one zenbrain left: processes that open one new path at once all get the
  same complete file (one link wins, the others open it).
* ``unwritable`` says why a file cannot be written (a read-only file, folder or mount):
  checked before opening for writing, so the error names the cause and the way out.
* ``read_only_uri`` is how a read-only store connects: ``mode=ro`` (SQLite opens the file
  read-only, so nothing can be written, whatever the code asks), or ``immutable=1`` where
  the folder is read-only and SQLite cannot make the WAL's shared-memory file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from urllib.parse import quote

from ...errors import ConfigError, NotAStoreError, ReadOnlyStoreError, StorageError

SQLITE_HEADER = b"SQLite format 3\x00"
STORE_TABLES = frozenset({"schema_migrations", "meta", "memories"})  # what every zenbrain store has
SIDE_FILES = ("-wal", "-shm", "-journal")


class FileKind(Enum):
    ABSENT = "absent"
    EMPTY = "empty"  # a 0-byte file, or an SQLite database without a single table
    STORE = "store"
    FOREIGN = "foreign"  # an SQLite database with tables of another application
    NOT_SQLITE = "not_sqlite"
    DAMAGED = "damaged"  # an SQLite header, but the schema cannot be read


@dataclass(frozen=True)
class Identity:
    kind: FileKind
    detail: str = ""  # the other application's tables, or why the schema could not be read


def file_uri(path: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(os.path.abspath(path))}?{query}"


def _has_wal(path: str) -> bool:
    try:
        return os.path.getsize(path + "-wal") > 0
    except OSError:
        return False


def _tables(path: str, uri: str) -> list[str]:
    conn = sqlite3.connect(uri, uri=True, timeout=5.0)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    finally:
        conn.close()


def identify(path: str) -> Identity:
    """What the file at ``path`` is; nothing is written to it.

    A database in WAL mode whose WAL is gone (closed cleanly) is read ``immutable``, so
    not even SQLite's side files are made beside another application's database; any
    other SQLite file is read through a ``mode=ro`` connection, which sees the WAL."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Identity(FileKind.ABSENT)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise NotAStoreError(f"{path} is a folder, not a memory store file; give the path of a file inside it")
    if st.st_size == 0:
        return Identity(FileKind.EMPTY)
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not head.startswith(SQLITE_HEADER):
        return Identity(FileKind.NOT_SQLITE)
    wal_mode = len(head) > 18 and head[18] == 2
    immutable = wal_mode and not _has_wal(path)
    try:
        tables = _tables(path, file_uri(path, immutable="1") if immutable else file_uri(path, mode="ro"))
    except sqlite3.DatabaseError as exc:
        if not immutable:
            return Identity(FileKind.DAMAGED, str(exc))
        try:  # read without locks: a process that opened the file since may be writing it; read again with them
            tables = _tables(path, file_uri(path, mode="ro"))
        except sqlite3.DatabaseError:
            return Identity(FileKind.DAMAGED, str(exc))
    if not tables:
        return Identity(FileKind.EMPTY)
    if STORE_TABLES <= set(tables):
        return Identity(FileKind.STORE)
    shown = ", ".join(t for t in tables if not t.startswith("sqlite_"))[:200]
    return Identity(FileKind.FOREIGN, shown)


def refusal(path: str, found: Identity, *, create: bool | None) -> NotAStoreError | None:
    """The error for opening what ``identify`` found as a store (None: it may be opened).
    ``create``: True to make a store of an empty file too, False for existing stores only."""
    if found.kind is FileKind.FOREIGN:
        return NotAStoreError(f"{path} is not a zenbrain store: it is an SQLite database of another application "
                              f"(tables: {found.detail}); zenbrain writes nothing into it. Give another path.")
    if found.kind is FileKind.NOT_SQLITE:
        return NotAStoreError(f"{path} is not a zenbrain store (not an SQLite database); zenbrain writes nothing "
                              "into it. Give another path (if it was a store, its header is destroyed: restore the "
                              "newest backup).")
    if found.kind is FileKind.EMPTY and create is not True:
        return NotAStoreError(f"{path} is an empty file, not a zenbrain store; to make a store of it, run "
                              f"`zenbrain init --path {path}` (or open_memory(..., create=True))")
    if found.kind is FileKind.ABSENT and create is False:
        return NotAStoreError(f"no memory store at {path}; create one with `zenbrain init --path {path}`")
    return None


def unwritable(path: str) -> str | None:
    """Why ``path`` (an existing file) cannot be written, or None. SQLite in WAL mode writes
    two files beside the database, so a read-only folder counts too."""
    folder = os.path.dirname(os.path.abspath(path))
    if _read_only_mount(folder):
        return "it is on a read-only file system"
    if not _may(path, os.W_OK):
        return "the file is read-only"
    if not _may(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is read-only (SQLite writes its WAL beside the file)"
    return None


def _may(path: str, mode: int) -> bool:
    """``os.access`` for the effective user (the one whose permissions the kernel checks)."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def _read_only_mount(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def refuse_unwritable(path: str) -> None:
    reason = unwritable(path)
    if reason is not None:
        raise ReadOnlyStoreError(f"{path} cannot be written: {reason}. Open it read-only to read it "
                                 "(open_memory(..., read_only=True), zenbrain --read-only)")


def read_only_uri(path: str) -> str:
    """How a read-only store connects to ``path`` (see the module docstring)."""
    uri = file_uri(path, mode="ro")
    try:
        _tables(path, uri)
        return uri
    except sqlite3.OperationalError as exc:
        if _has_wal(path):
            raise ReadOnlyStoreError(
                f"cannot read {path} read-only: its write-ahead log {path}-wal holds changes that SQLite cannot read "
                f"without writing beside it ({exc}); open it once where it can be written, which folds them in") from exc
    return file_uri(path, immutable="1")  # a read-only folder: nobody can be writing the file


def create_new(path: str, build: Callable[[sqlite3.Connection], None]) -> None:
    """Make a new store at ``path`` (an absent path): ``build`` writes the schema into a
    hidden file beside it, which then appears at ``path`` whole. If another process has made
    ``path`` meanwhile, its file is kept and this one discarded."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from exc
    temp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.new")
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            build(conn)
        finally:
            conn.close()  # a clean close folds the WAL into the file and removes it
        _sync(temp)
        try:
            os.link(temp, path)
        except FileExistsError:
            return  # another process made it first: open that one
        except OSError:  # a file system without hard links: copy into a file only this process created
            _copy_exclusive(temp, path)
        _sync(folder)
    except (sqlite3.Error, OSError) as exc:
        if not _may(folder, os.W_OK | os.X_OK) or _read_only_mount(folder):
            raise ReadOnlyStoreError(f"cannot create {path}: its folder {folder} is read-only") from exc
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StorageError(f"cannot create {path}: {why}") from exc
    finally:
        for p in (temp, *(temp + s for s in SIDE_FILES)):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def check(path: str, *, create: bool | None = None, read_only: bool = False) -> Identity:
    """What is at ``path``, if a store may be opened (or made) there; else the refusal
    ``prepare`` would raise, before anything else is done (an embedder loaded)."""
    if create is True and read_only:
        raise ConfigError("a store cannot be created read-only: give create or read_only, not both")
    found = identify(path)
    if found.kind is FileKind.ABSENT and not read_only and create is not False:
        return found
    error = refusal(path, found, create=False if read_only else create)
    if error is not None:
        raise error
    return found


def prepare(path: str, *, create: bool | None, read_only: bool, build: Callable[[sqlite3.Connection], None]) -> str | None:
    """Make ready to open the store at ``path``, writing nothing to a file that is not one:
    identify the file, create a new store if the path is free (unless ``read_only`` or
    ``create=False``), refuse what may not be opened. Returns the URI a read-only store
    connects with (None when it opens for writing)."""
    if check(path, create=create, read_only=read_only).kind is FileKind.ABSENT:
        create_new(path, build)
        check(path, create=create)  # this process's file, or one another made first
    if read_only:
        return read_only_uri(path)
    refuse_unwritable(path)
    return None


def _copy_exclusive(src: str, dst: str) -> None:
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
        while chunk := inp.read(1 << 20):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())


def _sync(path: str) -> None:
    """fsync a file or folder, so that a new store survives a power cut once it is there
    (best effort: some systems cannot sync a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["FileKind", "Identity", "check", "create_new", "file_uri", "identify", "prepare", "read_only_uri", "refusal",
           "refuse_unwritable", "unwritable"]
