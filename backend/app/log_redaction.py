"""No credential reaches a log line.

A client that cannot set a header (a browser's WebSocket, a link) may pass its token
in the query string (`/ahp?token=hk_…`), and uvicorn logs every request's path with
its query. `RedactCredentials`, a filter on every handler `log_config` sets up,
replaces the value of a credential-like query parameter with `***`, and any API
token (`hk_…`) found elsewhere in a line. Arguments are redacted one by one (uvicorn's
access formatter needs them as arguments); a message that still holds a credential
once formatted is stored formatted and redacted.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

REDACTED = "***"
# A query parameter that carries a credential, and its value (up to the next `&`,
# space or quote).
_QUERY_CREDENTIAL = re.compile(
    r"(?P<name>[?&](?:token|share|access_token|api_key|apikey|key|password|secret)=)[^&\s\"'#]*",
    re.IGNORECASE,
)
# An API token (`users.new_token`) or a share link's token (`sh_…`) wherever it appears.
_TOKEN = re.compile(r"\b(?:hk|sh)_[A-Za-z0-9_-]{8,}")
# The format HAICO's own loggers (and every other library's) write in.
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def redact(text: str) -> str:
    """`text` with credential values in query strings and API tokens replaced."""
    text = _QUERY_CREDENTIAL.sub(lambda m: m["name"] + REDACTED, text)
    return _TOKEN.sub(REDACTED, text)


def _redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactCredentials(logging.Filter):
    """Redacts a record's arguments, then its message if that still needs it (the
    message is then stored formatted); drops no record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redacted(v) for k, v in record.args.items()}
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record: the handler reports it as it would
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def protect_root() -> None:
    """Redact every line the root logger's handlers write (after `basicConfig`)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactCredentials) for f in handler.filters):
            handler.addFilter(RedactCredentials())


def log_config() -> dict[str, Any]:
    """The logging setup `haico serve` hands uvicorn (in each worker too): uvicorn's
    own, and the root logger writing `FORMAT` to standard error, every handler
    redacting credentials."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact": {"()": f"{__name__}.RedactCredentials"}}
    config["formatters"]["plain"] = {"format": FORMAT}
    config["handlers"]["plain"] = {
        "class": "logging.StreamHandler",
        "formatter": "plain",
        "stream": "ext://sys.stderr",
    }
    for handler in config["handlers"].values():
        handler["filters"] = ["redact"]
    config["root"] = {"handlers": ["plain"], "level": "INFO"}
    return config
