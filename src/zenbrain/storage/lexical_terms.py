"""Backend-neutral lexical analysis: the terms a text is indexed under and the words a
query asks for, as SQLite's FTS5 ``porter unicode61`` tokenizer makes them.

A store that computes BM25 itself (PostgreSQL) indexes these terms, so its lexical
ranking follows the SQLite store's: tokens are maximal runs of letters, digits and
private-use characters, case-folded, with Latin diacritics removed (unicode61's
``remove_diacritics=1``), then stemmed by the original Porter algorithm (PyStemmer's
``porter``, the algorithm FTS5 implements), leaving tokens of fewer than 3 or more than 64
bytes as they are, as FTS5 does.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from ..errors import ConfigError

# The words a query asks for: what the SQLite store's FTS query keeps.
_QUERY_WORD = re.compile(r"[\w]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her hers him his how i in is it its "
    "me my of on or our she so that the their them they this to was we were what when where which who "
    "whom why will with you your".split()
)
_PORTER_MIN_BYTES = 3
_PORTER_MAX_BYTES = 64


def _is_token_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in "LN" or cat == "Co"


def _fold(ch: str) -> str:
    """Lower case without diacritics (for Latin letters, as unicode61 does)."""
    low = ch.lower()
    if low.isascii():
        return low
    base = unicodedata.normalize("NFD", low)
    kept = "".join(c for c in base if not unicodedata.combining(c))
    return kept or low


def tokens(text: str) -> list[str]:
    """The unicode61 tokens of ``text``: runs of token characters, folded."""
    out: list[str] = []
    cur: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            cur.append(_fold(ch))
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


@lru_cache(maxsize=1)
def _stemmer():  # -> Stemmer.Stemmer
    try:
        import Stemmer
    except ImportError as exc:
        raise ConfigError(f'lexical search on this store needs PyStemmer ({exc}): pip install "zenbrain[postgres]"') \
            from None
    return Stemmer.Stemmer("porter")


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    n = len(token.encode("utf-8"))
    if n < _PORTER_MIN_BYTES or n > _PORTER_MAX_BYTES:
        return token
    return str(_stemmer().stemWord(token))


def terms(text: str) -> list[str]:
    """The indexed terms of ``text`` in order (one per token)."""
    return [stem(t) for t in tokens(text)]


def term_counts(text: str) -> tuple[Counter[str], int]:
    """Each distinct term of ``text`` with its count, and the number of tokens."""
    ts = terms(text)
    return Counter(ts), len(ts)


def query_terms(text: str) -> list[str]:
    """The distinct terms a query asks for: its words less stopwords (as the SQLite store's
    FTS query keeps them), each analysed like indexed text."""
    out: list[str] = []
    seen: set[str] = set()
    words: set[str] = set()
    for w in _QUERY_WORD.findall(text.lower()):
        if w in STOPWORDS or w in words:
            continue
        words.add(w)
        for t in terms(w):
            if t not in seen:
                seen.add(t)
                out.append(t)
    return out
