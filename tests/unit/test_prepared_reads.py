"""Reads run as libpq prepared statements on PostgreSQL (storage.prepared): the same rows as a cursor, in
autocommit and in a transaction, after rollbacks, and the driver's errors as SQLAlchemy's."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import bindparam, select, text
from sqlalchemy.exc import DBAPIError

from blockrepo.access.models import User
from blockrepo.storage.engine import DriverStatement, build_engine, driver_rows
from tests.conftest import PG_URL

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)"),
]

_USER = select(User.login, User.enabled, User.credentials_version).where(User.id == bindparam("user_id"))


def test_a_prepared_read_answers_what_a_cursor_answers_in_and_out_of_transactions(database_url: str) -> None:
    engine = build_engine(database_url)
    prepared, plain = DriverStatement(_USER, prepared=True), DriverStatement(_USER)
    try:
        with engine.connect() as connection:
            connection.execute(text("CREATE TABLE probe (id integer PRIMARY KEY, at timestamptz, note text)"))
            connection.commit()
            user_id = connection.execute(text("SELECT min(id) FROM app_user")).scalar_one()
            expected = plain.rows(connection, {"user_id": user_id})
            assert expected and prepared.rows(connection, {"user_id": user_id}) == expected
            # A transaction that fails and rolls back; psycopg, had it prepared statements of its own,
            # would deallocate every prepared statement of the connection then.
            for _ in range(3):
                for _ in range(6):  # what psycopg would prepare by itself after five runs
                    driver_rows(connection, "SELECT id FROM app_user WHERE id = %(id)s", {"id": user_id})
                with pytest.raises(DBAPIError):
                    driver_rows(connection, "SELECT 1 / 0", ())
                connection.connection.rollback()  # the driver's: its statements are below SQLAlchemy
                assert prepared.rows(connection, {"user_id": user_id}) == expected
                assert prepared.rows(connection, {"user_id": -1}) == []
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            assert prepared.rows(connection, {"user_id": user_id}) == expected
        # Rows come back with the types a cursor gives (psycopg's loaders): time stamps, NULLs, text.
        at = dt.datetime(2026, 11, 28, 9, 30, 0, 123456, tzinfo=dt.UTC)
        # A percent sign in the SQL (SQLAlchemy doubles it for psycopg's placeholders).
        probe = DriverStatement(
            text("SELECT id, at, note FROM probe WHERE id = :id AND coalesce(note, '') NOT LIKE '%x%'"),
            prepared=True,
        )
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO probe VALUES (1, :at, NULL), (2, NULL, '50 %')"), {"at": at})
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))  # psycopg began the transaction
            assert probe.rows(connection, {"id": 1}) == [(1, at, None)]
            assert probe.rows(connection, {"id": 2}) == [(2, None, "50 %")]
    finally:
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE IF EXISTS probe"))
        engine.dispose()


def test_a_failing_prepared_read_raises_the_drivers_error_as_sqlalchemys(database_url: str) -> None:
    engine = build_engine(database_url)
    failing = DriverStatement(text("SELECT 1 / count(*) FROM app_user WHERE id = :user_id"), prepared=True)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            with pytest.raises(DBAPIError) as refused:
                failing.rows(connection, {"user_id": -1})
            assert getattr(refused.value.orig, "sqlstate", None) == "22012"  # division by zero
            assert driver_rows(connection, "SELECT 2", ()) == [(2,)]  # the connection still serves
    finally:
        engine.dispose()
