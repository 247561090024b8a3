"""The web interface in a real headless Chromium (Playwright) against a live `blockrepo serve --demo`: login,
browse, search, edit, conflicts, history, as-of, diagrams and what a reader does not see. Every page is
saved as a screenshot under artifacts/screenshots/."""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest
from openpyxl import load_workbook
from playwright.sync_api import Browser, Page, expect

from tests.conftest import ADMIN_PASSWORD, cloned_database
from tests.e2e.conftest import LiveServer, launch_server

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

DEMO_PASSWORD = "demo-password-web"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
TIMEOUT_MS = 20_000  # generous: the machine running the tests may be busy
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def server(template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One demo server for the module (starting one costs more than most tests): each test changes other
    elements and reads what it expects from the API, so the order of the tests does not matter."""
    directory = tmp_path_factory.mktemp("web")
    with cloned_database(template_database, directory) as url:
        # Loading the demo into PostgreSQL on a busy machine can take most of a minute.
        live = launch_server(
            url, directory, "--demo", env={"BLOCKREPO_DEMO_PASSWORD": DEMO_PASSWORD}, startup_seconds=240
        )
        yield live
        live.stop()


@pytest.fixture
def api(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD), timeout=30) as client:
        yield client


@pytest.fixture
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=server.base_url)
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"script errors in the page: {errors}"


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def log_in(page: Page, user: str = "system", password: str = ADMIN_PASSWORD) -> None:
    page.fill("#j_username", user)
    page.fill("#j_password", password)
    page.get_by_role("button", name="Log in").click()
    page.locator("#topbar").wait_for(state="visible")


def find(api: httpx.Client, type_name: str, name: str) -> dict[str, Any]:
    response = api.get(f"/api/massdata/{type_name}", params={"filter": f'@name = "{name}"'})
    assert response.status_code == 200, response.text
    (item,) = response.json()["items"]
    return item  # type: ignore[no-any-return]


def all_items(api: httpx.Client, type_name: str, **params: str) -> list[dict[str, Any]]:
    response = api.get(f"/api/massdata/{type_name}", params={"limit": "1000", **params})
    assert response.status_code == 200, response.text
    assert response.json()["nextCursor"] is None
    return response.json()["items"]  # type: ignore[no-any-return]


def open_hash(page: Page, route: str) -> None:
    page.evaluate("route => { location.hash = route; }", route)


def test_login_browse_and_search(page: Page, server: LiveServer, api: httpx.Client) -> None:
    # A browser gets the page, not a Basic prompt; API clients still get JSON and the Basic challenge.
    front = httpx.get(f"{server.base_url}/")
    assert front.status_code == 200 and front.headers["content-type"].startswith("text/html")
    assert "www-authenticate" not in front.headers
    unauthenticated = httpx.get(f"{server.base_url}/api/metamodel")
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"].startswith("Basic")
    assert unauthenticated.headers["content-type"] == "application/problem+json"

    page.goto("/")
    page.locator("#j_username").wait_for()
    shoot(page, "01-login")
    page.fill("#j_username", "system")
    page.fill("#j_password", "wrong password")
    page.get_by_role("button", name="Log in").click()
    page.get_by_text("Wrong user name or password.").wait_for()
    log_in(page)

    systems = api.get("/api/massdata/InformationSystem", params={"count": "true", "limit": "1"}).json()[
        "total"
    ]
    card = page.locator('[data-count-of="InformationSystem"]')
    card.filter(has_text="elements").wait_for()
    assert card.inner_text() == f"{systems} elements"
    assert page.locator(".type-card").count() == 14
    shoot(page, "02-landscape")

    # The landscape goes to Archi as an ArchiMate model.
    with page.expect_download() as download:
        page.locator("#export-archimate").click()
    model = download.value.path().read_bytes()
    assert download.value.suggested_filename.endswith(".xml")
    assert model.count(b'xsi:type="ApplicationComponent"') == systems
    page.locator('.type-card[data-type="InformationSystem"]').click()
    page.locator("#element-table tbody tr").first.wait_for()
    assert page.locator("#element-table tbody tr").count() == systems
    # The list offers its type as a workbook to edit in Excel.
    with page.expect_download() as download:
        page.locator("#export-workbook").click()
    assert download.value.suggested_filename.endswith(".xlsx")
    workbook = load_workbook(io.BytesIO(download.value.path().read_bytes()), read_only=True)
    assert workbook.sheetnames[:2] == ["Read me", "Information System"]  # display names
    assert len(list(workbook["Information System"].iter_rows(min_row=2))) == systems
    workbook.close()
    page.fill("#list-search", "erp")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#list-filter")).to_contain_text("erp")
    page.locator("#list-status").filter(has_text="of").wait_for()
    names = page.locator("#element-table tbody tr td:first-child").all_inner_texts()
    expected = sorted(
        i["name"][0] for i in all_items(api, "InformationSystem") if "erp" in i["name"][0].lower()
    )
    assert sorted(names) == expected and "ERP" in names and "Legacy ERP" in names

    # A filter on an attribute, sorted Z-A.
    page.fill("#list-search", "")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#list-filter")).not_to_contain_text("erp")
    page.select_option("#filter-property", "Criticality")
    page.select_option("#filter-value", "high")
    page.click("#filter-add")
    expect(page.locator("#list-filter")).to_contain_text("Criticality")
    page.select_option("#list-sort", "-name")
    expect(page).to_have_url(re.compile("sort=-name"))
    page.locator("#list-status").filter(has_text="of").wait_for()
    high = sorted(
        (i["name"][0] for i in all_items(api, "InformationSystem", filter='@Criticality = "high"')),
        reverse=True,
    )
    assert page.locator("#element-table tbody tr td:first-child").all_inner_texts() == high
    shoot(page, "03-list")

    # One search box across all types: a group for each type with a match in a name or description.
    expected_groups = []
    for type_name in (
        t["name"] for t in sorted(api.get("/api/metamodel").json()["types"], key=lambda t: t["position"])
    ):
        predicate = '@name.containsIgnoreCase("order") | @description.containsIgnoreCase("order")'
        if all_items(api, type_name, filter=predicate, fields="name"):
            expected_groups.append(type_name)
    page.fill("#global-search-input", "order")
    page.press("#global-search-input", "Enter")
    page.locator(".search-group").first.wait_for()
    groups = page.locator(".search-group").evaluate_all("nodes => nodes.map(n => n.dataset.type)")
    assert groups == expected_groups and "BusinessObject" in groups
    shoot(page, "04-search")

    page.get_by_role("button", name="Log out").click()
    page.locator("#j_username").wait_for()
    assert api.get("/api/metamodel").status_code == 200


def test_edit_with_a_validation_error_then_success(page: Page, api: httpx.Client) -> None:
    erp = find(api, "InformationSystem", "ERP")
    writes: list[dict[str, str]] = []
    page.on("request", lambda r: writes.append(r.headers) if r.method != "GET" and "/api/" in r.url else None)
    page.goto(f"/#/element/InformationSystem/{erp['id'][0]}")
    log_in(page)
    page.locator("h1", has_text="ERP").wait_for()
    assert page.locator('[data-property="Annual costs"]').inner_text() == "850,000 EUR"
    assert page.locator("#element-revision").inner_text() == f"Revision {erp['revision'][0]}"
    shoot(page, "05-element")

    # Relations are links.
    page.locator('[data-end="projects"] a', has_text="S/4HANA migration").click()
    page.locator("h1", has_text="S/4HANA migration").wait_for()
    page.go_back()
    page.locator("h1", has_text="ERP").wait_for()

    page.click("#edit-element")
    field = page.locator('[data-field="Annual costs"]')
    field.locator("input").fill("-5")
    page.select_option('[data-field="Criticality"] select', "medium")
    shoot(page, "06-edit")
    page.click("#save-element")
    field.locator(".field-error").filter(has_text=re.compile(".+")).wait_for()
    assert "invalid" in (field.get_attribute("class") or "")
    assert field.locator("input").get_attribute("aria-invalid") == "true"
    shoot(page, "07-validation-error")
    assert api.get(f"/api/element/InformationSystem/{erp['id'][0]}").json()["Annual costs"] == [850000]

    field.locator("input").fill("900000")
    page.click("#save-element")
    page.locator('[data-property="Annual costs"]', has_text="900,000 EUR").wait_for()
    stored = api.get(f"/api/element/InformationSystem/{erp['id'][0]}").json()
    assert stored["Annual costs"] == [900000] and stored["Criticality"] == ["medium"]
    assert stored["revision"] == [erp["revision"][0] + 1]
    assert page.locator("#element-revision").inner_text() == f"Revision {erp['revision'][0] + 1}"
    # Every write carried the CSRF token of the session.
    assert len(writes) == 2 and all(w.get("x-xsrf-token") for w in writes)


def test_conflict_from_a_second_session(page: Page, server: LiveServer, api: httpx.Client) -> None:
    crm = find(api, "InformationSystem", "CRM")
    url = f"/api/element/InformationSystem/{crm['id'][0]}"
    page.goto(f"/#/element/InformationSystem/{crm['id'][0]}/edit")
    log_in(page)
    page.locator("#save-element").wait_for()

    # Someone else saves first, in a session of their own.
    with httpx.Client(base_url=server.base_url, timeout=30) as other:
        login = other.post(
            "/j_service_security_check", data={"j_username": "system", "j_password": ADMIN_PASSWORD}
        )
        assert login.status_code == 200
        changed = other.put(
            url,
            json={"description": ["Changed elsewhere"]},
            headers={"X-XSRF-TOKEN": other.cookies["XSRF-TOKEN"]},
        )
        assert changed.status_code == 200, changed.text

    page.locator('[data-field="version"] input').fill("2027")
    page.click("#save-element")
    conflict = page.locator("#conflict .conflict")
    conflict.wait_for()
    assert "Changed elsewhere" in conflict.locator('tr[data-property="description"]').inner_text()
    shoot(page, "08-conflict")
    assert api.get(url).json()["version"] == crm["version"]

    page.click("#conflict-overwrite")
    expect(page.locator("h1")).to_have_text("CRM")
    expect(page.locator("#element-revision")).to_have_text(f"Revision {crm['revision'][0] + 2}")
    stored = api.get(url).json()
    assert stored["version"] == ["2027"] and stored["description"] == ["Changed elsewhere"]


def test_history_and_as_of(page: Page, api: httpx.Client) -> None:
    shop = find(api, "InformationSystem", "Online Shop")
    url = f"/api/element/InformationSystem/{shop['id'][0]}"
    before = api.get("/api/history", params={"sinceRevision": "0", "limit": "1000"}).json()["items"][-1][
        "revision"
    ]
    assert api.put(url, json={"name": ["Web Shop"], "Criticality": ["low"]}).status_code == 200

    page.goto(f"/#/history/InformationSystem/{shop['id'][0]}")
    log_in(page)
    latest = page.locator(".changeset").first
    latest.wait_for()
    name_row = latest.locator('tr[data-property="name"]')
    assert name_row.locator(".old").inner_text() == "Online Shop"
    assert name_row.locator(".new").inner_text() == "Web Shop"
    assert latest.locator('tr[data-property="Criticality"] .new').inner_text() == "low"
    shoot(page, "09-history")

    # The element as it stood before the rename, from the history's link and from a typed revision.
    page.locator(".changeset").last.get_by_role("link", name="View as of this revision").click()
    page.locator("#asof-banner").wait_for()
    assert page.locator("h1").inner_text() == "Online Shop"
    assert page.locator("#edit-element").count() == 0
    shoot(page, "10-element-as-of")
    page.fill("#element-asof", "")
    page.click("text=Show")
    page.locator("h1", has_text="Web Shop").wait_for()
    page.fill("#element-asof", str(before))
    page.click("text=Show")
    page.locator("h1", has_text="Online Shop").wait_for()

    # The list as of that revision.
    open_hash(page, f"#/list/InformationSystem?q=shop&asOf={before}")
    page.locator("#element-table tbody tr").first.wait_for()
    assert page.locator("#element-table tbody tr td:first-child").all_inner_texts() == ["Online Shop"]
    open_hash(page, "#/list/InformationSystem?q=shop")
    expect(page).not_to_have_url(re.compile("asOf"))
    page.locator("#element-table td a", has_text="Web Shop").wait_for()


def test_diagrams_render_the_right_number_of_nodes(page: Page, api: httpx.Client) -> None:
    systems = all_items(api, "InformationSystem", fields="name,runtimePeriod")
    flows = all_items(api, "InformationFlow", fields="sourceSystem,targetSystem")
    projects = all_items(api, "Project", fields="name,runtimePeriod")
    page.goto("/#/diagram/flows")
    log_in(page)
    graph = page.locator("#flow-graph[data-node-count]")
    graph.wait_for()
    assert int(graph.get_attribute("data-node-count") or 0) == len(systems)
    assert int(graph.get_attribute("data-edge-count") or 0) == sum(
        1 for f in flows if f["sourceSystem"] and f["targetSystem"]
    )
    with page.expect_download() as download:
        page.click("#export-svg")
    assert download.value.suggested_filename == "information-flows.svg"
    svg = Path(download.value.path()).read_text()
    assert svg.startswith("<svg") and svg.count("<rect") >= len(systems)
    shoot(page, "11-information-flows")
    # The keyboard alternative: every flow and system as a link reached by Tab, opened with Enter.
    expect(page.locator("#flow-table tbody tr")).to_have_count(len(flows))
    expect(page.locator("#flow-systems a")).to_have_count(len(systems))
    first_system = page.locator("#flow-table tbody tr td a").first
    name = first_system.inner_text()
    for _ in range(200):
        page.keyboard.press("Tab")
        if first_system.evaluate("(link) => link === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reached the first system link of the flow table")
    page.keyboard.press("Enter")
    page.locator("h1", has_text=name).wait_for()
    page.go_back()

    erp = api.get(f"/api/element/InformationSystem/{find(api, 'InformationSystem', 'ERP')['id'][0]}").json()
    types = {t["name"]: t for t in api.get("/api/metamodel").json()["types"]}

    def neighbours(type_name: str, element: dict[str, Any]) -> set[tuple[str, int]]:
        found = {
            (end["type"], ref["id"])
            for end in types[type_name]["relationEnds"]
            for ref in element[end["name"]]
        }
        found |= {(type_name, ref["id"]) for ref in element["parent"] + element["children"]}
        return found

    one_hop = neighbours("InformationSystem", erp) | {("InformationSystem", erp["id"][0])}
    two_hops = set(one_hop)
    for type_name, element_id in one_hop:
        two_hops |= neighbours(type_name, api.get(f"/api/element/{type_name}/{element_id}").json())

    open_hash(page, f"#/diagram/neighbourhood/InformationSystem/{erp['id'][0]}")
    neighbourhood = page.locator("#neighbourhood-graph[data-node-count]")
    neighbourhood.wait_for()
    assert int(neighbourhood.get_attribute("data-node-count") or 0) == len(one_hop)
    assert page.locator("#node-list li").count() == len(one_hop)
    shoot(page, "12-neighbourhood")
    page.click("#expand-hop")
    expect(neighbourhood).to_have_attribute("data-node-count", str(len(two_hops)))
    expect(page.locator("#expand-hop")).to_be_disabled()

    open_hash(page, "#/diagram/roadmap")
    roadmap = page.locator("svg#roadmap")
    roadmap.wait_for()
    with_period = [i for i in systems + projects if i["runtimePeriod"]]
    assert int(roadmap.get_attribute("data-bar-count") or 0) == len(with_period)
    assert roadmap.locator("rect.bar").count() == len(with_period)
    with page.expect_download() as png:
        page.click("#export-png")
    assert Path(png.value.path()).read_bytes().startswith(b"\x89PNG")
    shoot(page, "13-roadmap")


# The colour of an element's text and the background it is drawn on (its own, or the first ancestor's that
# is not transparent), as computed by the browser.
COLOURS_OF = """selector => {
    const element = document.querySelector(selector);
    let node = element;
    let background = "rgba(0, 0, 0, 0)";
    while (node && /^rgba\\(.*, 0\\)$|^transparent$/.test(background)) {
        background = getComputedStyle(node).backgroundColor;
        node = node.parentElement;
    }
    return [getComputedStyle(element).color, background];
}"""


def luminance(css_colour: str) -> float:
    red, green, blue = (int(part) / 255 for part in re.findall(r"[\d.]+", css_colour)[:3])

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.03928 else ((channel + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(text: str, background: str) -> float:
    high, low = sorted((luminance(text), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def first_pixel(png: bytes) -> tuple[int, ...]:
    """The colour of a PNG's top left pixel (8-bit RGB or RGBA): no filter changes the first byte of a row's
    first pixel, so it is read from the inflated data as stored."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    chunks: dict[bytes, list[bytes]] = {}
    at = 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        chunks.setdefault(kind, []).append(png[at + 8 : at + 8 + length])
        at += 12 + length
    bit_depth, colour_type = chunks[b"IHDR"][0][8], chunks[b"IHDR"][0][9]
    assert bit_depth == 8 and colour_type in (2, 6)
    pixels = zlib.decompress(b"".join(chunks[b"IDAT"]))
    return tuple(pixels[1:4])


def test_dark_mode_follows_the_system_and_keeps_text_readable(page: Page, api: httpx.Client) -> None:
    parts = {
        "body": "body",
        "panel": "main .panel",
        "input": "#list-search",
        "search": "#global-search-input",
        "table heading": "#element-table th",
        "table cell": "#element-table tbody td",
    }
    page.goto("/#/list/InformationSystem")
    log_in(page)
    seen: dict[str, dict[str, list[str]]] = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#element-table tbody tr").first.wait_for()
        seen[scheme] = {name: page.evaluate(COLOURS_OF, selector) for name, selector in parts.items()}
        for name, (text, background) in seen[scheme].items():
            assert contrast(text, background) >= 4.5, (scheme, name, text, background)
        shoot(page, f"30-list-{scheme}")
    for name in parts:
        assert seen["dark"][name] != seen["light"][name], name
        assert luminance(seen["dark"][name][1]) < luminance(seen["light"][name][1]), name
    assert luminance(seen["dark"]["body"][1]) < 0.05

    # The diagrams in dark: the canvas dark on screen, the exports light so that they print well.
    open_hash(page, "#/diagram/flows")
    graph = page.locator("#flow-graph[data-node-count]")
    graph.wait_for()
    assert luminance(page.evaluate(COLOURS_OF, "#flow-graph")[1]) < 0.05
    shoot(page, "31-information-flows-dark")
    svg = exported_svg(page)
    assert re.search(r'<rect [^>]*fill="#fff"', svg)
    with page.expect_download() as png:
        page.click("#export-png")
    assert first_pixel(Path(png.value.path()).read_bytes()) == (255, 255, 255)
    assert luminance(page.evaluate(COLOURS_OF, "#flow-graph")[1]) < 0.05
    open_hash(page, "#/diagram/roadmap")
    page.locator("svg#roadmap").wait_for()
    canvas = page.evaluate("() => getComputedStyle(document.querySelector('#roadmap .canvas')).fill")
    assert luminance(canvas) < 0.05
    name, _ = page.evaluate(COLOURS_OF, "#roadmap .row-name")
    assert contrast(name, canvas) >= 4.5
    shoot(page, "32-roadmap-dark")
    exported = exported_svg(page)
    assert re.search(r'<rect [^>]*fill="#fff" class="canvas"', exported), exported[:400]

    # A dialog, then the banner of the scenario it makes, and a toast; the scenario closed again after.
    open_hash(page, "#/scenarios")
    page.locator("h1", has_text="Scenarios").wait_for()
    menu = page.locator("#scenario-menu")
    menu.locator("summary").click()
    menu.get_by_role("button", name="New scenario…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("Dark mode probe")
    for selector in ("dialog[open]", "dialog[open] input"):
        text, background = page.evaluate(COLOURS_OF, selector)
        assert luminance(background) < 0.05 and contrast(text, background) >= 4.5, selector
    shoot(page, "33-dialog-dark")
    dialog.get_by_role("button", name="Create").click()
    expect(page.locator("#scenario-banner-name")).to_have_text("Dark mode probe")
    try:
        text, background = page.evaluate(COLOURS_OF, "#scenario-banner p")
        assert contrast(text, background) >= 4.5
        page.evaluate("() => document.getElementById('toast').classList.add('shown')")
        page.evaluate("() => { document.getElementById('toast').textContent = 'Saved'; }")
        text, background = page.evaluate(COLOURS_OF, "#toast")
        assert contrast(text, background) >= 4.5 and luminance(background) > 0.5
        shoot(page, "34-scenario-banner-dark")
    finally:
        (key,) = [s["key"] for s in api.get("/api/scenarios").json() if s["name"] == "Dark mode probe"]
        assert api.post(f"/api/scenarios/{key}/close").status_code == 200


def exported_drawio(page: Page, name: str) -> ElementTree.Element:
    """The draw.io file the page's export button downloads, parsed; checked to be the uncompressed frame."""
    with page.expect_download() as download:
        page.click("#export-drawio")
    assert download.value.suggested_filename == name
    root = ElementTree.fromstring(Path(download.value.path()).read_bytes())
    assert root.tag == "mxfile"
    cells = root.findall("./diagram/mxGraphModel/root/mxCell")
    assert [(c.get("id"), c.get("parent")) for c in cells[:2]] == [("0", None), ("1", "0")]
    ids = [cell.get("id") for cell in cells]
    assert len(set(ids)) == len(ids)
    return root


def test_the_diagrams_export_draw_io_files_with_what_is_on_screen(page: Page, api: httpx.Client) -> None:
    systems = all_items(api, "InformationSystem", fields="name,status,runtimePeriod")
    page.goto("/#/diagram/flows")
    log_in(page)
    graph = page.locator("#flow-graph[data-node-count]")
    graph.wait_for()
    nodes = int(graph.get_attribute("data-node-count") or 0)
    edges = int(graph.get_attribute("data-edge-count") or 0)
    assert nodes == len(systems) and edges > 0
    root = exported_drawio(page, "information-flows.drawio")
    cells = root.findall("./diagram/mxGraphModel/root/mxCell")
    vertices = {cell.get("id"): cell for cell in cells if cell.get("vertex") == "1"}
    links = [cell for cell in cells if cell.get("edge") == "1"]
    assert (len(vertices), len(links)) == (nodes, edges)
    assert all(link.get("source") in vertices and link.get("target") in vertices for link in links)
    assert sorted(cell.get("value") or "" for cell in vertices.values()) == sorted(
        system["name"][0] for system in systems
    )
    # Each box where the layout put it, in the colour of the system's status as drawn.
    erp = next(cell for cell in vertices.values() if cell.get("value") == "ERP")
    status = next(system["status"] for system in systems if system["name"][0] == "ERP")
    colours = {"CURRENT": "#2f7d4f", "PLANNED": "#2b6cb0", "TARGET": "#805ad5", "INACTIVE": "#8a94a6"}
    colour = colours[status[0]] if status else "#1f4e79"
    assert f"fillColor={colour};" in (erp.get("style") or "")
    geometries = [cell.find("mxGeometry") for cell in vertices.values()]
    places = {(g.get("x"), g.get("y")) for g in geometries if g is not None}
    assert len(places) == nodes

    open_hash(page, "#/diagram/roadmap")
    roadmap = page.locator("svg#roadmap")
    roadmap.wait_for()
    bars = int(roadmap.get_attribute("data-bar-count") or 0)
    cells = exported_drawio(page, "roadmap.drawio").findall("./diagram/mxGraphModel/root/mxCell")
    assert sum(1 for cell in cells if cell.get("vertex") == "1") == bars > 0


def projected(api: httpx.Client, type_name: str, at: str, scenarios: str) -> list[dict[str, Any]]:
    """Every element of a type on a day with the scenarios, as GET /api/projection pages it."""
    items: list[dict[str, Any]] = []
    params = {"at": at, "type": type_name, "scenarios": scenarios, "fields": "name", "limit": "1000"}
    while True:
        response = api.get("/api/projection", params=params)
        assert response.status_code == 200, response.text
        items.extend(response.json()["items"])
        if response.json()["nextCursor"] is None:
            return items
        params["cursor"] = response.json()["nextCursor"]


def exported_svg(page: Page) -> str:
    with page.expect_download() as download:
        page.click("#export-svg")
    return Path(download.value.path()).read_text()


def marked_node(svg: str, mark: str, name: str) -> bool:
    """Whether the exported graph draws the node `name` with the mark (its box, then its label)."""
    box = rf'<rect[^>]*data-mark="{mark}"[^>]*?(?:/>|></rect>)'
    return re.search(box + rf"<text[^>]*>{re.escape(name)}</text>", svg) is not None


def test_the_diagrams_on_a_planned_date_and_two_dates_compared(page: Page, api: httpx.Client) -> None:
    def create(type_name: str, body: dict[str, Any], scenario: str | None = None) -> int:
        params = {} if scenario is None else {"scenario": scenario}
        made = api.post(f"/api/element/{type_name}", json=body, params=params)
        assert made.status_code == 201, made.text
        return int(made.json()["id"][0])

    # A scenario effective in 2031 adds a system (running from then) and a flow to it from today's anchor.
    anchor = create("InformationSystem", {"name": ["Diagram plan anchor"]})
    made = api.post("/api/scenarios", json={"name": "Diagram plan lake", "effectiveDate": "2031-01-01"})
    assert made.status_code == 201, made.text
    key = made.json()["key"]
    lake_period = [{"start": "2031-01-01", "end": None}]
    create("InformationSystem", {"name": ["Diagram plan lake"], "runtimePeriod": lake_period}, key)
    feed = {"name": ["Diagram plan feed"], "sourceSystem": [{"id": anchor}], "targetSystem": []}
    lake = projected(api, "InformationSystem", "2031-06-01", key)
    (lake_id,) = [item["id"][0] for item in lake if item["name"] == ["Diagram plan lake"]]
    create("InformationFlow", {**feed, "targetSystem": [{"id": lake_id}]}, key)

    page.goto("/#/diagram/flows")
    log_in(page)
    graph = page.locator("#flow-graph[data-node-count]")
    graph.wait_for()
    today_nodes = graph.get_attribute("data-node-count")
    expect(page.locator("#flow-systems li", has_text="Diagram plan lake")).to_have_count(0)

    # The flow graph on a date after the scenario's, with the scenario chosen in the Plan control.
    form = page.locator("#plan-form")
    form.get_by_label("As on").fill("2031-06-01")
    form.get_by_label(re.compile("Diagram plan lake")).check()
    form.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(rf"at=2031-06-01.*scenarios={key}"))
    page.locator("#plan-notice").wait_for()
    graph = page.locator("#flow-graph[data-node-count]")
    expect(graph).to_have_attribute("data-node-count", str(len(lake)))
    expect(page.locator("#flow-systems li", has_text="Diagram plan lake")).to_have_count(1)
    expect(page.locator("#flow-table tbody tr", has_text="Diagram plan feed")).to_have_count(1)
    assert ">Diagram plan lake</text>" in exported_svg(page)
    expect(page.locator(f"#plan-scenario-{key}")).to_be_checked()

    # Compared with a date before it: the new system and flow are marked added, in the graph and its export.
    form = page.locator("#plan-form")
    form.get_by_label("Compare with (optional)").fill("2030-06-01")
    form.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"compare=2030-06-01"))
    page.locator("#mark-legend").wait_for()
    expect(page.locator('#flow-systems li[data-mark="added"]', has_text="Diagram plan lake")).to_have_count(1)
    expect(page.locator('#flow-table tr[data-mark="added"]', has_text="Diagram plan feed")).to_have_count(1)
    expect(
        page.locator('#flow-systems li:not([data-mark="added"])', has_text="Diagram plan anchor")
    ).to_have_count(1)
    expect(page.locator("#flow-graph")).to_have_attribute("data-added-count", re.compile(r"^([2-9]|\d{2,})$"))
    svg = exported_svg(page)
    assert marked_node(svg, "added", "Diagram plan lake"), svg[:2000]
    assert not marked_node(svg, "added", "Diagram plan anchor")
    shoot(page, "16-information-flows-compared")

    # The link reproduces the view.
    page.reload()
    expect(page.locator('#flow-systems li[data-mark="added"]', has_text="Diagram plan lake")).to_have_count(1)
    expect(page.locator("#plan-compare")).to_have_value("2030-06-01")
    query = page.url.split("?", 1)[1]

    # The neighbourhood and the roadmap with the same plan.
    open_hash(page, f"#/diagram/neighbourhood/InformationSystem/{anchor}?{query}")
    page.locator("#mark-legend").wait_for()
    expect(page.locator('#node-list li[data-mark="added"]', has_text="Diagram plan feed")).to_have_count(1)
    open_hash(page, f"#/diagram/roadmap?{query}")
    page.locator("#mark-legend").wait_for()
    expect(page.locator('svg#roadmap rect.bar.added[data-name="Diagram plan lake"]')).to_have_count(1)
    shoot(page, "17-roadmap-compared")

    # "Today" takes the plan out again.
    open_hash(page, f"#/diagram/flows?{query}")
    page.locator("#plan-notice").wait_for()
    page.locator("#plan-clear").click()
    expect(page.locator("#plan-notice")).to_have_count(0)
    expect(page.locator("#flow-graph[data-node-count]")).to_have_attribute(
        "data-node-count", today_nodes or ""
    )
    expect(page.locator("#flow-systems li", has_text="Diagram plan lake")).to_have_count(0)

    # A link to a plan whose scenario cannot be applied (gone, merged or closed) says so, with the control.
    open_hash(page, "#/diagram/flows?at=2031-06-01&scenarios=no-such-scenario")
    expect(page.locator("#plan-refused")).to_contain_text("cannot be shown")
    expect(page.locator("#plan-form #plan-at")).to_have_value("2031-06-01")


