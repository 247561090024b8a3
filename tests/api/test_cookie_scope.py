"""Every cookie the service sets is host-only and for the whole site (`Path=/`, no `Domain`), and `Secure`
when configured, whichever path sets it: form login, the Basic login paths, a signed session handed to
Basic credentials by the GET lane or the general path, and logout. (API 7.4 fixes the names, so they carry
no `__Host-` prefix; the README says why.)"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.api.auth_support import PROTECTED, bare_client, cookie_value, form_login
from tests.conftest import ADMIN_PASSWORD, make_settings

SYSTEM = ("system", ADMIN_PASSWORD)


@pytest.fixture(params=[False, True], ids=["plain", "secure"])
def secure_app(request: pytest.FixtureRequest, database_url: str) -> Iterator[tuple[FastAPI, bool]]:
    app = create_app(make_settings(database_url, cookie_secure=request.param))
    yield app, request.param
    app.state.services.dispose()


def test_every_cookie_is_host_only_for_the_whole_site(secure_app: tuple[FastAPI, bool]) -> None:
    app, secure = secure_app
    with TestClient(app, base_url="http://127.0.0.1") as admin:
        admin.auth = SYSTEM
        created = admin.post("/api/element/BusinessProcess", json={"name": ["Order handling"]})
        assert created.status_code == 201, created.text
    element = f"/api/element/BusinessProcess/{created.json()['id'][0]}"
    login = form_login(bare_client(app))
    responses: list[httpx.Response] = [
        login,
        bare_client(app).get("/api/auth-scheme", auth=SYSTEM),
        bare_client(app).get("/api/j_service_security_check", auth=SYSTEM),
        bare_client(app).get(PROTECTED, auth=SYSTEM),
        bare_client(app).get(element, auth=SYSTEM),
        bare_client(app).get(element, auth=SYSTEM),  # from the GET lane's cache
        bare_client(app).post(
            "/j_service_logout",
            headers={
                "Cookie": f"JSESSIONID={cookie_value(login, 'JSESSIONID')}",
                "X-XSRF-TOKEN": cookie_value(login, "XSRF-TOKEN"),
            },
        ),
    ]
    for response in responses:
        lines = response.headers.get_list("set-cookie")
        assert lines, (response.request.url, response.status_code)
        for line in lines:
            attributes = [part.strip().lower() for part in line.split(";")[1:]]
            assert "path=/" in attributes, line
            assert not any(a.startswith("domain") for a in attributes), line
            assert ("secure" in attributes) == secure, line
            assert "samesite=lax" in attributes, line
