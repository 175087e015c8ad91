"""Settings: the only place that reads the environment."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from haico.domain import Limits


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HAICO_", env_file=".env", extra="ignore")

    database_url: str | None = None
    data_dir: Path = Path("./data")
    auth: Literal["none", "token"] = "none"
    llm: Literal["offline", "openai", "anthropic"] = "offline"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str | None = None
    history_retains_branches: bool = True
    graph_node_cap: int = Field(default=500, ge=1)
    secret_key: str | None = None
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_import_bytes: int = Field(default=100 * 1024 * 1024, ge=1024)
    # REST requests per second per caller (bearer token, or address without one), with
    # bursts up to `rate_limit_burst`; per process; 0 (the single-user default) turns
    # the limit off. The deployment template (.env.example) turns it on.
    rate_limit_per_second: float = Field(default=0.0, ge=0)
    rate_limit_burst: int = Field(default=60, ge=1)
    # What one thread may hold: preferences (and todos) each, document characters, and
    # characters in one user message. Above them a write answers 422 (REST) or fails
    # the agent's tool call; the defaults equal the request schemas' own caps.
    max_items: int = Field(default=1000, ge=1)
    max_document_chars: int = Field(default=900_000, ge=1)
    max_message_chars: int = Field(default=100_000, ge=1)
    # The allocator `haico serve` runs on (`haico.process.allocator`): jemalloc if installed
    # (`auto`), jemalloc or refuse to start (`jemalloc`), or CPython's own (`system`).
    allocator: Literal["auto", "jemalloc", "system"] = "auto"
    # How long `haico serve` keeps an idle HTTP connection open for the client's next
    # request. Longer than the clients' and the proxy's own idle limits (httpx keeps a
    # connection 5 s, Caddy's upstream pool 60 s in deploy/Caddyfile): when the server
    # closes first, a request sent at that moment meets a closed socket (a ReadError,
    # or a 502 from the proxy). uvicorn's own default is 5 s.
    keep_alive_seconds: int = Field(default=75, ge=1)
    # PostgreSQL connections per process for the app's SQL: kept open, and opened
    # beyond that for a burst. N workers use up to N * (size + overflow), plus a few
    # each for the checkpointer and the event listener: keep it under the server's
    # `max_connections` (100 by default).
    db_pool_size: int = Field(default=20, ge=1)
    db_pool_overflow: int = Field(default=10, ge=0)
    # A turn whose heartbeat is older than this is considered abandoned.
    turn_stale_seconds: float = Field(default=30.0, gt=0)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    # Branches left `pending` longer than this are reclaimed by the janitor.
    pending_max_age_seconds: float = Field(default=600.0, ge=0)
    janitor_interval_seconds: float = Field(default=300.0, gt=0)
    event_log_window_days: float = Field(default=7.0, gt=0)
    # Retention on branch-retaining hosts (off by default): branches off the selected
    # path older than this, or beyond this many per family (newest kept), are pruned.
    retention_max_age_days: float | None = Field(default=None, gt=0)
    retention_max_branches: int | None = Field(default=None, ge=0)
    local_user_name: str = "local"
    # Branch summaries (big trees): written off the turn's path, this long after a
    # branch last grew (growth meanwhile is folded in); with a real provider by this
    # model (default: `llm_model`), at most one call per branch per this many turns.
    summary_model: str | None = None
    # Replay jobs: how many may be queued or running per user at once (more: 429), and
    # the longest path one replay re-sends.
    replay_jobs_per_user: int = Field(default=2, ge=1)
    replay_max_steps: int = Field(default=200, ge=1)
    summary_debounce_seconds: float = Field(default=2.0, ge=0)
    summary_every_turns: int = Field(default=3, ge=1)
    # Pruning suggestions: a branch untouched this long is "idle".
    suggest_idle_days: float = Field(default=14.0, gt=0)
    # The model's context window: the current turn, and before it the most recent
    # whole turns that fit both limits; at most this many earlier turns ...
    context_turns: int = Field(default=10, ge=0)
    # ... and at most this many tokens for the whole window, *estimated* as
    # characters / 4 (the system prompt, i.e. the workspace, is not counted).
    context_tokens: int = Field(default=8000, ge=0)
    # How often the event pump polls the action log; 0 turns polling off, so only
    # LISTEN/NOTIFY (PostgreSQL) or a commit in this process wakes it.
    event_poll_seconds: float = Field(default=1.0, ge=0)
    # Move everything alive after start-up (the imported libraries, the app) out of the
    # garbage collector's reach (`gc.freeze`): a full collection over those ~200,000
    # objects stalls the event loop for 50-80 ms, which every open stream would feel.
    gc_freeze: bool = True
    # The collector's thresholds while serving (`gc.set_threshold`), set with the freeze.
    # CPython's (700, 10, 10) made a full collection every 2 s with 64 replies streaming,
    # each over the ~130,000 objects of the running turns (100 ms, felt by every open
    # stream as a pause); with (50000, 20, 10) none happened in such a run, and the p99
    # gap between streamed tokens fell from ~125 ms to ~80 ms (docs/BENCHMARKS.md).
    gc_thresholds: tuple[int, int, int] = (50_000, 20, 10)
    # Log the process's memory every this many seconds (logger `haico.memory`): RSS,
    # and jemalloc's own counters when it is the allocator; 0 (the default) logs none.
    memory_report_seconds: float = Field(default=0.0, ge=0)
    # The AHP host (`/ahp`): the largest text frame accepted (a bigger one closes the
    # connection with 1009), subscriptions per connection, requests per second per
    # connection (a short burst of twice that is allowed; per process), messages and
    # bytes queued for one connection before it counts as a slow consumer and is
    # closed (4008), turns in a chat snapshot and in one `fetchTurns` page.
    ahp_max_frame_bytes: int = Field(default=1024 * 1024, ge=1024)
    ahp_max_subscriptions: int = Field(default=256, ge=1)
    ahp_requests_per_second: float = Field(default=50.0, gt=0)
    ahp_queue_size: int = Field(default=2000, ge=16)
    ahp_queue_bytes: int = Field(default=8 * 1024 * 1024, ge=64 * 1024)
    # Actions waiting for one follower of `GET …/events` (the client reads them more
    # slowly than its family changes) before its stream is ended; it reconnects with
    # `Last-Event-ID` and reads the rest from the log.
    sse_queue_size: int = Field(default=1000, ge=16)
    # Event streams (`GET …/events`) and AHP sockets one user may hold open at once in
    # this process, counted together; one more → 429 `too_many_streams`.
    max_streams_per_user: int = Field(default=32, ge=1)
    ahp_snapshot_turns: int = Field(default=50, ge=1)
    ahp_page_size: int = Field(default=50, ge=1)
    # The price table for a node's `cost_usd`: JSON `{"<model>": {"input": USD,
    # "output": USD}}`, prices per million tokens, given inline or as the path of a
    # JSON file; without it `<data dir>/prices.json` is read if present. A model not
    # in the table costs null.
    prices: str | None = None

    @property
    def is_postgres(self) -> bool:
        return self.sql_url.startswith("postgresql")

    @cached_property
    def sql_url(self) -> str:
        """SQLAlchemy async URL for the app's own tables."""
        url = self.database_url
        if not url:
            return f"sqlite+aiosqlite:///{(self.data_dir / 'haico.db').resolve()}"
        for prefix in (
            "postgresql+asyncpg://",
            "postgresql+psycopg://",
            "postgresql://",
            "postgres://",
        ):
            if url.startswith(prefix):
                return "postgresql+asyncpg://" + url[len(prefix) :]
        if url.startswith("sqlite:///"):
            return "sqlite+aiosqlite:///" + url[len("sqlite:///") :]
        return url

    @cached_property
    def checkpoint_url(self) -> str:
        """Connection string for the LangGraph checkpointer (psycopg or a SQLite path)."""
        if self.is_postgres:
            return "postgresql://" + self.sql_url.split("://", 1)[1]
        return str((self.data_dir / "checkpoints.db").resolve())

    def where_data_lives(self) -> str:
        """One line for `haico serve`: the data directory and the database (a SQLite
        file's path; a PostgreSQL URL without its password)."""
        data_dir = self.data_dir.resolve()
        if self.is_postgres:
            from sqlalchemy.engine import make_url

            database = make_url(self.sql_url).set(drivername="postgresql")
            shown = database.render_as_string(hide_password=True)
            return f"HAICO data: PostgreSQL {shown}; data directory {data_dir}"
        database_file = self.sql_url.split("///", 1)[1]
        return f"HAICO data: SQLite {database_file}; data directory {data_dir}"

    def limits(self) -> Limits:
        return Limits(
            items=self.max_items,
            document_chars=self.max_document_chars,
            message_chars=self.max_message_chars,
        )

    @cached_property
    def price_table(self) -> dict[str, dict[str, float]]:
        """Model name -> USD per million input and output tokens (see `prices`)."""
        import json

        raw = self.prices
        if raw is None:
            default = self.data_dir / "prices.json"
            raw = default.read_text() if default.is_file() else "{}"
        elif not raw.lstrip().startswith("{"):
            raw = Path(raw).read_text()
        table = json.loads(raw)
        if not isinstance(table, dict):
            raise ValueError("HAICO_PRICES: expected a JSON object of models")
        return {
            str(model): {k: float(v) for k, v in dict(price).items() if k in ("input", "output")}
            for model, price in table.items()
        }

    def signing_key(self) -> bytes:
        """`HAICO_SECRET_KEY`, or a key generated once into the data directory."""
        if self.secret_key:
            return self.secret_key.encode()
        path = self.data_dir / "secret_key"
        if not path.exists():
            import secrets

            self.data_dir.mkdir(parents=True, exist_ok=True)
            try:
                with path.open("x") as f:  # the first process to get here writes it
                    f.write(secrets.token_hex(32))
            except FileExistsError:
                pass
        return path.read_text().strip().encode()


def get_settings() -> Settings:
    return Settings()
