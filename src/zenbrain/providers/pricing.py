"""What a chat call cost, from its token usage and a price table you supply.

zenbrain ships no prices: they change, differ by provider and contract, and a wrong
built-in figure would be worse than none. Give them as configuration::

    prices = PriceTable({"gpt-4o-mini": {"input": 0.15, "output": 0.60}})   # USD per million tokens
    prices = PriceTable.from_file("prices.json")                            # the same mapping as JSON
    prices = PriceTable.from_env()                                          # the file named by $ZENBRAIN_PRICES

A model is looked up by its exact name, then without a ``provider:`` prefix
(``"openai:gpt-4o-mini"`` finds ``"gpt-4o-mini"``). An unknown model has no cost (None),
never a guessed one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import TokenUsage

PRICES_ENV = "ZENBRAIN_PRICES"

__all__ = ["PRICES_ENV", "Price", "PriceTable"]


@dataclass(frozen=True)
class Price:
    """US dollars per million prompt (input) and completion (output) tokens."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"price {name} must be a finite number >= 0 (USD per million tokens), got {v!r}")

    def cost(self, usage: TokenUsage) -> float:
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1e6


class PriceTable:
    """Model name -> :class:`Price`."""

    def __init__(self, prices: Mapping[str, Price | Mapping[str, float]] | None = None) -> None:
        self._prices: dict[str, Price] = {}
        for model, p in (prices or {}).items():
            if not isinstance(model, str) or not model:
                raise ConfigError(f"a price table's keys are model names, got {model!r}")
            if isinstance(p, Price):
                self._prices[model] = p
            elif isinstance(p, Mapping) and set(p) == {"input", "output"}:
                self._prices[model] = Price(p["input"], p["output"])
            else:
                raise ConfigError(f"price of {model!r} must be {{'input': x, 'output': y}} (USD per million tokens)")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> PriceTable:
        try:
            raw: Any = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the price table {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"the price table {path} must be a JSON object of model -> prices")
        return cls(raw)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PriceTable:
        """The table in the file named by ``$ZENBRAIN_PRICES``; empty when it is unset."""
        path = (os.environ if env is None else env).get(PRICES_ENV)
        return cls.from_file(path) if path else cls()

    def price(self, model: str) -> Price | None:
        if model in self._prices:
            return self._prices[model]
        if ":" in model:
            return self._prices.get(model.split(":", 1)[1])
        return None

    def cost(self, model: str, usage: TokenUsage) -> float | None:
        """USD for ``usage`` on ``model``, or None when the table has no price for it."""
        p = self.price(model)
        return None if p is None else p.cost(usage)

    def __len__(self) -> int:
        return len(self._prices)
