"""How many long-lived streams each user holds open in this process: follows of a
family's events (`GET …/events`) and AHP sockets, counted together.

One user may hold `HAICO_MAX_STREAMS_PER_USER` at once; one more is refused with 429
`too_many_streams` (an AHP handshake is refused with a 429 response) before anything
is opened, and other users are unaffected. A stream gives its slot back when it ends,
however it ends. The count is per process: N workers allow N times as many.
"""

from __future__ import annotations

from collections import Counter

from haico.errors import TooManyStreams

DEFAULT_PER_USER = 32


class StreamSlots:
    def __init__(self, per_user: int = DEFAULT_PER_USER) -> None:
        self.per_user = per_user
        self._open: Counter[int] = Counter()

    def take(self, user_id: int) -> None:
        """Count one more open stream of `user_id`, or refuse it (nothing counted)."""
        if self._open[user_id] >= self.per_user:
            raise TooManyStreams(
                f"too many open streams: at most {self.per_user} event streams and AHP "
                "connections per user; close one and try again"
            )
        self._open[user_id] += 1

    def give_back(self, user_id: int) -> None:
        self._open[user_id] -= 1
        if self._open[user_id] <= 0:
            del self._open[user_id]