def test_reader_sees_no_finance_and_no_edit_controls(page: Page, api: httpx.Client) -> None:
    erp = find(api, "InformationSystem", "ERP")
    page.goto(f"/#/element/InformationSystem/{erp['id'][0]}")
    log_in(page, "anna", DEMO_PASSWORD)
    page.locator("h1", has_text="ERP").wait_for()
    page.locator('[data-property="Criticality"]').wait_for()
    assert "Annual costs" not in page.content()
    assert "Finance" not in page.locator(".panel h2").all_inner_texts()
    for control in ("#edit-element", "#delete-element"):
        assert page.locator(control).count() == 0
    shoot(page, "14-reader-element")

    open_hash(page, "#/list/InformationSystem")
    page.locator("h1", has_text="Information System").wait_for()
    page.locator("#element-table tbody tr").first.wait_for()
    assert page.locator("#create-element").count() == 0
    assert page.locator("#export-workbook").count() == 0  # the role Reader has no EXPORT
    open_hash(page, "#/")
    page.locator(".type-card").first.wait_for()
    assert page.locator("#export-archimate").count() == 0
    assert "Annual costs" not in page.content()

    open_hash(page, f"#/history/InformationSystem/{erp['id'][0]}")
    page.locator(".changeset").first.wait_for()
    assert "Annual costs" not in page.content()
    shoot(page, "15-reader-history")


