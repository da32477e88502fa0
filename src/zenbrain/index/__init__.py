"""Search indexes derived from a store and kept in step with its change log.

* :mod:`.lexical` BM25 top-k over memory texts (tantivy), bounded cost per query.
* :mod:`.vectors` dense top-k per partition: exact below a size, HNSW (usearch) with an
  exact float32 re-rank above, filters by masks with oversampling or exact fallback.
* :mod:`.sync` both, persisted beside the database, replaying the change log.
* :mod:`.source` the interface a store provides (:class:`IndexSource`);
  :mod:`.sqlite_source` reads it from today's SQLite schema.
"""

from .source import ChangeBatch, IndexRow, IndexSource, Partition
from .sync import IndexSet
from .vectors import AnnParams, VectorPartition

__all__ = ["AnnParams", "ChangeBatch", "IndexRow", "IndexSet", "IndexSource", "Partition", "VectorPartition"]
