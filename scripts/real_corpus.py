"""A corpus of real English text with real MiniLM vectors, for speed benchmarks at scale.

Texts come from this machine's English man pages (``/usr/share/man/man*/``, gzip roff)
and ``/usr/share/doc`` (gzip text): roff requests and escapes are stripped, paragraphs
split into sentences, junk dropped (too short or long, mostly symbols, not English) and
duplicates removed. Beyond the distinct sentences, a text is two sentences that stand
next to each other in the same source (a real passage), then, if more are needed, two
distinct sentences drawn at random.

Everything lands in a work directory outside the repository (``--dir``, default
``$ZENBRAIN_CORPUS_DIR`` or ``~/.cache/zenbrain/corpus``)::

    sentences.txt                 distinct sentences, one a line, in order of first sight
    pairs.npy                     (P, 2) int32: adjacent sentence pairs of one source
    <embedder>/chunk_NNNNN.npy    float32 vectors of corpus texts [N*CHUNK, (N+1)*CHUNK)

The corpus order is fixed by a seed: a shuffle of the distinct sentences, then a
shuffle of the pairs, so any prefix is a sample of every source. Embedding is resumable
chunk by chunk (a chunk file appears atomically when done).

    python scripts/real_corpus.py extract
    OMP_NUM_THREADS=2 python scripts/real_corpus.py embed --size 1000000
    python scripts/real_corpus.py info

Other scripts call :func:`load_corpus` (texts and a float32 matrix of the first n).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

CHUNK = 10_000
SEED = 20261125
MAN_ROOT = Path("/usr/share/man")
DOC_ROOT = Path("/usr/share/doc")


def default_dir() -> Path:
    env = os.environ.get("ZENBRAIN_CORPUS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "zenbrain" / "corpus"


# ---------------------------------------------------------------- roff to text

# Named glyphs \(xx and \[xx] that carry text; any other is dropped.
_GLYPHS = {
    "em": " - ", "en": "-", "hy": "-", "aq": "'", "oq": "'", "cq": "'", "lq": '"', "rq": '"',
    "dq": '"', "bu": "", "co": "(c)", "rg": "(R)", "tm": "(TM)", "mi": "-", "pl": "+",
    "ti": "~", "ha": "^", "rs": "\\", "sl": "/", "ba": "|", "or": "|", "at": "@", "sh": "#",
    "Do": "$", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "fm": "'", "ga": "`", "aa": "'",
}
# Perl's pod2man strings (\*(C`, \*(L", ...) and common ones.
_STRINGS = {"C`": '"', "C'": '"', 'L"': '"', 'R"': '"', "lq": '"', "rq": '"', "R": "(R)", "Tm": "(TM)"}
_ESCAPE = re.compile(
    r"\\(?:"
    r"f(?:\[[^\]]*\]|\(..|.)"  # font change
    r"|s[-+]?(?:\[[^\]]*\]|\(..|\d{1,2})"  # size change
    r"|\((?P<g2>..)|\[(?P<gb>[^\]]*)\]"  # glyphs
    r"|\*(?:\((?P<s2>..)|\[(?P<sb>[^\]]*)\]|(?P<s1>.))"  # strings
    r"|[kgnmFYV](?:\[[^\]]*\]|\(..|.)"  # registers and such
    r"|[hvwlLDoxbZzNRS]'[^']*'"  # motions, widths, drawing
    r"|(?P<lit>[-e\\.'`])"  # literal characters
    r"|[0~ ]"  # spaces
    r"|."  # anything else: \& \| \^ \c \% \: \/ \, \! \d \u \p \t ...
    r")"
)


def _unescape_match(m: re.Match[str]) -> str:
    g = m.group("g2") or m.group("gb")
    if g is not None:
        return _GLYPHS.get(g, "")
    s = m.group("s2") or m.group("sb") or m.group("s1")
    if s is not None:
        return _STRINGS.get(s, "")
    lit = m.group("lit")
    if lit is not None:
        return {"e": "\\", "-": "-"}.get(lit, lit)
    text = m.group(0)
    return " " if text in ("\\0", "\\~", "\\ ") else ""


def unescape(line: str) -> str:
    line = re.sub(r'\\".*$', "", line)  # comment to end of line
    return _ESCAPE.sub(_unescape_match, line)


# Requests whose arguments are running text (font macros of man(7), a few of mdoc(7)).
_TEXT_REQUESTS = {"B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB", "UR", "MT", "Em", "Sy", "Dq", "Sq", "Qq"}
# Requests that start a block of verbatim text (code, tables) and the ones that end it.
_VERBATIM_START = {"nf": "fi", "EX": "EE", "TS": "TE", "Bd": "Ed", "EQ": "EN", "de": "..", "ig": ".."}
_MDOC_WORD = re.compile(r"\b(?:[A-Z][a-z]|Ns|Fl|Ar|Op|Oo|Oc|Xr|Pa|Nm|Li|Ql|Cm|Ev|Va|Fn|Fa|Ft|Dv|Er)\b")


def _args(rest: str) -> str:
    """A request's arguments as text: quotes removed."""
    return " ".join(a.strip('"') for a in re.findall(r'"[^"]*"|\S+', rest))