def test_expired_session_returns_to_the_login_page_and_back(page: Page, api: httpx.Client) -> None:
    erp = find(api, "InformationSystem", "ERP")
    page.goto("/")
    log_in(page)
    page.locator(".type-card").first.wait_for()
    page.context.clear_cookies()  # the server forgets the session just the same when it expires
    open_hash(page, f"#/element/InformationSystem/{erp['id'][0]}")
    page.locator("#j_username").wait_for()
    assert "next=" in page.url
    log_in(page)
    page.locator("h1", has_text="ERP").wait_for()
    assert page.url.endswith(f"#/element/InformationSystem/{erp['id'][0]}")


def test_create_with_relation_picker_and_delete_with_children(page: Page, api: httpx.Client) -> None:
    page.goto("/#/list/BusinessProcess")
    log_in(page)
    page.click("#create-element")
    page.locator('[data-field="name"] input').fill("Returns handling")
    parent = page.locator('[data-field="parent"]')
    parent.locator("input[type=search]").fill("order to")
    parent.get_by_role("option", name="Order to cash").click()
    systems = page.locator('[data-field="informationSystems"]')
    systems.locator("input[type=search]").fill("SERVICE")
    systems.get_by_role("option", name="Service Desk").click()
    shoot(page, "16-create")
    page.click("#save-element")
    page.locator("h1", has_text="Returns handling").wait_for()
    created = find(api, "BusinessProcess", "Returns handling")
    assert [p["name"] for p in created["parent"]] == ["Order to cash"]
    assert [s["name"] for s in created["informationSystems"]] == ["Service Desk"]

    # The parent has children: deleting it needs the recursive confirmation.
    page.locator('[data-property="parent"] a').click()
    page.locator("h1", has_text="Order to cash").wait_for()
    page.click("#delete-element")
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Delete").click()
    dialog.get_by_text("Tick the box").wait_for()
    shoot(page, "17-delete")
    dialog.get_by_label(re.compile("Also delete its")).check()
    dialog.get_by_role("button", name="Delete").click()
    page.locator("h1", has_text="Business Process").wait_for()
    response = api.get("/api/massdata/BusinessProcess", params={"filter": '@name = "Returns handling"'})
    assert response.json()["items"] == []


