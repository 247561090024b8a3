"""Runs a large write's row inserts on a second thread, in order, while the request's thread goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.orm import Session

from blockrepo.interpreter import switch_interval_lowered

INFO_KEY = "blockrepo.write_pipeline"  # in the pooled DBAPI connection's `info` while a pipeline runs on it


class WritePipeline:
    """Statements of one connection run in the order given, one at a time, on a thread of their own.

    SQLite's driver lets go of the GIL while SQLite steps a statement, so the rows of a bulk write go
    into their B-trees while the request's thread records the write's history in Python. After a
    statement fails the rest are not run (the transaction is lost anyway) and `wait` raises its error.
    Any other statement on the connection first waits for every pipelined one (`pipelined`), so what
    the request reads or writes next sees them, as without the pipeline."""

    __slots__ = ("_executor", "_failed", "_pending", "_worker")

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="blockrepo-writes")
        self._pending: list[Future[None]] = []
        self._failed = False
        self._worker: int | None = None

    def submit(self, run: Callable[[], None]) -> None:
        self._pending.append(self._executor.submit(self._run, run))

    def _run(self, run: Callable[[], None]) -> None:
        self._worker = threading.get_ident()
        if self._failed:
            return
        try:
            run()
        except BaseException:
            self._failed = True
            raise

    def cancel(self) -> None:
        """Run none of the statements still waiting (the write failed: they would be rolled back)."""
        self._failed = True

    def on_worker(self) -> bool:
        return threading.get_ident() == self._worker

    def wait(self) -> None:
        """Return once every submitted statement has run; raise the first one's error."""
        pending, self._pending = self._pending, []
        wait(pending)
        for future in pending:
            error = future.exception()
            if error is not None:
                raise error

    def close(self) -> None:
        self._executor.shutdown(wait=True)


@contextmanager
def pipelined(db: Session) -> Iterator[None]:
    """Inside the block, `submit_statement` on this session's connection runs its statement on the
    pipeline (SQLite; elsewhere it runs at once). The block ends once every statement has run; an error
    of one is raised there at the latest."""
    connection = db.connection()
    info = connection.info
    if connection.dialect.name != "sqlite" or INFO_KEY in info:
        yield
        return
    pipeline = WritePipeline()
    info[INFO_KEY] = pipeline

    def wait_first(*_: Any) -> None:
        if not pipeline.on_worker():
            pipeline.wait()

    # On this connection only, for the block's time: the hot path's statements run no listener for it.
    event.listen(connection, "before_cursor_execute", wait_first)
    try:
        with switch_interval_lowered():  # the statements' thread gets the GIL back soon (interpreter.py)
            yield
            pipeline.wait()
    except BaseException:
        pipeline.cancel()
        raise
    finally:
        # On an error in the block too: nothing may still run on the connection when it is rolled back.
        del info[INFO_KEY]
        pipeline.close()
        event.remove(connection, "before_cursor_execute", wait_first)


def submit_statement(connection: Connection, run: Callable[[], None]) -> None:
    """`run` (one statement on `connection`, no rows wanted) on the connection's pipeline when one
    runs, else now."""
    pipeline = connection.info.get(INFO_KEY)
    if pipeline is None:
        run()
    else:
        pipeline.submit(run)