def roff_paragraphs(source: str) -> Iterator[str]:
    """Paragraphs of running text of a man page in roff (man or mdoc macros)."""
    para: list[str] = []
    end_verbatim: str | None = None
    for raw in source.splitlines():
        if end_verbatim is not None:
            if raw.startswith((".", "'")) and raw[1:].strip().split(" ")[0] == end_verbatim.lstrip(".") or end_verbatim == ".." and raw.strip() == "..":
                end_verbatim = None
            continue
        if raw.startswith((".", "'")):
            body = raw[1:].strip()
            name, _, rest = body.partition(" ")
            if name in _VERBATIM_START:
                end_verbatim = _VERBATIM_START[name]
                if para:
                    yield " ".join(para)
                    para = []
                continue
            if name in _TEXT_REQUESTS:
                text = _MDOC_WORD.sub("", rest) if name[1:].islower() else rest
                para.append(unescape(_args(text)))
                continue
            if para:
                yield " ".join(para)
                para = []
            continue
        line = unescape(raw).strip()
        if not line:
            if para:
                yield " ".join(para)
                para = []
            continue
        para.append(line)
    if para:
        yield " ".join(para)


def text_paragraphs(source: str) -> Iterator[str]:
    """Paragraphs of a plain text file: runs of non-blank lines, list bullets removed."""
    para: list[str] = []
    for raw in source.splitlines():
        line = raw.strip().lstrip("*-+o ").strip() if raw.strip() else ""
        if not line:
            if para:
                yield " ".join(para)
                para = []
            continue
        para.append(line)
    if para:
        yield " ".join(para)


# ---------------------------------------------------------------- sentences

_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(]?[A-Z])")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_ENGLISH = frozenset(
    "the a an to of is are was be and or in on for with this that it by as at from not if "
    "can will may when which you your its these there their has have".split()
)
# Abbreviations after which a full stop ends no sentence.
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Mr|Dr|St|No|Fig|Sec|approx|resp)\.$", re.IGNORECASE)


def sentences(paragraph: str) -> Iterator[str]:
    paragraph = _SPACE.sub(" ", paragraph).strip()
    pending = ""
    for piece in _SPLIT.split(paragraph):
        piece = (pending + " " + piece).strip() if pending else piece
        if _ABBREV.search(piece):
            pending = piece
            continue
        pending = ""
        yield piece
    if pending:
        yield pending


def is_good(sentence: str) -> bool:
    """A sentence of English prose: 30-300 characters, starting upper-case and ending with
    a full stop, mostly letters, ASCII, with at least six words of which two are common
    English function words."""
    n = len(sentence)
    if n < 30 or n > 300 or not sentence[0].isupper() or sentence[-1] not in ".!?":
        return False
    if not sentence.isascii():
        return False
    letters = sum(c.isalpha() for c in sentence)
    if letters < 0.75 * (n - sentence.count(" ")):
        return False
    words = _WORD.findall(sentence)
    if len(words) < 6:
        return False
    common = sum(w.lower() in _ENGLISH for w in words)
    return common >= 2 and common >= 0.15 * len(words)


