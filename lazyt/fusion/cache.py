"""The plan cache: plans by stream key, LRU-bounded, with hit/miss counters."""
from __future__ import annotations

from collections import OrderedDict

DEFAULT_SIZE = 512
#: Bound on the ops held by all cached keys together (long streams have long keys).
DEFAULT_TOTAL_OPS = 1 << 18


class PlanCache:
    """Maps a stream key (see `OperationStream.key`) to its `Plan`."""

    __slots__ = ("maxsize", "max_total_ops", "hits", "misses", "_plans", "_total_ops")

    def __init__(self, maxsize: int = DEFAULT_SIZE, max_total_ops: int = DEFAULT_TOTAL_OPS):
        self.maxsize = maxsize
        self.max_total_ops = max_total_ops
        self.hits = 0
        self.misses = 0
        self._plans: OrderedDict = OrderedDict()
        self._total_ops = 0

    def get(self, key):
        plan = self._plans.get(key)
        if plan is None:
            self.misses += 1
            return None
        self.hits += 1
        self._plans.move_to_end(key)
        return plan

    def put(self, key, plan) -> None:
        """Store a plan; `key[0]` is the per-op part of the key (its length counts)."""
        if key in self._plans:
            return
        self._plans[key] = plan
        self._total_ops += len(key[0])
        while len(self._plans) > 1 and (len(self._plans) > self.maxsize
                                        or self._total_ops > self.max_total_ops):
            old, _ = self._plans.popitem(last=False)
            self._total_ops -= len(old[0])

    def clear(self) -> None:
        self._plans.clear()
        self._total_ops = 0

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        return f"PlanCache({len(self)}/{self.maxsize} plans, {self.hits} hits, " \
               f"{self.misses} misses)"
