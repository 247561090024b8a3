"""Routes of the history API (version 7.4)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
