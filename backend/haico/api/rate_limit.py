"""Requests per second per caller, enforced before the app runs (a token bucket).

The caller is its bearer token (hashed; never kept in clear), or its address when it
sends none (the embedded default). Buckets live in this process: with N workers or
replicas a caller can reach N times the rate, as docs/operations.md says. `/api/health`
and the studio's static files are not limited. Over the limit → 429 with `Retry-After`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from haico.api.limits import ASGIApp, Receive, Scope, Send

EXEMPT = frozenset({"/api/health"})
# Idle buckets are forgotten once this many callers are tracked.
MAX_TRACKED = 10_000


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimitMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        per_second: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.rate = per_second
        self.burst = max(1.0, float(burst))
        self.clock = clock
        self.buckets: dict[str, _Bucket] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if (
            self.rate <= 0
            or scope["type"] != "http"
            or not path.startswith("/api/")
            or path in EXEMPT
        ):
            await self.app(scope, receive, send)
            return
        wait = self._take(_caller(scope))
        if wait > 0:
            await _reject(send, wait, self.rate)
            return
        await self.app(scope, receive, send)

    def _take(self, caller: str) -> float:
        """Spend one request; 0 when allowed, else the seconds until one is."""
        now = self.clock()
        bucket = self.buckets.get(caller)
        if bucket is None:
            if len(self.buckets) >= MAX_TRACKED:
                self._forget_idle(now)
            bucket = self.buckets[caller] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        refill = self.burst / self.rate
        for caller, bucket in list(self.buckets.items()):
            if now - bucket.stamp >= refill:
                del self.buckets[caller]
        if len(self.buckets) >= MAX_TRACKED:  # all busy: start over rather than grow
            self.buckets.clear()


def _caller(scope: Scope) -> str:
    for name, value in scope.get("headers") or []:
        if name == b"authorization" and value:
            return "t:" + hashlib.sha256(value).hexdigest()
    client = scope.get("client")
    return "a:" + (str(client[0]) if client else "?")


async def _reject(send: Send, wait: float, rate: float) -> None:
    retry_after = max(1, math.ceil(wait))
    payload = json.dumps(
        {
            "code": "rate_limited",
            "message": f"too many requests (at most {rate:g} per second); "
            f"retry after {retry_after} s",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"retry-after", str(retry_after).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