def _sources() -> Iterator[tuple[str, str]]:
    """(kind, path) of every English man page and gzip text document, in a fixed order."""
    for section in sorted(MAN_ROOT.glob("man*")):
        for path in sorted(section.iterdir()):
            if path.is_file() and path.suffix == ".gz":
                yield "roff", str(path)
    for path in sorted(DOC_ROOT.rglob("*.gz")):
        if path.is_file() and not path.name.endswith((".html.gz", ".pdf.gz", ".ps.gz", ".svg.gz")):
            yield "text", str(path)


def extract(out: Path) -> None:
    from tqdm import tqdm

    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, int] = {}
    order: list[str] = []
    pairs: set[tuple[int, int]] = set()
    pair_list: list[tuple[int, int]] = []
    seen_raw = 0
    files = list(_sources())
    t0 = time.perf_counter()
    for kind, path in tqdm(files, desc="extract", unit="file", mininterval=5):
        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                source = fh.read()
        except (OSError, EOFError):
            continue
        if "\x00" in source[:4096]:
            continue
        paragraphs = roff_paragraphs(source) if kind == "roff" else text_paragraphs(source)
        for paragraph in paragraphs:
            prev = -1
            for s in sentences(paragraph):
                if not is_good(s):
                    prev = -1
                    continue
                seen_raw += 1
                key = s.lower()
                i = index.get(key)
                if i is None:
                    i = index[key] = len(order)
                    order.append(s)
                if prev >= 0 and prev != i and (prev, i) not in pairs:
                    pairs.add((prev, i))
                    pair_list.append((prev, i))
                prev = i
    tmp = out / "sentences.txt.tmp"
    tmp.write_text("\n".join(order) + "\n", encoding="utf-8")
    os.replace(tmp, out / "sentences.txt")
    np.save(out / "pairs.npy", np.asarray(pair_list, dtype=np.int32).reshape(-1, 2))
    print(
        f"{len(files)} files, {seen_raw} good sentences, {len(order)} distinct, "
        f"{len(pair_list)} adjacent pairs, {time.perf_counter() - t0:.0f} s -> {out}"
    )


# ---------------------------------------------------------------- corpus order and vectors


class Corpus:
    """Texts of the corpus in its fixed order (made on demand from sentences and pairs)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        path = root / "sentences.txt"
        if not path.exists():
            raise SystemExit(f"no corpus at {root}: run `python scripts/real_corpus.py extract` first")
        self.sentences = path.read_text(encoding="utf-8").splitlines()
        rng = np.random.default_rng(SEED)
        self.perm = rng.permutation(len(self.sentences))
        pairs = np.load(root / "pairs.npy")
        self.pairs = pairs[rng.permutation(len(pairs))]

    def __len__(self) -> int:
        return len(self.sentences) + len(self.pairs)

    def text(self, i: int) -> str:
        d = len(self.sentences)
        if i < d:
            return self.sentences[self.perm[i]]
        j = i - d
        if j < len(self.pairs):
            a, b = self.pairs[j]
            return self.sentences[a] + " " + self.sentences[b]
        # Beyond the adjacent pairs: two distinct sentences drawn by a seeded hash of i.
        rng = np.random.default_rng((SEED, i))
        a, b = rng.choice(d, size=2, replace=False)
        return self.sentences[a] + " " + self.sentences[b]

    def texts(self, start: int, stop: int) -> list[str]:
        return [self.text(i) for i in range(start, stop)]


def _vector_dir(root: Path, embedder_name: str) -> Path:
    return root / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_name)


def embed(root: Path, size: int, spec: str | None, batch: int) -> None:
    from tqdm import tqdm

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from zenbrain.providers.factory import make_embedder

    corpus = Corpus(root)
    embedder = make_embedder(spec)
    if hasattr(embedder, "batch_size"):
        embedder.batch_size = batch
    vdir = _vector_dir(root, embedder.name)
    vdir.mkdir(parents=True, exist_ok=True)
    chunks = range((size + CHUNK - 1) // CHUNK)
    todo = [c for c in chunks if not (vdir / f"chunk_{c:05d}.npy").exists()]
    print(f"{len(corpus)} texts available; {len(chunks) - len(todo)}/{len(chunks)} chunks of {CHUNK} done in {vdir}")
    bar = tqdm(total=len(todo) * CHUNK, desc="embed", unit="text", mininterval=10, smoothing=0.05)
    for c in todo:
        texts = corpus.texts(c * CHUNK, (c + 1) * CHUNK)
        vecs = np.empty((len(texts), embedder.dim), dtype=np.float32)
        for s in range(0, len(texts), 1000):
            vecs[s : s + 1000] = embedder.embed(texts[s : s + 1000])
            bar.update(min(1000, len(texts) - s))
        tmp = vdir / f".chunk_{c:05d}.{os.getpid()}.npy"
        np.save(tmp, vecs)
        os.replace(tmp, vdir / f"chunk_{c:05d}.npy")
    bar.close()


def default_embedder_name() -> str:
    """The name of zenbrain's default embedder (the model itself is loaded lazily)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from zenbrain.providers.factory import make_embedder

    return make_embedder().name


