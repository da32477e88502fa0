"""Benchmark data for the commands: LoCoMo conversations and LongMemEval items chosen by
options, with every problem (missing file, bad JSON, unknown id) a one-line ConfigError."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli_support import split_list
from ..errors import ConfigError

__all__ = ["load_conversations", "load_items"]


def load_conversations(data: str | None, which: str | Sequence[str] = "all") -> list[Any]:  # -> list[LocomoConversation]
    """LoCoMo conversations from a file or folder: ``"all"``, ``"N"`` (the first N) or sample ids."""
    from .locomo import LOCOMO_FILES, load_locomo, resolve_data_file

    try:
        if data is not None and Path(data).expanduser().is_dir():
            file = resolve_data_file(None, LOCOMO_FILES, data_dir=data)
        else:
            file = resolve_data_file(data, LOCOMO_FILES)
        if not file.exists():
            raise FileNotFoundError(f"LoCoMo file {file} does not exist")
        convs = load_locomo(file)
    except FileNotFoundError as exc:
        raise ConfigError(f"LoCoMo data not found: {exc}") from None
    except (ValueError, OSError) as exc:  # bad JSON, unreadable file
        raise ConfigError(f"cannot read LoCoMo data: {exc}") from None
    if not convs:
        raise ConfigError("the LoCoMo file holds no conversations")
    if isinstance(which, str):
        if which == "all":
            return convs
        if which.isdigit():
            n = int(which)
            if n < 1:
                raise ConfigError("--conversations must be at least 1")
            return convs[:n]
        which = split_list(which)
    by_id = {c.sample_id: c for c in convs}
    unknown = [w for w in which if w not in by_id]
    if unknown:
        raise ConfigError(f"unknown conversation(s) {', '.join(unknown)}; the data holds {', '.join(by_id)}")
    return [by_id[w] for w in which]


def load_items(args: argparse.Namespace, *, include_abstention: bool = True) -> list[Any]:  # -> list[LongMemEvalItem]
    """LongMemEval items from ``--data`` (file or folder), filtered by ``--question-types`` and ``--limit``."""
    from .longmemeval import load_longmemeval

    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1")
    types = split_list(args.question_types) or None
    data = args.data
    try:
        if data is not None and Path(data).expanduser().is_dir():
            items = load_longmemeval(None, data_dir=data, question_types=types, limit=args.limit,
                                     include_abstention=include_abstention, user_only=args.user_only)
        else:
            if data is not None and not Path(data).expanduser().exists():
                raise FileNotFoundError(f"LongMemEval file {data} does not exist")
            items = load_longmemeval(data, question_types=types, limit=args.limit,
                                     include_abstention=include_abstention, user_only=args.user_only)
    except FileNotFoundError as exc:
        raise ConfigError(f"LongMemEval data not found: {exc}") from None
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot read LongMemEval data: {exc}") from None
    if not items:
        raise ConfigError("no LongMemEval questions to run (check --data, --question-types and --limit)")
    return items