def test_editing_keeps_the_attributes_of_kept_relations(page: Page, api: httpx.Client) -> None:
    created = api.post(
        "/api/administration/attributes",
        json={
            "name": "Usage share",
            "valueType": "text",
            "types": [],
            "relationTypes": ["BusinessProcess_InformationSystem"],
        },
    )
    assert created.status_code in (200, 201), created.text
    # An element of its own: another test of the module deletes demo processes.
    made = api.post("/api/element/BusinessProcess", json={"name": ["Relation attributes kept"]})
    assert made.status_code in (200, 201), made.text
    process = made.json()
    kept, dropped = find(api, "InformationSystem", "ERP"), find(api, "InformationSystem", "Service Desk")
    written = api.put(
        f"/api/element/BusinessProcess/{process['id'][0]}",
        json={
            "informationSystems": [
                {"id": kept["id"][0], "attributes": {"Usage share": ["most orders"]}},
                {"id": dropped["id"][0]},
            ]
        },
    )
    assert written.status_code == 200, written.text

    page.goto(f"/#/element/BusinessProcess/{process['id'][0]}/edit")
    log_in(page)
    systems = page.locator('[data-field="informationSystems"]')
    systems.get_by_role("button", name="Remove Service Desk").click()
    page.click("#save-element")
    page.locator("#element-revision").wait_for()  # the element page, after the save
    stored = api.get(f"/api/element/BusinessProcess/{process['id'][0]}").json()["informationSystems"]
    assert [(s["name"], s.get("attributes", {}).get("Usage share")) for s in stored] == [
        ("ERP", ["most orders"])
    ]


def test_history_pages_through_older_changes(page: Page, api: httpx.Client) -> None:
    created = api.post("/api/element/BusinessProcess", json={"name": ["Paged history"]})
    assert created.status_code in (200, 201), created.text
    element_id = created.json()["id"][0]
    for text in ("first", "second", "third"):
        assert (
            api.put(f"/api/element/BusinessProcess/{element_id}", json={"description": [text]}).status_code
            == 200
        )
    # Pages of two changesets instead of 200, so that four changesets need two clicks.
    page.route(
        "**/api/history/**",
        lambda route: route.continue_(url=re.sub(r"limit=\d+", "limit=2", route.request.url)),
    )
    page.goto(f"/#/history/BusinessProcess/{element_id}")
    log_in(page)
    changesets = page.locator("#history-list > li.changeset")
    expect(changesets).to_have_count(2)
    page.click("#history-older")
    expect(changesets).to_have_count(4)
    expect(page.locator("#history-older")).to_have_count(0)
    revisions = [
        int(r or 0) for r in changesets.evaluate_all("(rows) => rows.map((r) => r.dataset.revision)")
    ]
    assert revisions == sorted(revisions, reverse=True) and len(set(revisions)) == 4


def test_an_element_page_shows_a_change_someone_else_just_made(page: Page, api: httpx.Client) -> None:
    # An element of its own: the module's tests share one server.
    process = api.post("/api/element/BusinessProcess", json={"name": ["Live refresh probe"]}).json()
    path = f"/api/element/BusinessProcess/{process['id'][0]}"
    page.goto(f"/#/element/BusinessProcess/{process['id'][0]}")
    log_in(page)
    page.locator("h1", has_text="Live refresh probe").wait_for()
    revision = page.locator("#element-revision").inner_text()
    # The page listens to the change stream; another account's write shows without a reload.
    page.locator('html[data-live="open"]').wait_for(state="attached")
    changed = api.patch(path, json={"description": ["Changed in another session"]})
    assert changed.status_code == 200, changed.text
    page.locator('[data-property="description"]', has_text="Changed in another session").wait_for()
    assert page.locator("#element-revision").inner_text() != revision
    page.locator("#toast", has_text="system changed this element").wait_for()