def available(root: Path | None = None, embedder_name: str | None = None) -> int:
    """How many leading corpus texts have vectors."""
    vdir = _vector_dir(root or default_dir(), embedder_name or default_embedder_name())
    c = 0
    while (vdir / f"chunk_{c:05d}.npy").exists():
        c += 1
    return c * CHUNK


def load_corpus(n: int, root: Path | None = None, embedder_name: str | None = None) -> tuple[list[str], np.ndarray]:
    """The first ``n`` corpus texts and their float32 vectors (unit length)."""
    root = root or default_dir()
    embedder_name = embedder_name or default_embedder_name()
    have = available(root, embedder_name)
    if have < n:
        raise SystemExit(f"only {have} vectors embedded in {root}; run `real_corpus.py embed --size {n}`")
    corpus = Corpus(root)
    vdir = _vector_dir(root, embedder_name)
    vecs = np.concatenate([np.load(vdir / f"chunk_{c:05d}.npy") for c in range((n + CHUNK - 1) // CHUNK)])[:n]
    return corpus.texts(0, n), vecs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=default_dir(), help="work directory (default %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("extract", help="extract distinct English sentences")
    e = sub.add_parser("embed", help="embed the first SIZE corpus texts (resumable)")
    e.add_argument("--size", type=int, default=1_000_000)
    e.add_argument("--embedder", default=None, help="embedder spec (default: zenbrain's default)")
    e.add_argument("--batch", type=int, default=64)
    sub.add_parser("info", help="print corpus counts and embedded vectors")
    s = sub.add_parser("sample", help="print a few random texts")
    s.add_argument("-n", type=int, default=20)
    args = ap.parse_args()
    if args.cmd == "extract":
        extract(args.dir)
    elif args.cmd == "embed":
        embed(args.dir, args.size, args.embedder, args.batch)
    elif args.cmd == "info":
        corpus = Corpus(args.dir)
        print(f"{len(corpus.sentences)} distinct sentences, {len(corpus.pairs)} adjacent pairs, {len(corpus)} texts")
        for d in sorted(p for p in args.dir.iterdir() if p.is_dir()):
            c = 0
            while (d / f"chunk_{c:05d}.npy").exists():
                c += 1
            print(f"{d.name}: {c * CHUNK} vectors")
    else:
        corpus = Corpus(args.dir)
        rng = np.random.default_rng()
        for i in rng.integers(0, len(corpus), args.n):
            print(f"[{i}] {corpus.text(int(i))}")


if __name__ == "__main__":
    main()
