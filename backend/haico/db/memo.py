"""A small in-process memo for rows that never change once written.

A stored document body is addressed by its text's hash, so its text is the same
wherever and whenever it is read (`repositories.workspace.get_body`). Reads of such
rows are served from here after the first, which spares a round trip. A memo is
bounded by the total weight of what it holds (characters), the least recently used
going first. Not shared between processes: every worker fills its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._weight = 0

    def get(self, key: Hashable) -> V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: Hashable, value: V, weight: int) -> None:
        """Keep `value` unless it alone outweighs the memo."""
        if weight > self.max_weight:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._weight -= old[1]
        self._entries[key] = (value, weight)
        self._weight += weight
        while self._weight > self.max_weight:
            _, (_, w) = self._entries.popitem(last=False)
            self._weight -= w

    def clear(self) -> None:
        self._entries.clear()
        self._weight = 0

    def __len__(self) -> int:
        return len(self._entries)
