"""The one settings object: flags, then BLOCKREPO_* environment variables, then defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every tunable of the service. Passed explicitly to `create_app(settings)`; never read globally."""

    model_config = SettingsConfigDict(env_prefix="BLOCKREPO_", extra="ignore")

    database_url: str = Field("sqlite:///blockrepo.db", description="sqlite:///path or postgresql://…")
    admin_password: SecretStr | None = Field(
        None, description="password of `system` when it is first created (generated and printed if unset)"
    )
    demo: bool = Field(False, description="load the demo landscape into an empty repository")
    demo_password: SecretStr | None = Field(
        None, description="password of the demo users anna and bernd (generated and printed if unset)"
    )
    csrf_enabled: bool = Field(True, description="CSRF cookie-to-header protection")
    session_idle_timeout: int = Field(300, ge=1, description="seconds a session may stay idle")
    session_max_age: int = Field(43200, ge=1, description="absolute session lifetime in seconds")
    session_touch_interval: int = Field(
        5, ge=0, description="seconds between writes of a session's last-seen time stamp"
    )
    cookie_secure: bool = Field(False, description="add Secure to cookies (set it behind TLS)")
    login_max_failures: int = Field(
        10, ge=1, description="failed logins for one account from one address before that pair gets 429"
    )
    login_max_failures_per_address: int = Field(
        100, ge=1, description="failed logins from one address, any accounts, before the address gets 429"
    )
    login_window: int = Field(300, ge=1, description="seconds over which failed logins are counted")
    rate_limit: float = Field(0, ge=0, description="requests per second per user (0: off)")
    max_body_bytes: int = Field(10 * 1024 * 1024, ge=1024, description="request body limit (import: 20x)")
    redis_url: str | None = Field(None, description="optional shared store for sessions and rate limits")
    redis_key_prefix: str = Field(
        "blockrepo:", description="prefix of every Redis key (lets several repositories share one Redis)"
    )
    page_size: int = Field(100, ge=1, description="default page size of list endpoints")
    max_page_size: int = Field(1000, ge=1, description="largest page size a client may ask for")
    bulk_max_elements: int = Field(10000, ge=1, description="elements one bulk request may carry")
    query_max_length: int = Field(10_000, ge=1, description="characters an iteraQL query or filter may have")
    query_max_steps: int = Field(
        12, ge=1, description="steps of an iteraQL query: its type and each navigation `/end`"
    )
    query_max_nesting: int = Field(
        16, ge=1, description="iteraQL nesting: open parentheses and brackets plus consecutive `!`"
    )
    query_max_operators: int = Field(128, ge=1, description="`&`, `|` and `!` in one iteraQL query or filter")
    query_max_string_length: int = Field(2_000, ge=1, description="characters of one iteraQL string literal")
    query_max_number_length: int = Field(
        40, ge=1, description="characters of one iteraQL number, date or date-time literal"
    )
    credential_cache_size: int = Field(1024, ge=0, description="recently verified Basic credentials kept")
    credential_cache_ttl: int = Field(60, ge=0, description="seconds a verified Basic credential is trusted")
    argon2_time_cost: int = Field(3, ge=1, description="Argon2id iterations")
    argon2_memory_cost: int = Field(65536, ge=8, description="Argon2id memory in KiB")
    argon2_parallelism: int = Field(4, ge=1, description="Argon2id lanes")
    db_pool_size: int = Field(10, ge=1, description="connections kept per process (as many more on demand)")
    lanes: bool = Field(
        True,
        description="answer element GET, PUT and PATCH by id on the fast lanes (api/lanes/), as the routes "
        "would; off: every request takes the routed FastAPI path",
    )
    loop_reads: bool = Field(
        True,
        description="short reads of the database and Redis (a session, cached credentials, the read lane's "
        "statement) run on the event loop, sparing a hop to a worker thread; off: in worker threads only, "
        "and the read lane passes every GET to the routes (for a database or Redis across a slow network)",
    )
    interpreter_tuning: bool = Field(
        True,
        description="the process-wide interpreter switches of interpreter.py (GC freeze and threshold, "
        "collector pauses of bulk writes, a shorter GIL switch interval while a write pipeline runs)",
    )
    log_level: str = Field("info", description="log level")
    log_format: Literal["text", "json"] = Field(
        "text", description="log lines as text or one JSON object each (time, level, logger, request id)"
    )
    access_log: bool = Field(
        True,
        description="one log line per request: method, path, status, duration, user, route template and "
        "request id (logger blockrepo.access)",
    )
    metrics: Literal["off", "local", "public"] = Field(
        "local",
        description="who may read the Prometheus metrics at /metrics: nobody (off), clients on a loopback "
        "address or holding metrics_token (local), or anyone (public)",
    )
    metrics_token: SecretStr | None = Field(
        None, description="a secret that lets a scraper read /metrics from anywhere (Authorization: Bearer)"
    )
    body_read_timeout: int = Field(
        30,
        ge=1,
        description="seconds a request body may pause before the request gets 408 (connection closed)",
    )
    header_read_timeout: int = Field(
        10, ge=1, description="seconds a client has to send a request's line and headers before it is closed"
    )
    stream_heartbeat: float = Field(
        15,
        gt=0,
        le=300,
        description="seconds without a change after which GET /api/history/stream sends a comment line, "
        "so that proxies keep the stream open",
    )
    shutdown_timeout: int = Field(
        10,
        ge=1,
        description="seconds a stopping server gives requests in flight to finish; open change streams "
        "(GET /api/history/stream) end then, and their clients reconnect to another instance",
    )
    trusted_proxies: str = Field(
        "",
        description="comma-separated addresses/CIDRs of proxies whose X-Forwarded-For/-Proto are believed "
        "(empty: none)",
    )
    # An uploaded xlsx is checked against these before openpyxl reads it (massdata/transfer/xlsx_limits.py).
    import_xlsx_max_unzipped_bytes: int = Field(
        1 << 30, ge=1024, description="bytes an imported xlsx may unzip to, all its parts together"
    )
    import_xlsx_max_compression_ratio: int = Field(
        100, ge=1, description="how many times its compressed size one part of an imported xlsx may unzip to"
    )
    import_xlsx_max_sheets: int = Field(1_000, ge=1, description="sheets an imported xlsx may have")
    import_xlsx_max_rows: int = Field(
        1_048_576, ge=1, description="last row a sheet of an imported xlsx may reach"
    )
    import_xlsx_max_columns: int = Field(
        1_024, ge=1, description="last column a sheet of an imported xlsx may reach"
    )
    import_xlsx_max_cells: int = Field(
        50_000_000,
        ge=1,
        description="cells the sheets of an imported xlsx may span (last row times last column)",
    )
    import_xlsx_max_shared_strings: int = Field(
        1_000_000, ge=1, description="shared strings an imported xlsx may hold"
    )
    import_archimate_max_concepts: int = Field(
        1_000_000, ge=1, description="elements and relationships an imported ArchiMate model may hold"
    )
    archimate_mapping: str | None = Field(
        None,
        description="a JSON file of entries that replace or extend the default mapping between building "
        "block types and ArchiMate (docs/guide/archimate.md)",
    )
    token_peppers: SecretStr | None = Field(
        None,
        description="comma-separated secrets API tokens are hashed under, the first current, the others "
        "still accepted (rotation); unset: derived from the database's server secret",
    )
    token_max_days: int = Field(366, ge=1, le=3660, description="the longest lifetime an API token may have")
    protected_main: bool = Field(
        False,
        description="main changes only by merging reviewed planning scenarios (a supervisor may still "
        "write to main directly: the break-glass)",
    )
    scenario_self_approval: bool = Field(
        False, description="the owner of a planning scenario may approve it as one of its reviewers"
    )
    webhook_delivery: bool = Field(
        True,
        description="run the webhook delivery worker in this process (several may run: a lease per webhook)",
    )
    webhook_poll: float = Field(
        0.5,
        gt=0,
        le=60,
        description="seconds between a delivery worker's looks for webhooks with changes to send",
    )
    webhook_allowed_networks: str = Field(
        "",
        description="comma-separated CIDRs webhooks may deliver to beyond public addresses (empty: loopback, "
        "private, link-local and other internal addresses are refused)",
    )
    webhook_public_targets: bool = Field(
        True,
        description="whether webhooks may deliver to public addresses (false: only to "
        "webhook_allowed_networks, for a server whose receivers are all inside)",
    )
    webhook_timeout: float = Field(10, gt=0, le=300, description="seconds a webhook receiver has to answer")
    webhook_lease: float = Field(
        30,
        gt=0,
        le=3600,
        description="seconds a delivery worker holds a webhook; another instance takes it over after this "
        "when the worker dies",
    )
    webhook_disable_after: int = Field(
        3 * 86400, ge=60, description="seconds of failing deliveries after which a webhook is disabled"
    )
    password_hash_concurrency: int = Field(
        0,
        ge=0,
        description="password hashes (Argon2id) one worker process computes at once; past them a password "
        "check gets 503 with Retry-After (0: the CPU cores divided among the worker processes, at least 1)",
    )

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
