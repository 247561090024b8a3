"""Page load times of the web interface, measured in headless Chromium (Navigation Timing and the page's own
performance mark when a view has drawn its data) against a repository of 100,000 information systems.

    python bench/web_pages.py                       # SQLite (a temporary file), 100,000 elements
    python bench/web_pages.py --elements 20000      # a quicker run
    python bench/web_pages.py --database postgresql://postgres@127.0.0.1:5432/postgres

It loads the data as bench/massdata_scale.py does (bulk API, 10,000 elements a request), logs in through the
login page, then opens each page `--repeat` times as a fresh document load (the session cookie kept) and
reports the median and p95 of:
- document: navigation start to the load event (HTML, CSS, JS modules);
- view drawn: navigation start to the `blockrepo:view-rendered` mark, i.e. the page's API requests answered
  and their data on screen (for the list: the first page of 50 with `count=true` over all elements).
Inside the list it also times a name search and the next page (request to redraw, on the page's clock).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness import scratch_database
from massdata_scale import PASSWORD, TYPE, argument_parser, load, running, settle
from playwright.sync_api import Page, sync_playwright
from rich.console import Console
from rich.table import Table

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
RENDERED = "blockrepo:view-rendered"
NAVIGATION = "JSON.stringify(performance.getEntriesByType('navigation')[0])"


def last_render_ms(page: Page) -> float:
    return float(page.evaluate(f"performance.getEntriesByName('{RENDERED}').at(-1).startTime"))


def open_fresh(page: Page, url: str, ready: str) -> tuple[float, float]:
    """(document load ms, view drawn ms) of one fresh load of `url`."""
    page.goto("about:blank")
    page.goto(url)
    page.locator(ready).wait_for()
    page.wait_for_load_state("load")
    navigation = page.evaluate(f"JSON.parse({NAVIGATION})")
    return float(navigation["loadEventEnd"]), last_render_ms(page)


def in_page_ms(page: Page, action: Callable[[], None], ready: Callable[[], None]) -> float:
    """Milliseconds on the page's clock from just before `action` to the view's next render mark."""
    before = float(page.evaluate("performance.now()"))
    action()
    ready()
    return last_render_ms(page) - before


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]
    return f"{statistics.median(ordered):,.0f} ms / {p95:,.0f} ms"


def run(database: str | None, elements: int, repeat: int, console: Console) -> list[tuple[str, str]]:
    figures: list[tuple[str, str]] = []
    with ExitStack() as stack:
        url = stack.enter_context(scratch_database(database, "web_pages"))
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="blockrepo-web-")))
        server = stack.enter_context(running(url, logs, "web"))
        console.print(f"loading {elements:,} {TYPE} elements …")
        load(server, elements)
        settle(url)
        middle = f'@name = "System {elements // 2:07d}"'
        found = server.client.get(f"/api/massdata/{TYPE}", params={"limit": 1, "filter": middle}).json()
        element_id = found["items"][0]["id"][0]
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        page = browser.new_page(viewport={"width": 1280, "height": 860}, base_url=server.base_url)
        page.set_default_timeout(120_000)
        page.goto("/")
        page.fill("#j_username", "system")
        page.fill("#j_password", PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.locator(".type-card").first.wait_for()

        pages = {
            "element page": (f"/#/element/{TYPE}/{element_id}", "main[data-page=element] h1"),
            f"list of {elements:,} elements (first 50, with total)": (
                f"/#/list/{TYPE}",
                "#element-table tbody tr >> nth=0",
            ),
        }
        for label, (address, ready) in pages.items():
            documents, views = [], []
            for _ in range(repeat):
                document, view = open_fresh(page, address, ready)
                documents.append(document)
                views.append(view)
            figures.append((f"{label}: document loaded (median / p95)", summary(documents)))
            figures.append((f"{label}: view drawn (median / p95)", summary(views)))

        searches, next_pages = [], []
        for n in range(repeat):
            open_fresh(page, f"/#/list/{TYPE}", "#element-table tbody tr >> nth=0")
            name = f"system {n * 997 % elements:07d}"

            def search(name: str = name) -> None:
                page.fill("#list-search", name)
                page.get_by_role("button", name="Apply").click()

            searches.append(
                in_page_ms(
                    page,
                    search,
                    lambda: page.locator("#list-filter", has_text="containsIgnoreCase").wait_for(),
                )
            )
            page.locator("#element-table tbody tr").first.wait_for()
            open_fresh(page, f"/#/list/{TYPE}", "#element-table tbody tr >> nth=0")
            status = page.locator("#list-status").inner_text()
            page.click("#page-next")
            page.locator("#list-status", has_text="51\u2013100").wait_for()
            # The list times its own request and redraw (it does not re-render the whole view).
            next_pages.append(float(page.locator("#list-status").inner_text().rsplit("·", 1)[1].split()[0]))
            assert status != page.locator("#list-status").inner_text()
        figures.append(("list: case-insensitive name search, view drawn (median / p95)", summary(searches)))
        figures.append(("list: next page, request and redraw (median / p95)", summary(next_pages)))
    return figures


def main() -> int:
    parser = argument_parser(__doc__, 100_000)
    parser.add_argument("--repeat", type=int, default=10, help="loads of each page")
    args = parser.parse_args()
    console = Console(width=140)
    figures = run(args.database, args.elements, args.repeat, console)
    table = Table(title=f"Web interface page loads ({args.elements:,} elements, headless Chromium)")
    table.add_column("page")
    table.add_column("time", justify="right")
    for label, value in figures:
        table.add_row(label, value)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
