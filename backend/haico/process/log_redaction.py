"""No credential reaches a log line.

A client that cannot set a header (a browser's WebSocket, a link) may pass its token
in the query string (`/ahp?token=hk_…`), and uvicorn logs every request's path with
its query. `RedactCredentials`, a filter on every handler `log_config` sets up,
replaces the value of a credential-like query parameter with `***`, and any API
token (`hk_…`) found elsewhere in a line. A parameter's name is compared once
percent-decoded, as the server reads it (`?sh%61re=` is `?share=`). Arguments are
redacted one by one (uvicorn's access formatter needs them as arguments); a message
that still holds a credential once formatted is stored formatted and redacted.

A record with a traceback (a request that ended in a 500, uvicorn's "Exception in
ASGI application") keeps the traceback's frames and exception types but not the
exceptions' messages, nor any frame's locals: a message can quote the request
(a document, a token, a validation error's input, a statement's parameters).
"""

from __future__ import annotations

import copy
import logging
import re
import traceback
from typing import Any
from urllib.parse import unquote_plus

REDACTED = "***"
# The query parameters that carry a credential (names compared lower-cased, decoded).
CREDENTIAL_NAMES = frozenset(
    {"token", "share", "join", "access_token", "api_key", "apikey", "key", "password", "secret"}
)
# A query parameter (its name as sent, maybe percent-encoded) and its value (up to the
# next `&`, space or quote).
_QUERY_PARAM = re.compile(r"(?P<name>[?&](?P<key>[^=&\s\"'#?]{1,64})=)[^&\s\"'#]*")
# An API token (`users.new_token`) or a share link's token (`sh_…`) wherever it appears,
# its underscore maybe percent-encoded.
_TOKEN = re.compile(r"\b(?:hk|sh)(?:_|%5[fF])[A-Za-z0-9_%-]{8,}")
WITHHELD = "(message withheld: it may quote the request)"
_CAUSE = "The above exception was the direct cause of the following exception:"
_CONTEXT = "During handling of the above exception, another exception occurred:"
# The format HAICO's own loggers (and every other library's) write in.
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def _query_value(m: re.Match[str]) -> str:
    if unquote_plus(m["key"]).lower() in CREDENTIAL_NAMES:
        return m["name"] + REDACTED
    return m[0]


def redact(text: str) -> str:
    """`text` with credential values in query strings and API tokens replaced."""
    text = _QUERY_PARAM.sub(_query_value, text)
    return _TOKEN.sub(REDACTED, text)


def safe_traceback(exc: BaseException) -> str:
    """The traceback of `exc` and the exceptions it followed: frames and exception
    types only (Python's own layout, oldest first)."""
    chain: list[tuple[BaseException, str]] = []
    current: BaseException | None = exc
    link = ""
    while current is not None and all(current is not e for e, _ in chain):
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, _CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, _CONTEXT
        else:
            current = None
    lines: list[str] = []
    # chain[i]'s link says how chain[i - 1] followed it.
    for i in range(len(chain) - 1, -1, -1):
        error = chain[i][0]
        lines.append("Traceback (most recent call last):")
        frames = traceback.extract_tb(error.__traceback__)  # captures no locals
        lines.extend(line.rstrip("\n") for line in traceback.format_list(frames))
        kind = type(error)
        lines.append(f"{kind.__module__}.{kind.__qualname__}: {WITHHELD}")
        if i:
            lines.append(f"\n{chain[i][1]}\n")
    return "\n".join(lines)


def _redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactCredentials(logging.Filter):
    """Redacts a record's arguments, then its message if that still needs it (the
    message is then stored formatted); drops no record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = safe_traceback(record.exc_info[1])
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
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
