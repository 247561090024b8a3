"""Standard Webhooks signatures (https://www.standardwebhooks.com): `whsec_` secrets and the
`webhook-id`, `webhook-timestamp` and `webhook-signature` headers over the exact bytes sent."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh signing secret: `whsec_` and 32 random bytes in base64, as the scheme's libraries read it."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(
    signing_secrets: list[str], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The scheme's headers; with several secrets (a rotation's overlap) one signature each, space-separated,
    so a receiver holding either secret accepts the message."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, message_id, timestamp, body) for s in signing_secrets),
    }
