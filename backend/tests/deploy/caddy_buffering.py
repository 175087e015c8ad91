"""The one line of deploy/Caddyfile that differs between Caddy versions: how request
bodies are kept for a retry (HAICO_PROXY_BUFFERING). Caddy 2.6.0 to 2.6.3 (Debian 12's
package) know only `buffer_requests`; 2.6.4 and later know `request_buffers`, and 2.8
and later only that."""

from __future__ import annotations

import re

CURRENT = "request_buffers 1MB"
OLD = "buffer_requests"


def buffering_for(version_output: str) -> str:
    """The HAICO_PROXY_BUFFERING value for the Caddy whose `caddy version` printed
    `version_output` (e.g. `2.6.2` or `v2.10.2 h1:...`)."""
    m = re.search(r"v?(\d+)\.(\d+)\.(\d+)", version_output)
    assert m, f"not a Caddy version: {version_output!r}"
    major, minor, patch = (int(g) for g in m.groups())
    return OLD if (major, minor) == (2, 6) and patch < 4 else CURRENT
