"""Signed session cookies and their Set-Cookie lines on their own: the precomputed HMAC is HMAC-SHA256, and
the GET lane's ready-made headers are the ones every other path writes."""

from __future__ import annotations

import base64
import hmac

import pytest

from blockrepo.auth.cookies import LoginCookieHeaders, login_cookie_headers
from blockrepo.auth.sessions import MAC_BYTES, CookieSigner, SignedClaims


@pytest.mark.parametrize("secret", [b"", b"s", b"k" * 43, b"x" * 64, b"y" * 65, bytes(range(200))])
def test_the_mac_is_hmac_sha256_under_the_secret(secret: bytes) -> None:
    """Cookies issued before (by `hmac.digest`) or by another worker still verify, whatever the key's length
    (over 64 bytes it is hashed first, as RFC 2104 says)."""
    signer = CookieSigner(secret)
    cookie = signer.sign(7, 3, 1_700_000_000.9)
    token = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
    payload, mac = token[:-MAC_BYTES], token[-MAC_BYTES:]
    assert mac == hmac.digest(secret, b"session" + payload, "sha256")[:MAC_BYTES]
    expected_csrf = hmac.digest(secret, b"csrf" + cookie.encode(), "sha256")
    assert base64.urlsafe_b64decode(signer.csrf_token(cookie) + "=") == expected_csrf
    assert signer.claims(cookie) == SignedClaims(user_id=7, credentials_version=3, created_at=1_700_000_000.0)
    assert CookieSigner(secret + b"!").claims(cookie) is None


def test_every_cookie_is_new_even_within_one_second() -> None:
    signer = CookieSigner(b"k" * 43)
    assert len({signer.sign(7, 3, 1_700_000_000.0) for _ in range(100)}) == 100


def test_a_credentials_version_past_32_bits_is_signed_as_its_low_bits() -> None:
    signer = CookieSigner(b"k" * 43)
    claims = signer.claims(signer.sign(7, 2**32 + 5, 1_700_000_000.0))
    assert claims is not None and claims.credentials_version == 5


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("csrf_enabled", [False, True])
def test_ready_made_login_cookie_headers_are_the_usual_ones(secure: bool, csrf_enabled: bool) -> None:
    cookies = LoginCookieHeaders(secure=secure, csrf_enabled=csrf_enabled)
    made = [cookies.session("c00kie-value_0123456789")]
    if cookies.csrf_enabled:
        made.append(cookies.csrf("t0ken-value_0123456789"))
    assert made == login_cookie_headers(
        "c00kie-value_0123456789", "t0ken-value_0123456789", secure=secure, csrf_enabled=csrf_enabled
    )
