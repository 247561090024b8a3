"""What one browser keeps between users, and who may frame the interface (issue 22, findings 5 and 8), in a
real headless Chromium against a live `blockrepo serve --demo`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.test_web_interface import (  # noqa: F401 (fixtures)
    DEMO_PASSWORD,
    TIMEOUT_MS,
    api,
    find,
    log_in,
    server,
    shoot,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

FRAMED_PATHS = ("/", "/web/index.html", "/api/7_4/", "/api/7_4/assets/oauth2-redirect.html")


@pytest.fixture
def context_page(browser: Browser, server: Any) -> Iterator[Page]:  # noqa: F811
    """One page of one browser context (one cache, one cookie jar) for the whole test."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=server.base_url)
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def test_the_next_user_of_the_browser_never_sees_the_last_ones_data(
    context_page: Page,
    api: httpx.Client,  # noqa: F811
) -> None:
    page = context_page
    erp = find(api, "InformationSystem", "ERP")
    assert erp["Annual costs"], "the demo's ERP has annual costs"
    url = f"/api/element/InformationSystem/{erp['id'][0]}"
    seen: list[tuple[str, int, bytes]] = []

    def keep(response: Response) -> None:
        if response.url.endswith(url):
            seen.append((response.request.headers.get("if-none-match", ""), response.status, response.body()))

    def is_the_element(response: Response) -> bool:
        return response.url.endswith(url) and response.status < 400  # not a 401 before the login

    page.on("response", keep)
    # The page may show the element before Playwright hands its response to `keep`: wait for the event.
    with page.expect_response(is_the_element):
        page.goto(f"/#/element/InformationSystem/{erp['id'][0]}")
        log_in(page, "system", ADMIN_PASSWORD)
        page.locator('[data-property="Annual costs"]').wait_for()
    assert seen and b"Annual costs" in seen[-1][2]
    page.get_by_role("button", name="Log out").click()
    page.locator("#j_username").wait_for()

    seen.clear()
    log_in(page, "anna", DEMO_PASSWORD)
    with page.expect_response(is_the_element):
        page.evaluate("route => { location.hash = route; }", f"#/element/InformationSystem/{erp['id'][0]}")
        page.locator("h1", has_text="ERP").wait_for()
        page.locator('[data-property="Criticality"]').wait_for()
    shoot(page, "isolation-anna-after-system")
    assert "Annual costs" not in page.content()
    assert seen, "anna's page read the element"
    assert all(b"Annual costs" not in body for _, _, body in seen), seen
    # Her browser asked afresh, or with a tag of its own: never with system's.
    system_tag = api.get(url).headers["etag"]
    assert all(sent != system_tag for sent, _, _ in seen)


@pytest.fixture
def framing_site(server: Any) -> Iterator[str]:  # noqa: F811
    """A page on another loopback port that frames each page of the application."""
    frames = "".join(
        f'<iframe src="{server.base_url}{path}" width="400" height="300"></iframe>' for path in FRAMED_PATHS
    )
    body = f"<!doctype html><html><body><h1>framing site</h1>{frames}</body></html>".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{site.server_address[1]}/"
    site.shutdown()
    site.server_close()


def test_another_site_cannot_frame_any_page(context_page: Page, server: Any, framing_site: str) -> None:  # noqa: F811
    page = context_page
    refusals: list[str] = []

    def keep(message: ConsoleMessage) -> None:
        if "frame-ancestors" in message.text:
            refusals.append(message.text)

    page.on("console", keep)
    page.goto(framing_site)
    page.locator("h1", has_text="framing site").wait_for()
    page.wait_for_function(f"() => document.querySelectorAll('iframe').length === {len(FRAMED_PATHS)}")
    page.wait_for_timeout(1500)  # the frames' navigations end (refused or not) after the parent's load
    shoot(page, "isolation-framing-site")
    # A refused frame holds the browser's error page instead: none holds a page of the application.
    children = [frame.url for frame in page.main_frame.child_frames]
    assert len(children) == len(FRAMED_PATHS)
    loaded = [url for url in children if url.startswith(server.base_url)]
    assert loaded == [], loaded
    assert all(url.startswith("chrome-error://") for url in children), children
    assert len(refusals) == len(FRAMED_PATHS), refusals
