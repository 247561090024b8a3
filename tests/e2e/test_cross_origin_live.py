"""Against a live `blockrepo serve`: a page of another loopback port cannot import through the Basic
credentials a real Chromium remembers, and a burst of wrong passwords meets the hash bound (503 with
Retry-After) while a session user reads on."""

from __future__ import annotations

import base64
import http.server
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Response

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = pytest.mark.e2e

BASIC = ("system", ADMIN_PASSWORD)
DOMAINS = ("Sales", "Finance", "Logistics", "Production", "Research", "Service", "Purchasing")
TIMEOUT_MS = 30_000

# The attack page: the workbook posted without a CORS preflight (no-cors), once as text/plain and once
# with no content type at all; the browser adds the Basic credentials it remembers for the target.
ATTACK_PAGE = """<!doctype html><title>attack</title><script>
const bytes = Uint8Array.from(atob("{workbook}"), c => c.charCodeAt(0));
const target = "{target}/api/massdata/import?mode=cud";
Promise.allSettled([
  fetch(target, {{method: "POST", mode: "no-cors", credentials: "include",
                 headers: {{"Content-Type": "text/plain"}}, body: new Blob([bytes])}}),
  fetch(target, {{method: "POST", mode: "no-cors", credentials: "include", body: bytes.buffer}}),
]).then(() => {{ document.title = "done"; }});
</script>"""


def domain_names(api: httpx.Client) -> list[str]:
    response = api.get("/api/massdata/BusinessDomain", params={"limit": 1000})
    assert response.status_code == 200, response.text
    return sorted(item["name"][0] for item in response.json()["items"])


