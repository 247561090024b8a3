"""Routes of the auth API (version 7.4)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