def test_an_element_page_in_a_scenario_shows_a_change_just_written_in_the_scenario(
    page: Page, api: httpx.Client
) -> None:
    made = api.post("/api/scenarios", json={"name": "Live scenario probe"})
    assert made.status_code == 201, made.text
    scenario = made.json()
    created = api.post(
        "/api/element/BusinessProcess",
        json={"name": ["Planned live probe"]},
        params={"scenario": scenario["key"]},
    )
    assert created.status_code == 201, created.text
    element = created.json()["id"][0]
    page.goto("/")
    log_in(page)
    # The tab works in the scenario (as the switcher leaves it).
    page.evaluate("(s) => sessionStorage.setItem('blockrepo.scenario', JSON.stringify(s))", scenario)
    open_hash(page, f"#/element/BusinessProcess/{element}")
    page.locator("h1", has_text="Planned live probe").wait_for()
    page.locator('html[data-live="open"]').wait_for(state="attached")
    # Another session's write in the scenario shows without a reload.
    changed = api.patch(
        f"/api/element/BusinessProcess/{element}",
        json={"description": ["Changed in the scenario elsewhere"]},
        params={"scenario": scenario["key"]},
    )
    assert changed.status_code == 200, changed.text
    page.locator('[data-property="description"]', has_text="Changed in the scenario elsewhere").wait_for()
    page.locator("#toast", has_text="system changed this element in the scenario").wait_for()


