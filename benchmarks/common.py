"""Shared timing and reporting for the benchmark scripts.

Every script prints one JSON line per measurement with the same keys, so `run_all.py` can put
them into one table: `bench`, `name`, `device`, `lazyt_ms`, `reference` (what lazyt is compared
with), `reference_ms`, `ratio` (lazyt time / reference time: below 1 is faster), and `goal`
(the project's bound on the ratio, when there is one), plus free-form extra fields.
"""
from __future__ import annotations

import json
import statistics
import time
from typing import Callable


def median_ms(fn: Callable[[], object], *, warmup: int = 3, runs: int = 9) -> float:
    """Median wall time of `fn()` in milliseconds after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def interleaved_ms(fns: dict, *, warmup: int = 3, runs: int = 9) -> dict:
    """Medians (ms) of several functions timed in turn, so background load hits all alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            samples[k].append((time.perf_counter() - t) * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def emit(bench: str, name: str, device: str, lazyt_ms: float, reference: str | None,
         reference_ms: float | None, goal: float | None = None, **extra) -> dict:
    """Print one measurement as a JSON line and return it."""
    row = {"bench": bench, "name": name, "device": device, "lazyt_ms": round(lazyt_ms, 4),
           "reference": reference,
           "reference_ms": None if reference_ms is None else round(reference_ms, 4),
           "ratio": None if not reference_ms else round(lazyt_ms / reference_ms, 4),
           "goal": goal, **extra}
    print(json.dumps(row), flush=True)
    return row


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch
