"""Builds the SQLAlchemy engine for SQLite (WAL, foreign keys, busy timeout) or PostgreSQL from one URL."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def normalize_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use the psycopg 3 driver for them."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Autocommit off at the driver level, transactions begun by SQLAlchemy's "BEGIN" below, so that
    # SQLite takes the write lock at BEGIN IMMEDIATE time instead of failing mid-transaction.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA cache_size=-65536")
    cursor.close()


def _begin_sqlite(conn: Any) -> None:
    immediate = conn.get_execution_options().get("begin_immediate", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def build_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Create an engine; nothing connects until the first use."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        # A file database: SQLAlchemy's default pool keeps 5 connections and closes every one beyond them
        # on return, so under load each request opened a connection, ran the PRAGMAs and started with a
        # cold page cache. (An in-memory database has one connection per thread and takes no pool size.)
        in_memory = make_url(url).database in (None, "", ":memory:")
        pool: dict[str, Any] = {} if in_memory else {"pool_size": pool_size, "max_overflow": pool_size}
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            json_serializer=_json_text,
            json_deserializer=orjson.loads,
            **pool,
        )
        event.listen(engine, "connect", _configure_sqlite)
        event.listen(engine, "begin", _begin_sqlite)
        return engine
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_recycle=1800,
        # JSON columns (history changes) are written and read with orjson: several times faster than the
        # json module (a bulk write of 10,000 elements records 10,000 changes).
        json_serializer=_json_text,
        json_deserializer=orjson.loads,
    )


def build_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)
