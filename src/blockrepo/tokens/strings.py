"""The token string (`brp_`, a public id, a secret, a checksum) and its keyed hash under a rotatable pepper.

`brp_` + 12 characters of public id + 32 of secret (about 190 bits from `secrets`) + 6 of checksum, all
from [0-9A-Za-z]: `TOKEN_PATTERN` finds one in text, and the checksum (CRC-32 of everything before it, in
base 62) lets a secret scanner tell a real token from look-alikes offline, without asking the server. The
server keeps only HMAC-SHA256(pepper, public id + secret): the pepper is a setting (or, unset, derived
from the database's server secret), and several may be configured so that a new one takes over while
tokens hashed under the previous ones still verify (and are hashed again under the new one when used).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import zlib
from collections.abc import Sequence
from typing import NamedTuple

PREFIX = "brp_"
ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase
PUBLIC_ID_LENGTH = 12
SECRET_LENGTH = 32
CHECKSUM_LENGTH = 6
TOKEN_LENGTH = len(PREFIX) + PUBLIC_ID_LENGTH + SECRET_LENGTH + CHECKSUM_LENGTH
# What a secret scanner looks for (published in the README).
TOKEN_PATTERN = re.compile(r"\bbrp_[0-9A-Za-z]{50}\b")
_WHOLE = re.compile(r"brp_[0-9A-Za-z]{50}")


class TokenParts(NamedTuple):
    public_id: str
    secret: str


def _random(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


# Base 62 two digits at a time: the checksum of every Bearer request is three lookups.
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]
_PAIR_BASE = len(_PAIRS)


def checksum(body: str) -> str:
    """The 6 base-62 characters of CRC-32 over `body` (the token up to its checksum)."""
    value = zlib.crc32(body.encode("ascii"))
    return (
        _PAIRS[value // _PAIR_BASE**2 % _PAIR_BASE]
        + _PAIRS[value // _PAIR_BASE % _PAIR_BASE]
        + _PAIRS[value % _PAIR_BASE]
    )


def new_token() -> tuple[str, TokenParts]:
    """A new token string and its parts."""
    parts = TokenParts(_random(PUBLIC_ID_LENGTH), _random(SECRET_LENGTH))
    body = PREFIX + parts.public_id + parts.secret
    return body + checksum(body), parts


def parse_token(text: str) -> TokenParts | None:
    """The parts of a well-formed token whose checksum holds; None for anything else."""
    if len(text) != TOKEN_LENGTH or not _WHOLE.fullmatch(text):
        return None
    body, sent = text[:-CHECKSUM_LENGTH], text[-CHECKSUM_LENGTH:]
    if not hmac.compare_digest(checksum(body), sent):
        return None
    start = len(PREFIX)
    return TokenParts(
        text[start : start + PUBLIC_ID_LENGTH], text[start + PUBLIC_ID_LENGTH : -CHECKSUM_LENGTH]
    )


def pepper_id(pepper: bytes) -> str:
    """A short name of a pepper, stored with each hash; it tells nothing about the pepper."""
    return hashlib.sha256(b"blockrepo token pepper id\x00" + pepper).hexdigest()[:12]


class Peppers:
    """The peppers tokens are hashed under: the first is current, the others still verify."""

    def __init__(self, peppers: Sequence[bytes]) -> None:
        if not peppers:
            raise ValueError("at least one pepper is needed")
        self.current_id = pepper_id(peppers[0])
        self._keyed = {pepper_id(p): hmac.new(p, digestmod=hashlib.sha256) for p in peppers}

    def digest(self, parts: TokenParts, pepper: str | None = None) -> str | None:
        """The keyed hash of a token's parts under the named pepper (the current one by default); None
        when that pepper is not configured any more."""
        keyed = self._keyed.get(self.current_id if pepper is None else pepper)
        if keyed is None:
            return None
        mac = keyed.copy()
        mac.update((parts.public_id + parts.secret).encode("ascii"))
        return mac.hexdigest()

    def matches(self, parts: TokenParts, pepper: str, stored: str) -> bool:
        """Whether `stored` is the hash of these parts under `pepper`, compared in constant time."""
        digest = self.digest(parts, pepper)
        return digest is not None and hmac.compare_digest(digest, stored)
