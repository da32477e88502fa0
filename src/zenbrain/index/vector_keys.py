"""How a vector's key is kept in the SQLite store's vectors table.

Keys are content hashes: 64 lowercase hex digits of a SHA-256. The table keeps them as
their 32 bytes, which with a 768-byte float16 MiniLM vector lets five rows share a 4 KB
page (the hex text left room for four). Any other key (an application's own) is kept as
the SHA-256 of its text under a prefix no content hash has: the table never needs a key
back, only to find one, and two keys share a row only if SHA-256 collides.

SQL reaches the same bytes through the function ``zb_vector_key(text)``, which every
connection that joins memories with their vectors registers (``register``).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3

SQL_FUNCTION = "zb_vector_key"
_DIGEST = re.compile(r"[0-9a-f]{64}")
_OTHER = b"zenbrain vector key\x00"


def key_blob(key: str) -> bytes:
    """The bytes under which the vectors table keeps the vector of ``key``."""
    if len(key) == 64 and _DIGEST.fullmatch(key):
        return bytes.fromhex(key)
    return hashlib.sha256(_OTHER + key.encode("utf-8", "surrogatepass")).digest()


def _sql_key(key: str | None) -> bytes | None:
    return None if key is None else key_blob(str(key))


def register(conn: sqlite3.Connection) -> None:
    """Make ``zb_vector_key`` callable in ``conn``'s SQL."""
    conn.create_function(SQL_FUNCTION, 1, _sql_key, deterministic=True)
