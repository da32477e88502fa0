"""Building blocks shared by the ``zenbrain`` command line and the command plugins.

The CLI (``zenbrain.cli``) and the plugins it discovers (the benchmark and experiment
commands) build their parsers and resolve their options with these, so that every
command accepts the same global and scope options and reports errors the same way.
This module imports nothing of the CLI and nothing heavy at import time: the library
modules it needs are imported inside the functions that use them, when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import ConfigError, ZenBrainError

if TYPE_CHECKING:
    from .api import MemoryCoordinator
    from .config import Config
    from .model import Scope

__all__ = [
    "CACHE_ENV",
    "CACHE_FILE",
    "DEFAULT_EMBEDDER_SPEC",
    "EMBEDDER_ENV",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PATH_ENV",
    "USER_ENV",
    "Parser",
    "add_global_options",
    "add_scope_options",
    "bounded_int",
    "cache_dir",
    "command",
    "embedder_spec",
    "iso",
    "make_config",
    "make_scope",
    "merge_globals",
    "off_names",
    "one_line",
    "open_store",
    "parse_ints",
    "print_json",
    "require_extra",
    "spec_for_name",
    "split_list",
    "status",
    "store_embedder_name",
    "store_exists",
    "store_path",
]

DEFAULT_EMBEDDER_SPEC = "minilm-onnx"  # chosen by measurement: see the README
EMBEDDER_ENV = "ZENBRAIN_EMBEDDER"
PATH_ENV = "ZENBRAIN_PATH"
USER_ENV = "ZENBRAIN_USER"
CACHE_ENV = "ZENBRAIN_CACHE_DIR"
CACHE_FILE = "embeddings.db"  # the on-disk embedding cache inside cache_dir()

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


# --------------------------------------------------------------------------- parsers


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi], else a one-line range error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in [{lo}, {hi}], got {text}")
        return value

    return parse


def bounded_float(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse type: a number in [lo, hi], else a one-line range error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not lo <= value <= hi:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be a number in [{lo:g}, {hi:g}], got {text}")
        return value

    return parse


def add_global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command accepts; under a command they land in ``sub_*`` (see ``merge_globals``)."""
    pre = "" if top else "sub_"
    default = None if top else argparse.SUPPRESS
    g = p.add_argument_group("global options")
    g.add_argument("--path", dest=pre + "path", metavar="P", default=default,
                   help=f"memory store: a SQLite file or a postgresql:// URL (default: ${PATH_ENV} or "
                        "~/.zenbrain/memory.db)")
    g.add_argument("--embedder", dest=pre + "embedder", metavar="SPEC", default=default,
                   help=f"embedder spec: minilm, onnx, hashing:384, openai:MODEL[@URL], ollama:MODEL "
                        f"(default: ${EMBEDDER_ENV}, else the store's own embedder, else {DEFAULT_EMBEDDER_SPEC})")
    g.add_argument("--off", dest=pre + "off", metavar="NAME[,NAME]", action="append", default=default,
                   help="switch mechanisms off by name (repeatable; see 'zenbrain mechanisms')")
    g.add_argument("--read-only", dest=pre + "read_only", action="store_true", default=default,
                   help="open the store without writing anything (recall does not touch its hits; writes are "
                        "refused)")
    g.add_argument("--verbose", "-v", dest=pre + "verbose", action="store_true", default=default,
                   help="show tracebacks of errors")


def add_scope_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scope")
    g.add_argument("--user", metavar="U", default=None, help=f"user id (default: ${USER_ENV} or 'default')")
    g.add_argument("--agent", metavar="A", default=None, help="agent id (default: 'default')")
    g.add_argument("--session", metavar="S", default=None, help="session id (default: none)")
    g.add_argument("--context", metavar="C", default=None, help="context (default: 'default')")


def command(
    subs: Any, name: str, func: Callable[[argparse.Namespace], int], help: str, *, scope: bool = True, **kw: Any
) -> argparse.ArgumentParser:
    """Add command ``name`` to ``subs`` (the result of ``add_subparsers``), run by ``func``,
    with the global options (and the scope options unless ``scope=False``)."""
    p = subs.add_parser(name, help=help, description=help, **kw)
    if scope:
        add_scope_options(p)
    add_global_options(p, top=False)
    p.set_defaults(func=func)
    return p


def merge_globals(args: argparse.Namespace) -> argparse.Namespace:
    """One value per global option, whether it came before or after the command."""
    for name in ("path", "embedder"):
        sub = getattr(args, "sub_" + name, None)
        if sub is not None:
            setattr(args, name, sub)
    args.off = list(args.off or []) + list(getattr(args, "sub_off", None) or [])
    args.verbose = bool(args.verbose or getattr(args, "sub_verbose", False))
    args.read_only = bool(getattr(args, "read_only", False) or getattr(args, "sub_read_only", False))
    return args


# --------------------------------------------------------------------------- values


