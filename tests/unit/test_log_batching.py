"""The log handler of a serving process gathers lines and writes them together, yet loses none, keeps
their order, writes a warning at once, and never writes more than PIPE_BUF bytes or part of a line in one
write, so that the workers sharing one standard error cannot tear each other's lines."""

from __future__ import annotations

import io
import logging
import select
import signal
import subprocess
import sys
import time

from blockrepo.logs import BatchingStreamHandler


class Writes(io.StringIO):
    """A stream that keeps what each flush delivered, as one write to the file descriptor would."""

    def __init__(self) -> None:
        super().__init__()
        self.delivered: list[str] = []
        self._flushed = 0

    def flush(self) -> None:
        text = self.getvalue()
        if len(text) > self._flushed:
            self.delivered.append(text[self._flushed :])
            self._flushed = len(text)


def logger_to(stream: Writes) -> tuple[logging.Logger, BatchingStreamHandler]:
    handler = BatchingStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"test.batching.{id(stream)}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    return logger, handler


def test_lines_are_written_together_in_order_within_the_flush_interval() -> None:
    stream = Writes()
    logger, handler = logger_to(stream)
    try:
        for number in range(10):
            logger.info("line %d", number)
        deadline = time.monotonic() + 5
        while not stream.delivered and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stream.delivered == ["".join(f"line {n}\n" for n in range(10))]
    finally:
        handler.close()


def test_a_warning_is_written_at_once_after_the_lines_before_it() -> None:
    stream = Writes()
    logger, handler = logger_to(stream)
    try:
        logger.info("quiet")
        logger.warning("loud")
        assert stream.delivered == ["quiet\nloud\n"]
    finally:
        handler.close()


def test_writes_hold_whole_lines_of_at_most_pipe_buf_bytes() -> None:
    stream = Writes()
    logger, handler = logger_to(stream)
    lines = [f"{number:04d} " + "é" * (37 + number % 50) for number in range(400)]
    for line in lines:
        logger.info(line)
    handler.close()  # writes the rest
    assert "".join(stream.delivered) == "".join(f"{line}\n" for line in lines)
    assert len(stream.delivered) > 1
    for chunk in stream.delivered:
        assert len(chunk.encode()) <= select.PIPE_BUF and chunk.endswith("\n")


def test_closing_writes_what_is_gathered() -> None:
    stream = Writes()
    logger, handler = logger_to(stream)
    logger.info("last words")
    handler.close()
    assert stream.delivered == ["last words\n"]


STOPPED_BY_SIGTERM = """
import logging, os, signal, sys
from blockrepo.cli.serve import _flush_logs_then_terminate
from blockrepo.logs import BatchingStreamHandler

logger = logging.getLogger("blockrepo.access")
logger.addHandler(BatchingStreamHandler(sys.stderr))
logger.setLevel(logging.INFO)
logger.info("the last request before the stop")
if sys.argv[1] == "flushing":
    signal.signal(signal.SIGTERM, _flush_logs_then_terminate)
# As uvicorn ends a server stopped by SIGTERM: the signal raised again once it has shut down.
signal.raise_signal(signal.SIGTERM)
"""


def test_a_server_stopped_by_sigterm_writes_the_lines_it_still_holds() -> None:
    """uvicorn ends a gracefully stopped server by raising SIGTERM again, which ends the process without
    `logging.shutdown`: the serving process's handler writes the gathered lines first, and still ends
    as SIGTERM ends it."""
    runs = {
        mode: subprocess.run(
            [sys.executable, "-c", STOPPED_BY_SIGTERM, mode], capture_output=True, text=True, timeout=60
        )
        for mode in ("flushing", "without")
    }
    assert runs["flushing"].returncode == -signal.SIGTERM
    assert "the last request before the stop" in runs["flushing"].stderr
    # Without it the line is lost: the check has teeth.
    assert runs["without"].returncode == -signal.SIGTERM
    assert "the last request before the stop" not in runs["without"].stderr
