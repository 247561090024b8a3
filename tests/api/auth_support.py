"""Helpers for the session, CSRF and throttling tests: a settable clock, cookie parsing, logins."""

from __future__ import annotations

import time

import httpx
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.conftest import ADMIN_PASSWORD

PROTECTED = "/api/administration/users/current"


class FakeClock:
    """Wall-clock time that only moves when told to."""

    def __init__(self) -> None:
        # A whole second: sums of whole-second steps stay exact in floating point and in the stores'
        # microsecond time stamps, so deadlines fall exactly where the tests expect them.
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def install_clock(app: FastAPI) -> FakeClock:
    clock = FakeClock()
    auth = app.state.services.auth
    auth.sessions.clock = clock
    auth.throttle.clock = clock
    if auth.rate_limiter is not None:
        auth.rate_limiter.clock = clock
    return clock


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """The response's Set-Cookie lines by cookie name."""
    return {line.split("=", 1)[0]: line for line in response.headers.get_list("set-cookie")}


def cookie_value(response: httpx.Response, name: str) -> str:
    return set_cookies(response)[name].split(";", 1)[0].split("=", 1)[1]


def bare_client(app: FastAPI, address: str = "198.51.100.7") -> TestClient:
    """A client without credentials that keeps no cookies: tests send them explicitly."""
    client = TestClient(app, base_url="http://127.0.0.1", client=(address, 40000))
    client.event_hooks = {"response": [lambda _response: client.cookies.clear()]}
    return client


def session_headers(session_id: str, csrf_token: str | None = None) -> dict[str, str]:
    headers = {"Cookie": f"JSESSIONID={session_id}"}
    if csrf_token is not None:
        headers["X-XSRF-TOKEN"] = csrf_token
    return headers


def form_login(
    client: TestClient,
    login: str = "system",
    password: str = ADMIN_PASSWORD,
    path: str = "/j_service_security_check",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return client.post(path, data={"j_username": login, "j_password": password}, headers=headers or {})


def logged_in(client: TestClient, login: str = "system", password: str = ADMIN_PASSWORD) -> tuple[str, str]:
    """Form login; (session id, CSRF token)."""
    response = form_login(client, login, password)
    assert response.status_code == 200, response.text
    return cookie_value(response, "JSESSIONID"), cookie_value(response, "XSRF-TOKEN")
