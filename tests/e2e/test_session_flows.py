"""The API documentation's authentication flows, replayed with the real `curl` binary and a cookie file
against a live `blockrepo serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = pytest.mark.e2e

USER = f"system:{ADMIN_PASSWORD}"
JSON = ("-H", "Content-Type: application/json")


@dataclass
class CurlResult:
    status: int
    headers: str
    body: str

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for line in self.headers.splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


class Curl:
    """Runs the curl binary against one server; each call writes headers and body to files of its own."""

    def __init__(self, executable: str, server: LiveServer, workdir: Path) -> None:
        self.executable = executable
        self.base_url = server.base_url
        self.workdir = workdir
        self.calls = 0

    def __call__(self, path: str, *args: str) -> CurlResult:
        self.calls += 1
        headers = self.workdir / f"headers-{self.calls}.txt"
        body = self.workdir / f"body-{self.calls}.txt"
        command = [
            self.executable, "--silent", "--show-error", "--max-time", "30",
            "--dump-header", str(headers), "--output", str(body), "--write-out", "%{http_code}",
            *args, f"{self.base_url}{path}",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
        return CurlResult(
            status=int(done.stdout),
            headers=headers.read_text(errors="replace"),
            body=body.read_text(errors="replace") if body.exists() else "",
        )


def cookie_file(path: Path) -> dict[str, str]:
    """Name -> value of a curl (Netscape format) cookie file; curl marks HttpOnly cookies `#HttpOnly_`."""
    cookies: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.removeprefix("#HttpOnly_")
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) == 7:
            cookies[fields[5]] = fields[6]
    return cookies


def http_only_cookies(path: Path) -> set[str]:
    return {raw.split("\t")[5] for raw in path.read_text().splitlines() if raw.startswith("#HttpOnly_")}


@pytest.fixture
def curl_binary() -> str:
    executable = shutil.which("curl")
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI: the curl binary is required")
        pytest.skip("the curl binary is not installed (apt-get install -y curl)")
    return executable


@pytest.fixture
def curl(curl_binary: str, live_server: LiveServer, tmp_path: Path) -> Curl:
    return Curl(curl_binary, live_server, tmp_path)


def create_element(curl: Curl, name: str) -> int:
    created = curl("/api/element/BusinessProcess", "-u", USER, *JSON, "-d", json.dumps({"name": [name]}))
    assert created.status == 201, created.body
    return int(created.json()["id"][0])


def test_a_basic_get_of_an_element(curl: Curl) -> None:
    element_id = create_element(curl, "Order handling")
    response = curl(f"/api/element/BusinessProcess/{element_id}", "-u", USER)
    assert response.status == 200
    assert response.json()["name"] == ["Order handling"]
    assert response.header("etag") == 'W/"1"'
    assert curl(f"/api/element/BusinessProcess/{element_id}").status == 401
    assert curl(f"/api/element/BusinessProcess/{element_id}", "-u", "system:wrong").status == 401


def test_b_form_login_then_put_with_the_cookie_file(curl: Curl, tmp_path: Path) -> None:
    element_id = create_element(curl, "Order handling")
    jar = tmp_path / "cookies.txt"
    login = curl(
        "/j_service_security_check",
        "-c",
        str(jar),
        "-d",
        "j_username=system",
        "-d",
        f"j_password={ADMIN_PASSWORD}",
    )
    assert login.status == 200
    assert login.json() == {"user": "system"}
    cookies = cookie_file(jar)
    assert set(cookies) == {"JSESSIONID", "XSRF-TOKEN"}
    assert http_only_cookies(jar) == {"JSESSIONID"}
    url = f"/api/element/BusinessProcess/{element_id}"
    body = ("-X", "PUT", *JSON, "-d", json.dumps({"description": ["From order to invoice"]}))

    refused = curl(url, "-b", str(jar), *body)
    assert refused.status == 403
    assert refused.json()["code"] == "csrf_token_missing"
    assert refused.header("content-type") == "application/problem+json"

    wrong = curl(url, "-b", str(jar), "-H", "X-XSRF-TOKEN: not-the-token", *body)
    assert wrong.status == 403
    assert wrong.json()["code"] == "csrf_token_invalid"

    accepted = curl(url, "-b", str(jar), "-H", f"X-XSRF-TOKEN: {cookies['XSRF-TOKEN']}", *body)
    assert accepted.status == 200, accepted.body
    assert accepted.json()["description"] == ["From order to invoice"]
    assert accepted.json()["lastModificationUser"] == ["system"]
    assert curl(url, "-b", str(jar)).json()["revision"] == [2]


def test_b_form_login_then_put_with_csrf_off(
    curl_binary: str, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(env={"BLOCKREPO_CSRF_ENABLED": "false"})
    curl = Curl(curl_binary, server, tmp_path)
    element_id = create_element(curl, "Order handling")
    jar = tmp_path / "cookies.txt"
    login = curl(
        "/api/j_service_security_check",
        "-c", str(jar), "-d", "j_username=system", "-d", f"j_password={ADMIN_PASSWORD}",
    )  # fmt: skip
    assert login.status == 200
    assert set(cookie_file(jar)) == {"JSESSIONID"}  # no CSRF token when CSRF is off
    accepted = curl(
        f"/api/element/BusinessProcess/{element_id}",
        "-b", str(jar), "-X", "PUT", *JSON, "-d", json.dumps({"description": ["cookie alone"]}),
    )  # fmt: skip
    assert accepted.status == 200, accepted.body
    assert accepted.json()["description"] == ["cookie alone"]


@pytest.mark.parametrize("path", ["/api/auth-scheme", "/api/j_service_security_check"])
def test_c_basic_head_obtains_the_cookies(curl: Curl, tmp_path: Path, path: str) -> None:
    element_id = create_element(curl, "Order handling")
    jar = tmp_path / "cookies.txt"
    head = curl(path, "-u", USER, "--head", "-c", str(jar))
    assert head.status == 200
    cookies = cookie_file(jar)
    assert set(cookies) == {"JSESSIONID", "XSRF-TOKEN"}
    url = f"/api/element/BusinessProcess/{element_id}"

    read = curl(url, "-b", str(jar))
    assert read.status == 200
    assert read.json()["name"] == ["Order handling"]

    body = ("-X", "PUT", *JSON, "-d", json.dumps({"description": ["changed with cookies only"]}))
    assert curl(url, "-b", str(jar), *body).status == 403
    changed = curl(url, "-b", str(jar), "-H", f"X-XSRF-TOKEN: {cookies['XSRF-TOKEN']}", *body)
    assert changed.status == 200, changed.body
    assert changed.json()["description"] == ["changed with cookies only"]


def test_logout_with_the_cookie_file(curl: Curl, tmp_path: Path) -> None:
    jar = tmp_path / "cookies.txt"
    assert curl("/api/auth-scheme", "-u", USER, "--head", "-c", str(jar)).status == 200
    before_logout = tmp_path / "before-logout.txt"
    shutil.copyfile(jar, before_logout)
    token = cookie_file(jar)["XSRF-TOKEN"]
    assert curl("/api/administration/users/current", "-b", str(jar)).status == 200

    logout = curl(
        "/j_service_logout", "-b", str(jar), "-c", str(jar), "-X", "POST", "-H", f"X-XSRF-TOKEN: {token}"
    )
    assert logout.status == 204
    assert "JSESSIONID" not in cookie_file(jar)  # curl dropped the expired session cookie
    stale = curl("/api/administration/users/current", "-b", str(before_logout))
    assert stale.status == 401
    assert stale.json()["code"] == "unauthenticated"


def test_fixation_an_id_sent_before_login_is_not_the_id_after(curl: Curl, tmp_path: Path) -> None:
    jar = tmp_path / "cookies.txt"
    assert curl("/api/auth-scheme", "-u", USER, "--head", "-c", str(jar)).status == 200
    before = cookie_file(jar)
    login = curl(
        "/j_service_security_check",
        "-b", str(jar), "-c", str(jar), "-d", "j_username=system", "-d", f"j_password={ADMIN_PASSWORD}",
    )  # fmt: skip
    assert login.status == 200
    after = cookie_file(jar)
    assert after["JSESSIONID"] != before["JSESSIONID"]
    assert after["XSRF-TOKEN"] != before["XSRF-TOKEN"]
    assert curl("/api/administration/users/current", "-b", str(jar)).status == 200
    planted = tmp_path / "planted.txt"
    planted.write_text(jar.read_text().replace(after["JSESSIONID"], before["JSESSIONID"]))
    assert curl("/api/administration/users/current", "-b", str(planted)).status == 401


def test_sessions_expire_on_the_wall_clock(
    curl_binary: str, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(env={"BLOCKREPO_SESSION_IDLE_TIMEOUT": "2", "BLOCKREPO_SESSION_MAX_AGE": "5"})
    curl = Curl(curl_binary, server, tmp_path)
    idle, active = tmp_path / "idle.txt", tmp_path / "active.txt"
    for jar in (idle, active):
        assert curl("/api/auth-scheme", "-u", USER, "--head", "-c", str(jar)).status == 200
    started = time.monotonic()
    idle_status: int | None = None
    statuses: list[int] = []
    while time.monotonic() - started < 6:
        time.sleep(0.4)
        statuses.append(curl("/api/administration/users/current", "-b", str(active)).status)
        if idle_status is None and time.monotonic() - started > 2.5:
            idle_status = curl("/api/administration/users/current", "-b", str(idle)).status
            assert statuses[-1] == 200  # the active session outlives the idle timeout ...
    assert idle_status == 401  # ... while the unused one has expired
    assert statuses[-1] == 401  # and it ends at its absolute lifetime
    assert statuses == sorted(statuses)  # 200s, then 401s for good


def test_login_throttling_on_the_live_server(
    curl_binary: str, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(env={"BLOCKREPO_LOGIN_MAX_FAILURES": "3", "BLOCKREPO_LOGIN_WINDOW": "120"})
    curl = Curl(curl_binary, server, tmp_path)
    form = ("-d", "j_username=system")
    for _ in range(3):
        assert curl("/j_service_security_check", *form, "-d", "j_password=guess").status == 401
    refused = curl("/j_service_security_check", *form, "-d", f"j_password={ADMIN_PASSWORD}")
    assert refused.status == 429
    assert 1 <= int(refused.header("retry-after") or "0") <= 120
    assert curl("/api/auth-scheme", "-u", USER).status == 429
    assert "login failed for 'system' from 127.0.0.1 (form)" in server.log()