def test_plan_in_a_scenario_settle_a_conflict_review_and_merge(
    page: Page, browser: Browser, server: LiveServer, api: httpx.Client
) -> None:
    # Elements of its own (the module's tests share one server): three systems and a domain.
    def create(type_name: str, body: dict[str, Any]) -> int:
        made = api.post(f"/api/element/{type_name}", json=body)
        assert made.status_code == 201, made.text
        return int(made.json()["id"][0])

    described = create("InformationSystem", {"name": ["Plan probe ledger"], "description": ["today"]})
    rated = create("InformationSystem", {"name": ["Plan probe billing"], "Criticality": ["high"]})
    retired = create("InformationSystem", {"name": ["Plan probe mainframe"]})
    domain = create("BusinessDomain", {"name": ["Plan probe domain"]})
    scenario_headers: list[str | None] = []
    page.on(
        "request",
        lambda r: (
            scenario_headers.append(r.headers.get("blockrepo-scenario")) if "/api/element/" in r.url else None
        ),
    )

    # A new scenario from the switcher in the top bar; the tab works in it at once.
    page.goto("/")
    log_in(page)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Scenarios").click()
    page.locator("h1", has_text="Scenarios").wait_for()
    menu = page.locator("#scenario-menu")
    menu.locator("summary").click()
    menu.get_by_role("button", name="New scenario…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("Ledger consolidation")
    dialog.get_by_label("Description").fill("Retire the mainframe, move the ledger")
    dialog.get_by_label("Effective date").fill("2027-07-01")
    dialog.get_by_role("button", name="Create").click()
    banner = page.locator("#scenario-banner")
    expect(banner.locator("#scenario-banner-name")).to_have_text("Ledger consolidation")
    expect(menu.locator("summary")).to_contain_text("Ledger consolidation")
    (key,) = [s["key"] for s in api.get("/api/scenarios").json() if s["name"] == "Ledger consolidation"]

    # Three elements and a relation changed through the interface, in the scenario only.
    open_hash(page, f"#/element/InformationSystem/{described}/edit")
    page.locator('[data-field="description"] textarea').fill("moved to the new ledger")
    picker = page.locator('[data-field="businessDomains"]')
    picker.locator("input[type=search]").fill("plan probe")
    picker.get_by_role("option", name="Plan probe domain").click()
    page.click("#save-element")
    page.locator('[data-property="description"]', has_text="moved to the new ledger").wait_for()
    open_hash(page, f"#/element/InformationSystem/{rated}/edit")
    page.select_option('[data-field="Criticality"] select', "low")
    page.click("#save-element")
    page.locator('[data-property="Criticality"]', has_text="low").wait_for()
    open_hash(page, f"#/element/InformationSystem/{retired}")
    page.locator("h1", has_text="Plan probe mainframe").wait_for()
    page.click("#delete-element")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    page.locator(".scenario-review").wait_for()  # a deletion in a scenario shows in its review
    assert scenario_headers and all(header == key for header in scenario_headers)
    # Main saw none of it.
    in_main = api.get(f"/api/element/InformationSystem/{described}").json()
    assert in_main["description"] == ["today"] and in_main["businessDomains"] == []
    assert api.get(f"/api/element/InformationSystem/{retired}").status_code == 200
    # The element's history in the scenario: its planned change first, then main's.
    open_hash(page, f"#/history/InformationSystem/{described}")
    newest = page.locator("#history-list > li.changeset").first
    expect(newest).to_have_class(re.compile(r"\bplanned\b"))
    expect(newest.locator("strong")).to_have_text(re.compile(r"Planned change \d+"))
    expect(newest.locator(".via-scenario")).to_have_text(f"in scenario {key}")
    expect(page.locator("#history-list > li.changeset").last).not_to_have_class(re.compile(r"\bplanned\b"))
    open_hash(page, f"#/scenarios/{key}")
    page.locator(".scenario-review").wait_for()

    # Main moves on meanwhile: the same field of the same element, to another value.
    assert api.patch(f"/api/element/InformationSystem/{rated}", json={"Criticality": ["medium"]}).is_success
    page.reload()
    expect(page.locator("#scenario-banner-behind")).to_have_text(re.compile(r"behind main by \d+ revision"))
    rated_panel = page.locator(f'.review-element[data-element="{rated}"]')
    row = rated_panel.locator('tr[data-field="Criticality"]')
    expect(row.locator('[data-side="base"]')).to_have_text("high")
    expect(row.locator('[data-side="main"]')).to_have_text("medium")
    expect(row.locator('[data-side="scenario"]')).to_have_text("low")
    expect(rated_panel.locator(".conflict-chip")).to_have_text("Changed on both sides")
    relation = page.locator(f'.review-element[data-element="{described}"] tr[data-field="businessDomains"]')
    expect(relation.locator('[data-side="scenario"]')).to_have_text("+ Plan probe domain")
    expect(page.locator(f'.review-element[data-element="{retired}"] .op')).to_have_text("Deleted")
    expect(page.locator("#open-conflicts")).to_have_text("1 open conflict to settle")
    shoot(page, "18-scenario-review")

    # The merge is refused while the conflict is open, and says which.
    page.click("#merge-scenario")
    page.get_by_role("dialog").get_by_role("button", name="Merge").click()
    expect(page.locator("#merge-conflicts")).to_contain_text("Plan probe billing: Criticality was changed")
    settle = page.get_by_role("group", name="Settle Criticality of Plan probe billing")
    settle.get_by_role("button", name="Take the scenario's").click()
    expect(page.locator("#open-conflicts")).to_have_text("No open conflicts")
    expect(settle.get_by_role("button", name="Take the scenario's")).to_have_attribute("aria-pressed", "true")

    # A name the scenario gives that main has taken meanwhile: settled with a new one.
    renamed = api.patch(
        f"/api/element/InformationSystem/{described}",
        json={"name": ["Plan probe general ledger"]},
        params={"scenario": key},
    )
    assert renamed.is_success, renamed.text
    create("InformationSystem", {"name": ["Plan probe general ledger"]})
    page.reload()
    ledger = page.locator(f'.review-element[data-element="{described}"]')
    expect(ledger.locator(".conflict-chip")).to_have_text("Name taken in main")
    naming = ledger.get_by_role("group", name=re.compile("^Settle name of"))
    expect(naming.locator("[data-take]")).to_have_count(1)  # main's name, or a new one
    naming.get_by_label("New name").fill("Plan probe new ledger")
    naming.get_by_role("button", name="Use this name").click()
    expect(page.locator("#open-conflicts")).to_have_text("No open conflicts")
    page.click("#merge-preview")
    expect(page.locator("#merge-preview-counts")).to_have_text(re.compile(r"\d+ to update, 1 to delete"))

    # Proposed for review by bernd (a supervisor picks him from the accounts): the merge waits for him, and
    # the owner has nothing to approve.
    status = page.locator("#scenario-review-status")
    status.get_by_role("checkbox", name="bernd").check()
    status.get_by_label("Approvals needed").fill("1")
    status.get_by_role("button", name="Propose for review").click()
    expect(status.locator("#review-state")).to_have_text(re.compile("needs 1 more approval"))
    expect(status.locator('[data-reviewer="bernd"]')).to_contain_text("not yet approved")
    expect(page.locator("#merge-scenario")).to_be_disabled()
    expect(page.locator("#merge-blocked")).to_contain_text("Waiting for the reviewers")
    assert status.locator("#approve-scenario").count() == 0
    shoot(page, "19-scenario-in-review")

    # bernd, in a browser of his own, comments on an element and approves the scenario as it is now.
    other = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=server.base_url)
    reviewer = other.new_page()
    reviewer_errors: list[str] = []
    reviewer.on("pageerror", lambda error: reviewer_errors.append(str(error)))
    try:
        reviewer.goto("/#/scenarios")
        log_in(reviewer, "bernd", DEMO_PASSWORD)
        listed = reviewer.locator(f'#scenario-table tr[data-scenario="{key}"]')
        expect(listed).to_contain_text("system")  # whose it is
        expect(listed.locator("[data-review]")).to_have_text("needs 1 more approval")
        listed.get_by_role("link", name="Ledger consolidation").click()
        reviewer.locator("h1", has_text="Ledger consolidation").wait_for()
        assert reviewer.locator("#close-scenario, #propose-review").count() == 0  # he only reviews
        billing = reviewer.locator(f'.review-element[data-element="{rated}"]')
        assert billing.get_by_role("group").count() == 0  # nor settles
        billing.locator(f'[data-comments="{rated}"]').click()
        billing.get_by_label("Comment on Plan probe billing").fill("Low? It bills every customer.")
        billing.get_by_label("About").select_option("Criticality")
        billing.get_by_role("button", name="Add comment").click()
        expect(billing.locator(".comment")).to_contain_text("Low? It bills every customer.")
        expect(billing.locator(f'[data-comments="{rated}"]')).to_have_text("Comments (1)")
        reviewer.get_by_role("button", name="Approve this version").click()
        expect(reviewer.locator("#review-state")).to_contain_text("approved")
        expect(reviewer.locator("#approved-by-me")).to_be_visible()
        shoot(reviewer, "20-scenario-approved-by-reviewer")
    finally:
        other.close()
    assert reviewer_errors == [], f"script errors in the reviewer's page: {reviewer_errors}"

    # The owner sees the approval and the comment; the merge may go ahead.
    page.reload()
    expect(page.locator('#scenario-review-status [data-reviewer="bernd"]')).to_contain_text("approved")
    expect(page.locator(f'[data-comments="{rated}"]')).to_have_text("Comments (1)")
    expect(page.locator("#merge-scenario")).to_be_enabled()
    page.click("#merge-scenario")
    page.get_by_role("dialog").get_by_role("button", name="Merge").click()
    expect(page.locator("#merged-notice")).to_contain_text("Merged into main as revision")
    expect(banner).to_be_hidden()  # the tab is back in main
    expect(menu.locator("summary")).to_contain_text("Main")
    shoot(page, "21-scenario-merged")

    merged = api.get(f"/api/element/InformationSystem/{described}").json()
    assert merged["description"] == ["moved to the new ledger"]
    assert merged["name"] == ["Plan probe new ledger"]
    assert [d["id"] for d in merged["businessDomains"]] == [domain]
    assert api.get(f"/api/element/InformationSystem/{rated}").json()["Criticality"] == ["low"]
    assert api.get(f"/api/element/InformationSystem/{retired}").status_code == 404
    assert api.get(f"/api/scenarios/{key}").json()["state"] == "merged"
    # And the interface, in main, shows it, and its history names the scenario that brought it.
    open_hash(page, f"#/element/InformationSystem/{rated}")
    expect(page.locator('[data-property="Criticality"]')).to_have_text("low")
    assert api.get(f"/api/history/InformationSystem/{rated}").json()["items"][0]["viaScenario"] == key
    open_hash(page, f"#/history/InformationSystem/{rated}")
    newest = page.locator(".changeset").first
    expect(newest.locator(".via-scenario")).to_have_text(f"merged from scenario {key}")
    expect(newest.locator('[data-property="Criticality"]')).to_contain_text("low")


def test_share_a_scenario_with_a_role_from_its_review_page(
    page: Page, server: LiveServer, api: httpx.Client
) -> None:
    made = api.post("/api/scenarios", json={"name": "Sharing probe"})  # system's
    assert made.status_code == 201, made.text
    key = made.json()["key"]
    shares = f"/api/scenarios/{key}/shares"
    page.goto(f"/#/scenarios/{key}")
    log_in(page)
    panel = page.locator("#scenario-sharing")
    expect(panel.locator("#sharing-state")).to_have_text("Not shared with any role")

    # Its owner, a supervisor, picks the demo's role Reader from the roles, for viewing.
    panel.get_by_role("button", name="Add role").click()
    panel.locator(".share-row").last.get_by_label("Role", exact=True).select_option("Reader")
    panel.locator("#save-sharing").click()
    expect(panel.locator("#sharing-state")).to_have_text("Shared with: Reader (can view)")
    expect(panel.locator('#share-list li[data-role="Reader"]')).to_have_attribute("data-access", "read")
    assert api.get(shares).json() == {"shares": [{"role": "Reader", "access": "read"}]}

    # A role named twice is refused, next to the form and on its row; nothing changes.
    panel.get_by_role("button", name="Add role").click()
    twice = panel.locator(".share-row").last
    twice.get_by_label("Role", exact=True).select_option("Reader")
    panel.locator("#save-sharing").click()
    expect(panel.locator("#sharing-error")).to_contain_text("named before")
    expect(twice).to_have_class(re.compile(r"\binvalid\b"))
    shoot(page, "22-scenario-sharing")
    twice.locator("[data-remove]").click()

    # Then for editing: anna, a Reader, sees it and who it is shared with, and no form.
    panel.locator(".share-row").first.get_by_label("Access").select_option("write")
    panel.locator("#save-sharing").click()
    expect(panel.locator('#share-list li[data-role="Reader"]')).to_have_attribute("data-access", "write")
    assert api.get(shares).json() == {"shares": [{"role": "Reader", "access": "write"}]}
    page.context.clear_cookies()
    page.reload()
    log_in(page, "anna", DEMO_PASSWORD)
    expect(panel.locator("#sharing-state")).to_have_text("Shared with: Reader (can edit)")
    assert panel.locator("#sharing-form").count() == 0

    # Unshared by its owner: anna loses it.
    page.context.clear_cookies()
    page.reload()
    log_in(page)
    panel.get_by_role("button", name="Remove Reader").click()
    panel.locator("#save-sharing").click()
    expect(panel.locator("#sharing-state")).to_have_text("Not shared with any role")
    assert api.get(shares).json() == {"shares": []}
    as_anna = httpx.get(f"{server.base_url}/api/scenarios/{key}", auth=("anna", DEMO_PASSWORD), timeout=30)
    assert as_anna.status_code == 404, as_anna.text


