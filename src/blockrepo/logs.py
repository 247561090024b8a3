"""The service's log lines: time, level, logger and request id on every line, as text or JSON."""

from __future__ import annotations

import logging
import select
import threading
import time
from contextvars import ContextVar
from typing import IO, Any, Literal

import orjson

# The id of the request being answered: set by the outermost layer (api/observed.py) and copied by anyio
# into the worker threads a request runs in, so every line logged on its behalf names it.
REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="-")

LogFormat = Literal["text", "json"]
# Fields of a record that are the record's own, not what a caller passed in `extra`.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "color_message",  # uvicorn's coloured copy of its message
    "fields",  # structured fields of a line whose message says the same (the access log's)
}


def _timestamp(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record (a dash outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        return True


class TextFormatter(logging.Formatter):
    """`2026-11-28T21:50:00.123Z INFO blockrepo.access [request id] message key=value …`."""

    def format(self, record: logging.LogRecord) -> str:
        extra = ""
        if record.__dict__.keys() - _RECORD_FIELDS:  # most records have no extra field: a set operation
            extra = " ".join(f"{k}={v}" for k, v in vars(record).items() if k not in _RECORD_FIELDS)
        line = (
            f"{_timestamp(record.created)} {record.levelname} {record.name} "
            f"[{getattr(record, 'request_id', '-')}] {record.getMessage()}"
        )
        if extra:
            line = f"{line} {extra}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, request_id, message and the record's extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        entry.update((key, value) for key, value in vars(record).items() if key not in _RECORD_FIELDS)
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class BatchingStreamHandler(logging.StreamHandler[IO[str]]):
    """A stream handler that gathers lines and writes them together: at most every `FLUSH_SECONDS` (from a
    thread of its own), at once for a warning or worse, and in writes of whole lines of at most
    `PIPE_BUF` bytes.

    Writing and flushing every line, as `logging.StreamHandler` does, is a system call per request for
    the access log: on the hot path a large share of the line's cost (bench/README.md). Writes of whole
    lines within `PIPE_BUF` are atomic on a pipe, so the workers of one server, sharing its standard
    error, never tear each other's lines. A line waits at most `FLUSH_SECONDS`; closing the handler (at
    exit, `logging.shutdown`) writes the rest."""

    FLUSH_SECONDS = 0.2

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        self._lines: list[str] = []
        self._size = 0  # bytes of the gathered lines, in UTF-8
        self._closing = threading.Event()
        self._flusher: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        # Called by `Handler.handle` with the handler's lock held.
        try:
            line = self.format(record) + self.terminator
            size = len(line) if line.isascii() else len(line.encode())
            if self._size + size > select.PIPE_BUF:
                self._write_gathered()
            self._lines.append(line)
            self._size += size
            if record.levelno >= logging.WARNING:
                self._write_gathered()
            elif self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_periodically, name="log-flush", daemon=True
                )
                self._flusher.start()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def _write_gathered(self) -> None:
        if self._lines:
            self.stream.write("".join(self._lines))
            self._lines.clear()
            self._size = 0
        if self.stream and hasattr(self.stream, "flush"):
            self.stream.flush()

    def _flush_periodically(self) -> None:
        while not self._closing.wait(self.FLUSH_SECONDS):
            if self._lines:
                self.flush()

    def flush(self) -> None:
        self.acquire()
        try:
            self._write_gathered()
        finally:
            self.release()

    def close(self) -> None:
        self._closing.set()
        self.flush()
        super().close()


def flush_logs() -> None:
    """Write every line a handler still holds. A serving process calls it as it stops: uvicorn ends a
    server stopped by SIGTERM by raising the signal again, whose default action ends the process without
    `logging.shutdown`, so the lines `BatchingStreamHandler` gathered in its last 0.2 s would be lost."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            handler.flush()


def logging_config(level: str, log_format: LogFormat) -> dict[str, Any]:
    """The `logging.config.dictConfig` of a serving process (uvicorn applies it in every worker)."""
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"line": {"()": formatter}},
        "handlers": {
            "stderr": {
                "()": BatchingStreamHandler,
                "stream": "ext://sys.stderr",
                "formatter": "line",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            # uvicorn's own loggers come with handlers of their own: theirs go, the root's format applies.
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},  # ours is blockrepo.access
        },
    }
