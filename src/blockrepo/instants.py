"""Moments in time as the API writes them when a second is precise enough: UTC, ISO 8601, `Z`."""

from __future__ import annotations

import datetime as dt


def utc_text(seconds: float) -> str:
    """Seconds since the epoch as `2026-11-29T01:30:00Z` (the fraction dropped)."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
