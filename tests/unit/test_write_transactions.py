"""The write lock every write transaction takes first (storage.transactions), and which database errors
count as "a concurrent transaction was in the way": real driver errors, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from blockrepo.storage.engine import build_engine, build_session_factory, normalize_url
from blockrepo.storage.transactions import GATE_KEY, WRITE_LOCKS, WriteQueue, begin_write, is_retryable
from tests.conftest import PG_URL


def test_a_second_writer_waits_for_the_first_and_its_failure_to_wait_counts_as_retryable(
    database_url: str,
) -> None:
    engine = build_engine(database_url)
    first = build_session_factory(engine.execution_options(begin_immediate=True))()
    # A second writer that does not wait: the lock the first one holds makes it fail at once.
    if database_url.startswith("sqlite"):
        impatient = create_engine(database_url, connect_args={"timeout": 0}, isolation_level="AUTOCOMMIT")
        statement = "BEGIN IMMEDIATE"
    else:
        impatient = create_engine(normalize_url(database_url))
        gate = f"SELECT pg_advisory_xact_lock({WRITE_LOCKS}, {GATE_KEY})"
        statement = f"SET LOCAL lock_timeout = '50ms'; {gate}"
    try:
        begin_write(first)
        with impatient.connect() as connection, pytest.raises(DBAPIError) as refused:
            for part in statement.split("; "):
                connection.execute(text(part))
        assert is_retryable(refused.value)
        first.rollback()
        with impatient.connect() as connection:  # the lock went with the first transaction
            for part in statement.split("; "):
                connection.execute(text(part))
            connection.rollback()
    finally:
        first.close()
        impatient.dispose()
        engine.dispose()


def test_a_broken_constraint_is_not_retryable(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        with Session(engine) as db, pytest.raises(IntegrityError) as broken:
            db.execute(text("INSERT INTO repository_state (id, revision) VALUES (1, 0)"))
        assert not is_retryable(broken.value)
        assert not is_retryable(ValueError("not a database error"))
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)")
def test_a_deadlock_is_retryable(database_url: str) -> None:
    """Two transactions that lock two rows in opposite orders: PostgreSQL fails one of them (40P01)."""
    engine = create_engine(normalize_url(database_url))
    try:
        with engine.begin() as setup:
            setup.execute(text("CREATE TABLE probe (id integer PRIMARY KEY)"))
            setup.execute(text("INSERT INTO probe VALUES (1), (2)"))
        both_locked = threading.Barrier(2, timeout=30)
        failures: list[DBAPIError] = []

        def lock_in_order(first: int, second: int) -> None:
            try:
                with engine.begin() as connection:
                    connection.execute(text("SELECT id FROM probe WHERE id = :id FOR UPDATE"), {"id": first})
                    both_locked.wait()
                    connection.execute(text("SELECT id FROM probe WHERE id = :id FOR UPDATE"), {"id": second})
            except DBAPIError as exc:
                failures.append(exc)

        other = threading.Thread(target=lock_in_order, args=(2, 1))
        other.start()
        lock_in_order(1, 2)
        other.join()
        assert len(failures) == 1 and is_retryable(failures[0])
    finally:
        engine.dispose()


def test_the_write_queue_gives_one_writer_its_turn_at_a_time(tmp_path: Path) -> None:
    """Writers of a SQLite database queue for their turn (another thread waits until the turn is given
    back), and a write nested in one that has its turn does not wait for itself."""
    queue = WriteQueue(build_engine(f"sqlite:///{tmp_path / 'queue.db'}"))
    entered = threading.Event()

    def other_writer() -> None:
        with queue.turn():
            entered.set()

    with queue.turn():
        with queue.turn():  # nested: passes at once
            pass
        waiting = threading.Thread(target=other_writer)
        waiting.start()
        assert not entered.wait(0.3)  # still the first writer's turn
    waiting.join(timeout=30)
    assert entered.is_set()


def test_the_write_queue_does_nothing_on_postgresql_or_in_memory() -> None:
    assert WriteQueue(build_engine("sqlite://")).path is None
    assert WriteQueue(build_engine("postgresql://postgres@127.0.0.1:5432/none")).path is None
