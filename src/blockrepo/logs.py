"""The service's log lines: time, level, logger and request id on every line, as text or JSON."""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import Any, Literal

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
        extra = " ".join(f"{key}={value}" for key, value in vars(record).items() if key not in _RECORD_FIELDS)
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
                "class": "logging.StreamHandler",
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
