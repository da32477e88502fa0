"""Offline lifecycle of memory: decay, consolidation and sleep."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .results import Report

if TYPE_CHECKING:
    from .coordinator import MemoryCoordinator
    from .model import Scope


def run_decay(coord: "MemoryCoordinator", scope: "Scope") -> Report:
    return Report("decay", coord.clock.now())


def run_consolidate(coord: "MemoryCoordinator", scope: "Scope") -> Report:
    return Report("consolidate", coord.clock.now())


def run_sleep(coord: "MemoryCoordinator", scope: "Scope") -> Report:
    report = Report("sleep", coord.clock.now())
    report.stages["consolidate"] = run_consolidate(coord, scope).stages
    report.stages["decay"] = run_decay(coord, scope).stages
    return report
