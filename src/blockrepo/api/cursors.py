"""Cursors as clients see them: a listing's position, sealed with an HMAC under the server secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from collections.abc import Callable

from blockrepo.errors import invalid_cursor

# The listings whose cursors are sealed; a cursor of one is refused by the other.
MASSDATA = b"massdata"
HISTORY = b"history"
PLANNING = b"planning"  # a scenario's diff, the landscape on a date and two dates compared
# 128 bits of HMAC-SHA256: guessing a tag is as hopeless as guessing a session id.
TAG_BYTES = 16
_TAG_CHARS = len(base64.urlsafe_b64encode(bytes(TAG_BYTES)).rstrip(b"="))
_SEPARATOR = "."  # never in a position, which is URL-safe base64


class CursorSeal:
    """Seals the positions the services hand out as `nextCursor`, and opens only what it sealed.

    A service decodes a position into the values its keyset query binds; sealed, a position that reaches
    a service is always one a service made from rows of the database, so no crafted date, text or integer
    ever reaches SQL. The key derives from the database's server secret (`server_secret`), so any worker
    or host opens a cursor another one issued. `key` is called once, at the first use."""

    def __init__(self, key: Callable[[], bytes]) -> None:
        self._key = key
        self._keyed: hmac.HMAC | None = None
        self._lock = threading.Lock()

    def _tag(self, purpose: bytes, position: str) -> str:
        if self._keyed is None:
            with self._lock:
                if self._keyed is None:
                    self._keyed = hmac.new(self._key(), digestmod=hashlib.sha256)
        mac = self._keyed.copy()
        mac.update(purpose + b"\0" + position.encode())
        return base64.urlsafe_b64encode(mac.digest()[:TAG_BYTES]).rstrip(b"=").decode()

    def seal(self, purpose: bytes, position: str | None) -> str | None:
        """The cursor a client gets for a service's position (None: no next page)."""
        if position is None:
            return None
        return f"{position}{_SEPARATOR}{self._tag(purpose, position)}"

    def open(self, purpose: bytes, cursor: str | None, pointer: str) -> str | None:
        """The position of a cursor this seal issued for `purpose`; 400 `invalid_cursor` for anything else.
        None or empty: no cursor (the first page)."""
        if not cursor:
            return None
        position, _, tag = cursor.rpartition(_SEPARATOR)
        if (
            not position
            or len(tag) != _TAG_CHARS
            or not cursor.isascii()
            or not hmac.compare_digest(tag, self._tag(purpose, position))
        ):
            raise invalid_cursor(pointer)
        return position