@pytest.fixture
def attack_site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static site on another loopback port (same site, another origin): (its URL, its directory)."""
    directory = tmp_path / "site"
    directory.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(directory), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", directory
    server.shutdown()
    server.server_close()


@pytest.fixture
def remembering_browser(live_server: LiveServer, browser: Browser) -> Iterator[BrowserContext]:
    """A Chromium context that sends the supervisor's Basic credentials to the live server, as a browser
    does once its user has logged in with them."""
    context = browser.new_context(
        http_credentials={
            "username": BASIC[0],
            "password": BASIC[1],
            "origin": live_server.base_url,
            "send": "always",
        }
    )
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context
    finally:
        context.close()


@pytest.mark.browser
def test_a_same_site_page_cannot_import_through_remembered_basic_credentials(
    live_server: LiveServer, attack_site: tuple[str, Path], remembering_browser: BrowserContext
) -> None:
    with httpx.Client(base_url=live_server.base_url, auth=BASIC, timeout=30) as api:
        assert api.post("/api/element/BusinessDomain", json={"name": [DOMAINS[0]]}).status_code == 201
        workbook = api.get("/api/massdata/export", params={"format": "xlsx", "types": "BusinessDomain"})
        assert workbook.status_code == 200
        for name in DOMAINS[1:]:
            assert api.post("/api/element/BusinessDomain", json={"name": [name]}).status_code == 201
        before = domain_names(api)
        assert len(before) == 7
        site, directory = attack_site
        page_text = ATTACK_PAGE.format(
            workbook=base64.b64encode(workbook.content).decode(), target=live_server.base_url
        )
        (directory / "index.html").write_text(page_text)

        page = remembering_browser.new_page()
        # The victim has used the repository in this browser.
        victim = page.goto(f"{live_server.base_url}/api/administration/users/current")
        assert victim is not None and victim.status == 200
        # Only the credentials are left to authenticate the attack (the session cookie of that visit would
        # be sent with a same-site page's request too: the in-process CSRF tests cover that).
        remembering_browser.clear_cookies()
        seen: list[int] = []

        def record(response: Response) -> None:
            if "/api/massdata/import" in response.url:
                seen.append(response.status)

        remembering_browser.on("response", record)
        page.goto(f"{site}/index.html")
        page.wait_for_function("document.title === 'done'")
        page.wait_for_timeout(500)  # let the response events arrive
        # Both posts are refused: 403 for the missing CSRF token where the browser sends the remembered
        # credentials unasked (as browsers do once their user logged in with them), 401 where it waits for a
        # challenge, which a request for another site's page no longer gets as Basic (web/challenge.py);
        # tests/api/test_cross_origin_writes.py sends the credentials itself and asserts the 403.
        assert len(seen) == 2 and set(seen) <= {401, 403}, seen
        assert domain_names(api) == before


@pytest.mark.browser
@pytest.mark.parametrize(
    ("query", "status"),
    # Refused as a cross-origin login (403) when the browser sends its remembered credentials unasked, or
    # unauthenticated (401, no Basic challenge for another site's page) when it waits for a challenge.
    [("", (401, 403)), (f"?j_username=system&j_password={ADMIN_PASSWORD}", (400,))],
    ids=["remembered-credentials", "credentials-in-the-url"],
)
def test_a_same_site_page_cannot_log_its_visitor_in(
    live_server: LiveServer,
    attack_site: tuple[str, Path],
    remembering_browser: BrowserContext,
    query: str,
    status: tuple[int, ...],
) -> None:
    """Login CSRF: a page of another port navigates its visitor to the Basic login; no session starts."""
    site, directory = attack_site
    target = f"{live_server.base_url}/api/j_service_security_check{query}"
    (directory / "index.html").write_text(f'<!doctype html><a id="go" href="{target}">go</a>')
    page = remembering_browser.new_page()
    page.goto(f"{site}/index.html")
    with page.expect_navigation() as navigation:
        page.click("#go")
    response = navigation.value
    assert response is not None and response.status in status
    assert [c for c in remembering_browser.cookies(live_server.base_url) if c["name"] == "JSESSIONID"] == []


def test_a_burst_of_wrong_passwords_meets_the_hash_bound_and_a_session_reads_on(
    start_server: StartServer,
) -> None:
    """Real Argon2 cost and one permit: some of the burst get 503 with Retry-After, none any other 5xx,
    and a user with a session (or cached credentials) reads meanwhile."""
    server = start_server(
        cheap_hashing=False,
        env={
            "BLOCKREPO_PASSWORD_HASH_CONCURRENCY": "1",
            "BLOCKREPO_ARGON2_MEMORY_COST": "16384",  # 16 MiB: the machine is shared; the bound is the point
        },
    )
    burst = 16
    with httpx.Client(base_url=server.base_url, timeout=60) as reader:
        login = reader.post(
            "/j_service_security_check", data={"j_username": BASIC[0], "j_password": BASIC[1]}
        )
        assert login.status_code == 200
        assert reader.get("/api/administration/users/current", auth=BASIC).status_code == 200  # now cached
        start = threading.Barrier(burst + 1)

        def wrong_password(index: int) -> httpx.Response:
            with httpx.Client(base_url=server.base_url, timeout=60) as attacker:
                start.wait(30)
                return attacker.get("/api/administration/users/current", auth=(f"nobody{index}", "wrong"))

        with ThreadPoolExecutor(burst) as pool:
            futures = [pool.submit(wrong_password, index) for index in range(burst)]
            start.wait(30)
            during_session = reader.get("/api/administration/users/current")
            during_basic = httpx.get(
                f"{server.base_url}/api/administration/users/current", auth=BASIC, timeout=60
            )
            answers = [future.result() for future in futures]
    assert during_session.status_code == 200 and during_session.json()["login"] == "system"
    assert during_basic.status_code == 200
    statuses = sorted(answer.status_code for answer in answers)
    assert set(statuses) <= {401, 503}, statuses
    busy = [answer for answer in answers if answer.status_code == 503]
    assert busy, statuses
    for answer in busy:
        assert answer.json()["code"] == "password_hashing_busy"
        assert int(answer.headers["Retry-After"]) >= 1


@pytest.mark.browser
def test_a_foreign_page_cannot_swap_its_visitors_session_through_credentials_in_a_url(
    live_server: LiveServer, attack_site: tuple[str, Path], browser: Browser
) -> None:
    """A page of another port sends its visitor to `http://mallory:pw@repo/api/...`; Chromium answers the
    401 with the URL's credentials. The answer sets no cookie and the visitor's own session lives on."""
    mallory = ("mallory", "correct horse battery staple")
    with httpx.Client(base_url=live_server.base_url, auth=BASIC, timeout=30) as admin:
        body = {
            "login": mallory[0],
            "firstName": "Mallory",
            "lastName": "Attacker",
            "email": "mallory@example.com",
            "enabled": True,
            "roles": ["Supervisor"],
            "password": mallory[1],
        }
        assert admin.post("/api/administration/users", json=body).status_code == 201
    site, directory = attack_site
    host = live_server.base_url.removeprefix("http://")
    target = f"http://{mallory[0]}:{mallory[1].replace(' ', '%20')}@{host}/api/administration/users/current"
    (directory / "index.html").write_text(f'<!doctype html><a id="go" href="{target}">go</a>')
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        # Without a session: the 401 to a navigation from another site names the form login, not Basic, so
        # Chromium never sends the URL's credentials, neither now nor with its own follow-ups (the favicon).
        page.goto(f"{site}/index.html")
        with page.expect_navigation() as navigation:
            page.click("#go")
        response = navigation.value
        assert response is not None and response.status == 401
        assert response.headers["www-authenticate"].startswith("FormLogin ")
        assert "set-cookie" not in response.all_headers()
        page.wait_for_load_state("load")
        assert "JSESSIONID" not in {c["name"] for c in context.cookies(live_server.base_url)}
        # With the visitor's own session: it stays, and stays the visitor's.
        login = context.request.post(
            f"{live_server.base_url}/j_service_security_check",
            form={"j_username": BASIC[0], "j_password": BASIC[1]},
        )
        assert login.status == 200
        own = {c["name"]: c["value"] for c in context.cookies(live_server.base_url)}
        page.goto(f"{site}/index.html")
        with page.expect_navigation() as navigation:
            page.click("#go")
        assert navigation.value is not None and "set-cookie" not in navigation.value.all_headers()
        after = {c["name"]: c["value"] for c in context.cookies(live_server.base_url)}
        assert after.get("JSESSIONID") == own["JSESSIONID"]
        current = context.request.get(f"{live_server.base_url}/api/administration/users/current")
        assert current.status == 200 and current.json()["login"] == BASIC[0]
    finally:
        context.close()