# --- never lose work (issue 27) ----------------------------------------------------------------------------

PING = "/api/j_service_security_check"


def end_the_session_on_the_server(page: Page, server: LiveServer) -> None:
    """What the idle timeout does: the server forgets the session, the browser still sends its cookie."""
    cookies = {cookie["name"]: cookie["value"] for cookie in page.context.cookies()}
    with httpx.Client(base_url=server.base_url, cookies=cookies, timeout=30) as other:
        ended = other.post("/j_service_logout", headers={"X-XSRF-TOKEN": cookies["XSRF-TOKEN"]})
        assert ended.status_code == 204, ended.text
        assert other.get("/api/administration/users/current").status_code == 401


def stored_drafts(page: Page) -> list[str]:
    return page.evaluate("Object.keys(sessionStorage).filter(key => key.startsWith('blockrepo.draft:'))")  # type: ignore[no-any-return]


def test_a_save_after_the_session_ended_logs_in_in_place_and_saves_what_was_typed(
    page: Page, server: LiveServer, api: httpx.Client
) -> None:
    made = api.post("/api/element/InformationSystem", json={"name": ["Never lose work"]})
    assert made.status_code == 201, made.text
    element = made.json()
    path = f"/api/element/InformationSystem/{element['id'][0]}"
    page.goto(f"/#/element/InformationSystem/{element['id'][0]}/edit")
    log_in(page)
    version = page.locator('[data-field="version"] input')
    version.fill("typed before the session ended")
    end_the_session_on_the_server(page, server)

    # Save gets 401: the form stays and asks for a login in place, for the user who opened it.
    page.click("#save-element")
    dialog = page.locator("#login-dialog")
    expect(dialog.get_by_role("heading")).to_have_text("Your session has ended")
    expect(dialog.get_by_label("User name")).to_have_value("system")
    assert page.url.endswith(f"/element/InformationSystem/{element['id'][0]}/edit")
    shoot(page, "23-login-in-place")

    # Someone else logging in does not save as them without asking; not saving logs them out again.
    def log_in_as_anna() -> None:
        dialog.get_by_label("User name").fill("anna")
        dialog.get_by_label("Password").fill(DEMO_PASSWORD)
        dialog.get_by_role("button", name="Log in", exact=True).click()
        expect(dialog.get_by_role("heading")).to_have_text("You are logged in as anna")

    log_in_as_anna()
    dialog.get_by_role("button", name="Don't save").click()
    expect(page.locator("#form-error")).to_contain_text("Not saved")
    expect(version).to_have_value("typed before the session ended")
    assert api.get(path).json()["version"] == []
    page.click("#save-element")  # anna was logged out: the login is asked for again
    log_in_as_anna()
    dialog.get_by_role("button", name="Log in as system").click()
    expect(dialog.get_by_label("User name")).to_have_value("system")
    dialog.get_by_label("Password").fill(ADMIN_PASSWORD)
    dialog.get_by_role("button", name="Log in", exact=True).click()

    # The same save, with what was typed and the form's If-Match, as system.
    expect(page.locator("#element-revision")).to_have_text(f"Revision {element['revision'][0] + 1}")
    stored = api.get(path).json()
    assert stored["version"] == ["typed before the session ended"]
    assert stored["lastModificationUser"] == ["system"]
    expect(page.locator("#current-user")).to_have_text("system")
    assert stored_drafts(page) == []


def test_a_reload_offers_the_draft_of_an_edit_form_back(page: Page, api: httpx.Client) -> None:
    made = api.post("/api/element/InformationSystem", json={"name": ["Draft survives a reload"]})
    assert made.status_code == 201, made.text
    element = made.json()
    path = f"/api/element/InformationSystem/{element['id'][0]}"
    edit = f"#/element/InformationSystem/{element['id'][0]}/edit"
    page.goto(f"/{edit}")
    log_in(page)
    page.locator('[data-field="version"] input').fill("2.0")
    page.locator('[data-field="description"]').locator("textarea, input").fill("typed, then reloaded")
    page.reload()

    dialog = page.locator("#draft-dialog")
    expect(dialog.get_by_role("heading")).to_contain_text("Restore your unsaved changes from")
    shoot(page, "24-restore-draft")
    dialog.get_by_role("button", name="Restore").click()
    expect(page.locator('[data-field="version"] input')).to_have_value("2.0")
    page.click("#save-element")
    expect(page.locator("#element-revision")).to_have_text(f"Revision {element['revision'][0] + 1}")
    stored = api.get(path).json()
    assert stored["version"] == ["2.0"] and stored["description"] == ["typed, then reloaded"]
    assert stored_drafts(page) == []  # saved: nothing left to offer

    # Discarded, a draft is gone; so is one of a form left with Cancel.
    open_hash(page, edit)
    page.locator('[data-field="version"] input').fill("3.0")
    page.reload()
    page.locator("#draft-dialog").get_by_role("button", name="Discard").click()
    expect(page.locator('[data-field="version"] input')).to_have_value("2.0")
    assert stored_drafts(page) == []
    page.locator('[data-field="version"] input').fill("4.0")
    assert len(stored_drafts(page)) == 1
    page.get_by_role("link", name="Cancel").click()
    page.locator("#element-revision").wait_for()
    assert stored_drafts(page) == []
    assert api.get(path).json()["version"] == ["2.0"]


def test_an_open_edit_form_keeps_the_session_alive_only_while_its_user_works(
    page: Page, api: httpx.Client
) -> None:
    made = api.post("/api/element/InformationSystem", json={"name": ["Keep-alive probe"]})
    assert made.status_code == 201, made.text
    element = made.json()
    page.clock.install()  # the page's timers on a clock the test moves: no waiting
    page.goto(f"/#/element/InformationSystem/{element['id'][0]}/edit")
    log_in(page)
    pings: list[str] = []
    page.on("request", lambda r: pings.append(r.url) if r.method == "GET" and r.url.endswith(PING) else None)
    page.locator('[data-field="version"] input').fill("typing")
    # The server's idle timeout is 300 s (`sessionIdleTimeout`): an active form pings every 100 s.
    with page.expect_request(lambda r: r.method == "GET" and r.url.endswith(PING)):
        page.clock.run_for(101_000)
    # Nothing typed since: the form leaves the session to its idle timeout.
    page.clock.run_for(600_000)
    page.evaluate("() => fetch('/api/7_4/openapi.json', { method: 'HEAD' })")  # a round trip
    assert len(pings) == 1
