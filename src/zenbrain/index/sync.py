"""The lexical index and the vector partitions of one database, kept in step with it.

Every index records the change-log position it reflects. Before a search, :meth:`sync`
asks the source for the ids changed since the oldest of them, reads their rows once per
partition and applies them to each index (idempotent, so an index already past some of
those changes takes them again harmlessly). Files live in one directory beside the
database (``<database>.idx/`` by convention)::

    manifest.json                      format, store id, embedder, width; each index's position
    lexical/p-<partition hash>/ + .keys.npz   one partition's tantivy segments and id <-> key
                                       table (each partition searched lexically here so far)
    p-<partition hash>.vec.npy|.cols.npz|.usearch   one vector partition

Files are written by :meth:`save` (atomically, the manifest last): a crash leaves the
previous, consistent set, older than the database, which the next sync brings up to
date. Files from another database, another embedder or width, a position beyond the
log's end or a log that no longer reaches back, and unreadable files, are rebuilt from
the source's rows. After loading, a sample of rows is compared with the source.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from typing import IO

import numpy as np

from .columns import FilterLike
from .lexical import LexicalIndex, text_key
from .lexical_set import LexicalSet
from .source import IndexRow, IndexSource, Partition, erased_number, partition_stem
from .vectors import AnnParams, VectorPartition, content_key, stored

log = logging.getLogger(__name__)

FORMAT = 2
# The lexical files' layout: one index a partition. Files of the earlier layout (one index
# for every partition) are removed on open and each partition's built on its first search;
# the vector partitions' files stay.
LEXICAL_LAYOUT = "per-partition"
VERIFY_SAMPLE = 16
# A filter's id list up to this long restricts the lexical query itself (only those
# documents are scored); a longer one is applied to the ranked hits.
ONLY_IDS_MAX = 4096



class IndexSet:
    """Lexical and vector search of a store's partitions (see module docs).

    ``directory`` None keeps everything in memory (nothing persists); otherwise the
    directory is created on :meth:`save`."""

    def __init__(self, source: IndexSource, directory: str | os.PathLike[str] | None,
                 params: AnnParams | None = None, *, lock: threading.RLock | None = None) -> None:
        self.source = source
        self.params = params or AnnParams()
        self.directory = Path(directory) if directory is not None else None
        # ``lock``: the caller's, when it serialises its own use of the source's connection
        # with it (the set takes it for everything but a lexical build beside the index).
        self._lock = lock or threading.RLock()
        self._parts: dict[Partition, VectorPartition] = {}
        self._part_seq: dict[Partition, int] = {}
        self._saved: dict[str, dict] = {}  # partition stem -> manifest entry, for partitions not loaded
        # The store's numbers of the partitions indexed here (loaded, or saved in the files):
        # an erased partition's change-log rows name it by its number only.
        self._numbered: dict[int, Partition] = {}
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.rebuilds: list[str] = []  # what was rebuilt and why (for diagnostics and tests)
        self._scrub_needed = False  # the change log deleted memories: their files are to scrub
        self._scrubbing = False
        # Lexical indexes rebuilt beside the ones in use (``_rebuild_lexical``): one build a
        # partition at a time, and the threads that build for another process's erasure.
        self._rebuild_locks: dict[Partition, threading.Lock] = defaultdict(threading.Lock)
        self._rebuilders: list[threading.Thread] = []
        self._lockfile: IO[bytes] | None = None
        if self.directory is not None and not self._lock_directory():
            # One process owns the files (tantivy allows one writer): another works in memory.
            self.rebuilds.append(f"{self.directory} is in use by another process: indexes kept in memory")
            self.directory = None
        self._open()

    # -- opening and rebuilding -------------------------------------------------------------
    def _lock_directory(self) -> bool:
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        fh = open(self.directory / ".lock", "a+b")  # noqa: SIM115 - held open while the set lives
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - no advisory locks: trust the caller
            pass
        except OSError:
            fh.close()
            return False
        self._lockfile = fh
        return True

    def _manifest(self) -> dict | None:
        if self.directory is None:
            return None
        try:
            m = json.loads((self.directory / "manifest.json").read_text())
        except (OSError, ValueError):
            return None
        src = self.source
        if not isinstance(m, dict) or m.get("format") != FORMAT or m.get("store_id") != src.store_id \
                or m.get("embedder") != src.embedder_name or m.get("dim") != src.dim:
            self.rebuilds.append("manifest of another store, embedder or format")
            return None
        return m

    def _open(self) -> None:
        m = self._manifest()
        if m is None and self.directory is not None and self.directory.exists():
            self._wipe()
        self._saved = dict(m["partitions"]) if m else {}
        self._lex_parts = {(str(u), str(a)) for u, a in m.get("lexical_partitions", [])} if m else set()
        for entry in self._saved.values():
            part = (str(entry["partition"][0]), str(entry["partition"][1]))
            if isinstance(entry.get("number"), int):
                self._numbered[entry["number"]] = part
            else:  # files saved before numbers were kept
                self._note_number(part)
        for part in self._lex_parts:
            self._note_number(part)
        self.lexical = LexicalSet(self._lexical_dir(), self.source.all_texts)
        self.lexical.remove_apart()
        if m is not None and self.directory is not None and m.get("lexical_layout") != LEXICAL_LAYOUT:
            self.rebuilds.append("lexical index of the earlier layout: each partition's rebuilt on first search")
            (self.directory / "lexical.keys.npz").unlink(missing_ok=True)
            self.lexical.clear()
            self._lex_parts = set()
            m = {**m, "lexical_seq": self.source.log_seq()}
        if m is None or self.directory is None:
            self._build_lexical()
            return
        self._lex_seq = int(m["lexical_seq"])
        for part in sorted(self._lex_parts):
            try:
                if not self.lexical.load(part):  # held in memory: built on its first search
                    self._lex_parts.discard(part)
            except (OSError, ValueError, KeyError) as exc:
                # Built from rows at least as new as the saved position: later changes replay harmlessly.
                self.rebuilds.append(f"lexical index of {partition_stem(part)} unreadable ({exc})")
                self.lexical.build(part, self.source.all_texts(part))

    def _wipe(self) -> None:
        assert self.directory is not None
        for p in self.directory.iterdir():
            if p.name == ".lock":
                continue
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()

    def _note_number(self, partition: Partition) -> None:
        number = self.source.partition_number(partition)
        if number is not None:
            self._numbered[number] = partition

    def _named(self, partition: Partition) -> Partition:
        """The partition a change-log row names: an erased partition's rows name its number."""
        number = erased_number(partition)
        return partition if number is None else self._numbered.get(number, partition)

    def _lexical_dir(self) -> Path:
        if self.directory is not None:
            return self.directory / "lexical"
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="zenbrain-lexical-", ignore_cleanup_errors=True)
        return Path(self._scratch.name) / "lexical"

    def _build_lexical(self) -> None:
        """Every lexical index anew from the store's texts."""
        self.lexical.clear()
        seq = self.source.log_seq()  # rows read after this position: later changes replay
        for part in sorted(self._lex_parts):
            self.lexical.build(part, self.source.all_texts(part))
        self._lex_seq = seq

    def _load_partition(self, partition: Partition) -> VectorPartition:
        stem = partition_stem(partition)
        entry = self._saved.get(stem)
        if entry is not None and self.directory is not None and entry.get("partition") == list(partition):
            self._note_number(partition)
            try:
                part = VectorPartition.load(self.directory / stem, self.source.dim, self.params)
                self._parts[partition] = part
                self._part_seq[partition] = int(entry["seq"])
                self._sync_locked()
                if self._parts.get(partition) is not part:  # the replay found the log elsewhere: rebuilt
                    return self._parts[partition]
                if self._verify_partition(partition, part):
                    return part
                # Either file may have lost a change: rebuild both from the store.
                self.rebuilds.append(f"{stem}: disagrees with the store")
                if partition in self._lex_parts:
                    self.lexical.build(partition, self.source.all_texts(partition))
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                self.rebuilds.append(f"{stem}: unreadable ({exc})")
            self._parts.pop(partition, None)
        return self._build_partition(partition)

    def _build_partition(self, partition: Partition) -> VectorPartition:
        seq = self.source.log_seq()
        self._note_number(partition)
        part = VectorPartition(self.source.dim, self.params)
        for row in self.source.all_rows(partition):
            part.upsert(row)
        part.maintain()
        self._parts[partition] = part
        self._part_seq[partition] = seq
        return part

    def _verify_partition(self, partition: Partition, part: VectorPartition) -> bool:
        """A sample of the partition's memories match the source: the same ids live, the
        same content and vector (a cheap guard against files that lost a change)."""
        if not part.pos:
            return True
        rng = np.random.default_rng(len(part.pos))
        ids = [part.ids[r] for r in rng.choice(list(part.pos.values()), min(VERIFY_SAMPLE, len(part.pos)),
                                                replace=False).tolist()]
        rows = {r.id: r for r in self.source.rows(partition, ids)}
        for mid in ids:
            row = rows.get(mid)
            if row is None:
                return False
            r = part.pos[mid]
            if part.cols.chash[r] != content_key(row.content_hash):
                return False
            mine = part.vector(mid)
            if (mine is None) != (row.vector is None):
                return False
            if mine is not None and row.vector is not None and not np.array_equal(mine, stored(row.vector)):
                return False
            if partition not in self._lex_parts:
                continue
            keys = self.lexical.shard(partition).keys
            lk = keys.key.get(mid)
            if lk is None or not keys.live[lk] or keys.chash[lk] != text_key(row.content):
                return False
        return True

    def partition(self, partition: Partition) -> VectorPartition:
        """The partition's vector index, loaded or built on first use, synced."""
        with self._lock:
            part = self._parts.get(partition)
            if part is None:
                return self._load_partition(partition)
            self._sync_locked()
            if self._scrub_needed and not self._scrubbing:  # another process erased memories
                # Its words leave this process's lexical files in a thread: a rebuild of a
                # large partition takes seconds, and this search need not wait for it.
                later = self._scrub_files_locked(lexical_apart=True)
                if later:
                    self._rebuild_in_thread(later)
            # The sync may have rebuilt it (the log did not reach back), the scrub dropped it (emptied).
            found = self._parts.get(partition)
            return found if found is not None else self._load_partition(partition)

    # -- following the change log ------------------------------------------------------------
    def sync(self) -> None:
        with self._lock:
            self._sync_locked()

    def _sync_locked(self) -> None:
        start = min([self._lex_seq, *self._part_seq.values()])
        batch = self.source.changes_since(start)
        if batch is None:
            self.rebuilds.append(f"change log does not reach back to {start}")
            self._build_lexical()
            for p in list(self._parts):
                self._build_partition(p)
            return
        if batch.seq <= start and not batch.changed:
            return
        by_part: dict[Partition, list[str]] = defaultdict(list)
        for named, mid in batch.changed:
            by_part[self._named(named)].append(mid)
        for part, ids in by_part.items():
            if part not in self._lex_parts and part not in self._parts:
                continue  # indexed nowhere here yet: read in full when first searched
            if erased_number(part) is None:
                self._note_number(part)  # a partition erased and written again has a new number
            rows: list[IndexRow] = []
            for i in range(0, len(ids), 500):
                rows.extend(self.source.rows(part, ids[i : i + 500]))
            if part in self._lex_parts:
                self.lexical.apply(part, ids, rows)
                if self.lexical.shard(part).deleted_documents:
                    self._scrub_needed = True
            vp = self._parts.get(part)
            if vp is not None:
                found = {r.id for r in rows}
                for r in rows:
                    vp.upsert(r)
                for mid in ids:
                    if mid not in found:
                        vp.remove(mid)
                        self._scrub_needed = True
                vp.maintain()
        self.lexical.maybe_commit()
        self._lex_seq = batch.seq
        for p in self._part_seq:
            self._part_seq[p] = batch.seq

    def scrub(self, *, files: bool = True) -> None:
        """Bring the indexes up to the store now and write erased memories out of the files
        (after an erasure): dead rows' vectors, graph copies, ids and columns
        (``VectorPartition.scrub_files``), and the lexical index rebuilt when it holds
        deleted documents. Without ``files`` (a vector no memory uses any more was dropped,
        as when a memory's text changes) only the mapped matrices' zeroed rows are written;
        the rest waits for the next save."""
        with self._lock:
            self._sync_locked()
            if not files:
                for vp in self._parts.values():
                    vp.flush()
                self.lexical.commit()
                return
            later = self._scrub_files_locked(lexical_apart=True)
        # Outside the lock: searches go on while a partition's lexical index is rebuilt.
        for part in later:
            self._rebuild_lexical(part)

    def _scrub_files_locked(self, *, lexical_apart: bool = False) -> list[Partition]:
        """Write deleted memories out of every file: of this process's erasures, and of
        another process's once the change log brings them here (``_scrub_needed``). The
        words of deleted texts stay in tantivy's segments until they merge, so a partition
        whose index held one has its index built anew from its texts (3.3 s for 200k
        memories); with ``lexical_apart`` those partitions are returned instead, for
        ``_rebuild_lexical`` to build without holding the lock."""
        self._scrubbing = True
        try:
            self._load_touched()
            for part, vp in self._parts.items():
                if self.directory is None:
                    vp.flush()
                else:
                    vp.scrub_files(self.directory / partition_stem(part))
            self.lexical.commit()
            self._drop_empty()  # an emptied partition's files go: nothing to rebuild
            self._scrub_needed = False
            later = self.lexical.with_deleted_documents()
            if lexical_apart:
                return later
            for part in later:
                self.lexical.build(part, self.source.all_texts(part))
            return []
        finally:
            self._scrubbing = False

    def _rebuild_lexical(self, partition: Partition) -> None:
        """Build the partition's lexical index anew beside the one in use, without holding
        the lock (searches go on with the old index, whose deleted documents they never
        return), then put it in place under the lock with the changes made meanwhile."""
        with self._rebuild_locks[partition]:  # a second erasure waits, then builds again if needed
            with self._lock:
                if partition not in self.lexical or not self.lexical.shard(partition).deleted_documents:
                    return
                seq = self.source.log_seq()  # the texts are read after this position
                texts = self.source.texts_apart(partition)
                if texts is None:  # one connection only: built under the lock
                    self.lexical.build(partition, self.source.all_texts(partition))
                    return
            built = self.lexical.build_apart(partition, texts)
            with self._lock:
                batch = self.source.changes_since(seq)
                if built is None or batch is None or partition not in self.lexical:
                    if built is not None:
                        LexicalIndex.remove_files(built[0])
                    if partition in self.lexical:  # small, or the log no longer reaches back
                        self.lexical.build(partition, self.source.all_texts(partition))
                    return
                self.lexical.install(partition, built)
                # What changed after the texts were read, and what the old index took since.
                ids = sorted({mid for named, mid in batch.changed if self._named(named) == partition})
                rows: list[IndexRow] = []
                for i in range(0, len(ids), 500):
                    rows.extend(self.source.rows(partition, ids[i : i + 500]))
                self.lexical.apply(partition, ids, rows)
                self.lexical.commit()
                if self.lexical.shard(partition).deleted_documents:  # an erasure came meanwhile
                    self._scrub_needed = True

    def _rebuild_in_thread(self, partitions: list[Partition]) -> None:
        def run() -> None:
            for part in partitions:
                try:
                    self._rebuild_lexical(part)
                except Exception:  # retried: the next search scrubs again
                    log.exception("rebuilding the lexical index of %s after an erasure failed",
                                  partition_stem(part))
                    with self._lock:
                        self._scrub_needed = True

        self._rebuilders = [t for t in self._rebuilders if t.is_alive()]
        thread = threading.Thread(target=run, name="zenbrain-lexical-rebuild", daemon=True)
        self._rebuilders.append(thread)
        thread.start()

    def wait_rebuilds(self, timeout: float | None = None) -> None:
        """Wait for the lexical rebuilds started for another process's erasure."""
        for thread in list(self._rebuilders):
            thread.join(timeout)

    def _load_touched(self) -> None:
        """Load the saved partitions not loaded here that changed since their files were
        written (a process may erase a memory of a partition it never searched): the
        erasure must reach their files too."""
        waiting = {(str(e["partition"][0]), str(e["partition"][1])): int(e["seq"]) for e in self._saved.values()}
        waiting = {p: seq for p, seq in waiting.items() if p not in self._parts}
        if not waiting:
            return
        batch = self.source.changes_since(min(waiting.values()))
        if batch is None:  # the log no longer reaches back: every such partition
            erased = set(waiting)
        else:
            changed: dict[Partition, set[str]] = defaultdict(set)
            for named, mid in batch.changed:
                p = self._named(named)
                if p in waiting:
                    changed[p].add(mid)
            # Only where a changed memory is gone: loading every partition written since its
            # save would cost an erasure in a busy store of many users dearly.
            erased = {p for p, ids in changed.items() if self._any_missing(p, sorted(ids))}
        for part in sorted(erased):
            self.partition(part)

    def _any_missing(self, partition: Partition, ids: list[str]) -> bool:
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            if len(self.source.rows(partition, chunk)) < len(chunk):
                return True
        return False

    def _drop_empty(self) -> None:
        """Forget the partitions an erasure left without a memory: their files (named by a
        hash of the user and agent) and their manifest entries (which name them) go."""
        empty = [p for p in {*self._parts, *self._lex_parts}
                 if (p not in self._parts or len(self._parts[p]) == 0)
                 and (p not in self.lexical or self.lexical.shard(p).keys.live_count == 0)]
        if not empty:
            return
        gone = set(empty)
        self._numbered = {n: p for n, p in self._numbered.items() if p not in gone}
        for part in empty:
            stem = partition_stem(part)
            self._parts.pop(part, None)
            self._part_seq.pop(part, None)
            self._saved.pop(stem, None)
            self._lex_parts.discard(part)
            self.lexical.remove(part)
            if self.directory is not None:
                for suffix in (".vec.npy", ".cols.npz", ".usearch"):
                    (self.directory / f"{stem}{suffix}").unlink(missing_ok=True)
        self._forget_in_manifest(empty)

    def _forget_in_manifest(self, partitions: list[Partition]) -> None:
        """Take partitions out of the manifest on disk, the rest of it as it was saved."""
        if self.directory is None:
            return
        path = self.directory / "manifest.json"
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        gone = {partition_stem(p) for p in partitions}
        manifest["partitions"] = {k: v for k, v in manifest.get("partitions", {}).items() if k not in gone}
        manifest["lexical_partitions"] = [p for p in manifest.get("lexical_partitions", [])
                                          if partition_stem((str(p[0]), str(p[1]))) not in gone]
        self._write_manifest(manifest)

    def _write_manifest(self, manifest: dict) -> None:
        """Replace the manifest on disk atomically (it is written last, after the files it names)."""
        assert self.directory is not None
        tmp = self.directory / f".manifest.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(manifest))
        os.replace(tmp, self.directory / "manifest.json")

    # -- search -----------------------------------------------------------------------------
    def vector_search(self, partition: Partition, query: np.ndarray, k: int, flt: FilterLike | None = None, *,
                      per_layer: bool = False) -> list[tuple[str, float]]:
        with self._lock:
            return self.partition(partition).search(query, k, flt, per_layer=per_layer)

    def lexical_search(self, partition: Partition, text: str, k: int,
                       flt: FilterLike | None = None) -> list[tuple[str, float]]:
        with self._lock:
            part = self.partition(partition)
            if partition not in self._lex_parts:
                self._add_lexical(partition)
            ids = getattr(flt, "ids", None)
            only = ids if ids is not None and len(ids) <= ONLY_IDS_MAX else None
            return self.lexical.search(partition, text, k, part.accept(flt), only=only)

    def _add_lexical(self, partition: Partition) -> None:
        """Index a partition's texts on its first lexical search (the set is synced: rows
        read now are at least as new as the lexical index's position; later changes
        replay harmlessly)."""
        self._note_number(partition)
        self.lexical.build(partition, self.source.all_texts(partition))
        self._lex_parts.add(partition)

    # -- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        """Write every loaded index and the manifest (no-op without a directory)."""
        if self.directory is None:
            return
        with self._lock:
            self._sync_locked()
            if self._scrub_needed:  # another process's erasure: not saved with its words
                self._scrub_files_locked()
            self.directory.mkdir(parents=True, exist_ok=True)
            self.lexical.commit()
            self.lexical.save_keys()
            entries = dict(self._saved)
            for part, vp in self._parts.items():
                stem = partition_stem(part)
                vp.save(self.directory / stem)
                entries[stem] = {"partition": list(part), "seq": self._part_seq[part]}
                number = max((n for n, p in self._numbered.items() if p == part), default=None)
                if number is not None:
                    entries[stem]["number"] = number
            manifest = {"format": FORMAT, "store_id": self.source.store_id, "embedder": self.source.embedder_name,
                        "dim": self.source.dim, "lexical_layout": LEXICAL_LAYOUT, "lexical_seq": self._lex_seq,
                        "partitions": entries, "lexical_partitions": sorted(self._lex_parts)}
            self._write_manifest(manifest)
            self._saved = entries

    def persisted_seq(self) -> int | None:
        """Right after ``save``: the change log position the files on disk reflect in full
        (the oldest of the lexical index's and every saved partition's, loaded here or
        not); None without a directory. The log up to it is no longer needed by them."""
        if self.directory is None or not (self.directory / "manifest.json").exists():
            return None
        with self._lock:
            return min([self._lex_seq, *(int(e["seq"]) for e in self._saved.values())])

    def close(self) -> None:
        self.wait_rebuilds()
        with self._lock:
            self.save()
            self.lexical.close()
            if self._scratch is not None:
                with contextlib.suppress(OSError):
                    self._scratch.cleanup()
            if self._lockfile is not None:
                self._lockfile.close()
                self._lockfile = None