def split_list(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def parse_ints(text: str | None, what: str) -> list[int]:
    """Comma-separated integers; a ConfigError naming the option ``what`` otherwise."""
    try:
        return [int(x) for x in split_list(text)]
    except ValueError:
        raise ConfigError(f"{what} must be comma-separated integers, got {text!r}") from None


def require_extra(extra: str, modules: Sequence[str], what: str) -> None:
    """A ConfigError naming zenbrain's optional extra ``extra`` when one of ``modules`` is not
    installed (checked without importing them)."""
    from importlib.util import find_spec

    missing = [m for m in modules if find_spec(m) is None]
    if missing:
        raise ConfigError(f"{what} needs zenbrain's '{extra}' extra (missing: {', '.join(missing)}): "
                          f'pip install "zenbrain[{extra}]"')


# --------------------------------------------------------------------------- resolution


def store_path(args: argparse.Namespace) -> str:
    """``--path``: a SQLite file or a PostgreSQL URL."""
    from .api import default_path
    from .storage.locations import is_postgres

    if args.path and is_postgres(args.path):
        return str(args.path)
    return os.path.expanduser(args.path) if args.path else default_path()


def off_names(args: argparse.Namespace) -> frozenset[str]:
    """The mechanism names switched off by ``--off`` (checked against the registry)."""
    from .registry import check_names

    names = [n.strip() for item in args.off for n in item.split(",") if n.strip()]
    return check_names(names)


def make_config(args: argparse.Namespace) -> Config:
    from .config import Config
    from .registry import Mechanisms

    return Config(mechanisms=Mechanisms(disabled=off_names(args)))


def spec_for_name(name: str) -> str | None:
    """The embedder spec that reproduces an embedder name recorded in a store."""
    provider, _, model = name.partition(":")
    if provider == "hashing":
        return name
    if provider == "minilm":
        return "minilm"
    if provider == "minilm-onnx-int8":
        return "minilm-onnx"
    if provider == "minilm-onnx":
        return "minilm-onnx:fp32"
    if provider == "e5-small-q4" and model:
        return f"e5:{model}"
    if provider in ("openai", "ollama") and model:
        return name
    return None


def store_embedder_name(path: str) -> str | None:
    """The embedder a store was created with (read from its meta table), or None (also for
    a file that is not a store, which is not touched)."""
    from .storage.locations import is_postgres, recorded_embedder
    from .storage.sqlite.opening import FileKind, file_uri, identify

    if is_postgres(path):
        return recorded_embedder(path)
    try:
        if identify(path).kind is not FileKind.STORE:
            return None
        conn = sqlite3.connect(file_uri(path, mode="ro"), uri=True, timeout=5.0)
    except (sqlite3.Error, ZenBrainError):
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
        return row[0] if row else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def store_exists(path: str) -> bool:
    """Whether a store was created at ``path`` (a file, or a PostgreSQL database holding one)."""
    from .storage.locations import exists

    return exists(path)


def embedder_spec(args: argparse.Namespace, store: str | None = None) -> str:
    """``--embedder``, else ``$ZENBRAIN_EMBEDDER``, else the existing store's embedder, else the default."""
    if args.embedder:
        return str(args.embedder)
    env = os.environ.get(EMBEDDER_ENV)
    if env:
        return env
    if store is not None:
        name = store_embedder_name(store)
        spec = spec_for_name(name) if name else None
        if spec:
            return spec
    return DEFAULT_EMBEDDER_SPEC


def make_scope(args: argparse.Namespace) -> Scope:
    from .model import Scope

    # An option given empty is refused by Scope (it does not fall back to "default").
    return Scope(
        user_id=args.user if args.user is not None else os.environ.get(USER_ENV) or "default",
        agent_id=args.agent if args.agent is not None else "default",
        session_id=args.session,
        context=args.context if args.context is not None else "default",
    )


def open_store(args: argparse.Namespace, *, create: bool = False, durability: str = "full") -> MemoryCoordinator:
    """The store at ``--path`` with the resolved embedder and ``--off`` mechanisms, read-only
    with ``--read-only`` (``durability``: see ``SQLiteStore``). ``create``: a command that
    writes may create a new store where the path is free; otherwise the path must hold one.
    A file that is not a store is refused either way (``open_memory``)."""
    from .api import open_memory
    from .errors import StorageError
    from .storage.locations import is_postgres

    path = store_path(args)
    read_only = bool(getattr(args, "read_only", False))
    if is_postgres(path) and not create and not store_exists(path):
        raise StorageError(f"no memory store at {path}; create one with: zenbrain init --path {path}")
    spec = embedder_spec(args, path)
    return open_memory(path, embedder=spec, config=make_config(args), durability=durability,
                       create=None if create else False, read_only=read_only)


def cache_dir() -> Path:
    """Where the embedding cache lives: ``$ZENBRAIN_CACHE_DIR``, else the user cache dir."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "zenbrain"


# --------------------------------------------------------------------------- output


def status(msg: str) -> None:
    """A progress or status line on stderr (stdout carries the results)."""
    print(msg, file=sys.stderr, flush=True)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def iso(t: float | None) -> str:
    """Seconds since the epoch as ``2023-05-08T13:56:00Z``; ``-`` for none."""
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def one_line(text: str, width: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``width`` characters with ``...``."""
    flat = " ".join(text.split())
    if width < 4 or len(flat) <= width:
        return flat
    return flat[: width - 3] + "..."
