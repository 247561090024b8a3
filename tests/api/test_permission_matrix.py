"""The generic permission matrix: every endpoint family x five kinds of caller, the expected status, and
for reads that no forbidden property, relation end or hidden value appears in the body.

The callers (one shared, seeded repository for the whole module; every write case acts on its own target,
so the cases are independent of each other and of their order):

- supervisor: `system`, role Supervisor.
- reader: may read BusinessProcess and InformationSystem and has VIEW_HISTORY and EXPORT, nothing else.
- editor: may read/create/update/delete BusinessProcess and read/update Project, and has MASSDATA and
  IMPORT.
- nobody: a user without roles.
- disabled: a reader whose account is disabled.

Hidden data that must never leak to reader or editor: the attribute group `Secret` is restricted to the role
`Insiders` (held by nobody here); its attribute `Secret notes` is set on the elements, and its relation
attribute `Share` on the BusinessProcess -> InformationSystem relation. The BusinessProcess is also related
to a BusinessDomain, which neither reader nor editor may read.

Families: the element API (with `asOf` reads), history, massdata (listing, streaming, query, bulk write
and delete, export as JSON and xlsx, import with and without dryRun), the metamodel API and the
administration API. `test_matrix_covers_every_route_family` checks against the published OpenAPI
description that every operation of these families has at least one case, so a new endpoint without a
case fails the module.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from openpyxl import load_workbook
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.massdata.transfer.plan import FORMAT, RECORD_KEYS
from tests.api.access_helpers import PASSWORD
from tests.api.workbooks import header_keys, type_titles
from tests.conftest import ADMIN_PASSWORD, PG_URL, _pg_execute, _with_database, make_settings

ACTORS = ("supervisor", "reader", "editor", "nobody", "disabled")
WEBHOOK_TARGET = "http://127.0.0.1:9/hook"
SECRET_VALUE = "TOP-SECRET-VALUE"
SECRET_NAMES = ("Secret notes", "Share", "Secret")
HIDDEN_DOMAIN = "Hidden Domain"
ALL = None  # readable by the supervisor: everything

# What each caller may read, stated independently of the server's code.
READABLE_TYPES: dict[str, set[str] | None] = {
    "supervisor": ALL,
    "reader": {"BusinessProcess", "InformationSystem"},
    "editor": {"BusinessProcess", "Project"},
    "nobody": set(),
}
READS_SECRET = {"supervisor": True, "reader": False, "editor": False, "nobody": False}
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@dataclass
class World:
    clients: dict[str, TestClient]
    ids: dict[str, int] = field(default_factory=dict)
    # type -> property name -> attribute group (None for built-ins); type -> end -> other type
    properties: dict[str, dict[str, str | None]] = field(default_factory=dict)
    ends: dict[str, dict[str, str]] = field(default_factory=dict)


def _clone(template: str, directory: Path) -> tuple[str, Callable[[], None]]:
    if PG_URL:
        name = f"br_matrix_{uuid.uuid4().hex[:12]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}" TEMPLATE "{make_url(template).database}"')
        return _with_database(PG_URL, name), lambda: _pg_execute(
            PG_URL or "", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
        )
    target = directory / "matrix.db"
    shutil.copyfile(make_url(template).database or "", target)
    return f"sqlite:///{target}", lambda: None


def _ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json()


def _setup(sup: TestClient, world: World) -> None:
    _ok(sup.post("/api/administration/roles", json={"name": "Insiders"}))
    _ok(
        sup.post(
            "/api/administration/roles",
            json={
                "name": "Readers",
                "typePermissions": {"BusinessProcess": ["read"], "InformationSystem": ["read"]},
                "functionalPermissions": ["VIEW_HISTORY", "EXPORT"],
            },
        )
    )
    _ok(
        sup.post(
            "/api/administration/roles",
            json={
                "name": "Editors",
                "typePermissions": {
                    "BusinessProcess": ["read", "create", "update", "delete"],
                    "Project": ["read", "update"],
                },
                "functionalPermissions": ["MASSDATA", "IMPORT"],
            },
        )
    )
    for login, roles, enabled in (
        ("reader", ["Readers"], True),
        ("editor", ["Editors"], True),
        ("nobody", [], True),
        ("disabled", ["Readers"], False),
    ):
        user = _ok(
            sup.post(
                "/api/administration/users",
                json={"login": login, "password": PASSWORD, "roles": roles, "enabled": enabled},
            )
        )
        world.ids[f"user:{login}"] = user["id"]
    group = _ok(
        sup.post(
            "/api/administration/attributegroups",
            json={"name": "Secret", "permissions": [{"role": "Insiders", "read": True, "write": True}]},
        )
    )
    world.ids["group:Secret"] = group["id"]
    _ok(
        sup.post(
            "/api/administration/attributes",
            json={
                "name": "Secret notes",
                "valueType": "text",
                "group": "Secret",
                "types": ["BusinessProcess", "InformationSystem", "Project"],
            },
        )
    )
    _ok(
        sup.post(
            "/api/administration/attributes",
            json={
                "name": "Share",
                "valueType": "number",
                "group": "Secret",
                "relationTypes": ["BusinessProcess_InformationSystem"],
            },
        )
    )
    _ok(
        sup.post(
            "/api/administration/attributes",
            json={
                "name": "Criticality",
                "valueType": "enum",
                "literals": [{"name": "low"}, {"name": "high"}],
                "types": ["BusinessProcess", "InformationSystem", "Project"],
            },
        )
    )
    secret = {"Secret notes": [SECRET_VALUE], "Criticality": ["high"]}
    domain = _ok(sup.post("/api/element/BusinessDomain", json={"name": [HIDDEN_DOMAIN]}))
    system = _ok(sup.post("/api/element/InformationSystem", json={"name": ["ERP"], **secret}))
    project = _ok(sup.post("/api/element/Project", json={"name": ["Migration"], **secret}))
    process = _ok(
        sup.post(
            "/api/element/BusinessProcess",
            json={
                "name": ["Order handling"],
                **secret,
                "businessDomains": [domain["id"][0]],
                "informationSystems": [{"id": system["id"][0], "attributes": {"Share": [42]}}],
            },
        )
    )
    world.ids.update(
        domain=domain["id"][0], system=system["id"][0], project=project["id"][0], process=process["id"][0]
    )
    for actor in ACTORS:
        # Targets each caller may destroy without affecting the other cases.
        world.ids[f"process:{actor}"] = _ok(
            sup.post("/api/element/BusinessProcess", json={"name": [f"Doomed {actor}"]})
        )["id"][0]
        world.ids[f"project:{actor}"] = _ok(
            sup.post("/api/element/Project", json={"name": [f"Doomed {actor}"]})
        )["id"][0]
        world.ids[f"bulkprocess:{actor}"] = _ok(
            sup.post("/api/element/BusinessProcess", json={"name": [f"Bulk doomed {actor}"]})
        )["id"][0]
        world.ids[f"bulkproject:{actor}"] = _ok(
            sup.post("/api/element/Project", json={"name": [f"Bulk doomed {actor}"]})
        )["id"][0]
        _ok(sup.post("/api/metamodel/types", json={"name": f"Doomed{actor}"}))
        _ok(
            sup.post(
                "/api/metamodel/relationtypes",
                json={
                    "name": f"Doomed_{actor}",
                    "source": "Project",
                    "sourceEnd": f"doomed{actor}",
                    "target": "ItService",
                    "targetEnd": f"doomedBy{actor}",
                },
            )
        )
        world.ids[f"role:{actor}"] = _ok(
            sup.post("/api/administration/roles", json={"name": f"Doomed {actor}"})
        )["id"]
        world.ids[f"user:doomed-{actor}"] = _ok(
            sup.post("/api/administration/users", json={"login": f"doomed-{actor}", "password": PASSWORD})
        )["id"]
        world.ids[f"attribute:{actor}"] = _ok(
            sup.post("/api/administration/attributes", json={"name": f"Doomed {actor}", "valueType": "text"})
        )["id"]
        world.ids[f"group:{actor}"] = _ok(
            sup.post("/api/administration/attributegroups", json={"name": f"Doomed {actor}"})
        )["id"]
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for actor in ACTORS:
        owner = "system" if actor == "supervisor" else actor
        for kind in ("token", "tokendoomed", "tokenrotate"):
            minted = {"name": f"{kind} {actor}", "expiresAt": expires, "owner": owner}
            world.ids[f"{kind}:{actor}"] = _ok(sup.post("/api/tokens", json=minted))["id"]
    victim = {"name": "victim", "expiresAt": expires}
    world.ids["token:victim"] = _ok(sup.post("/api/tokens", json=victim))["id"]
    # Planning scenarios: each caller's own (a disabled account cannot make one: it gets the victim's),
    # and one of the supervisor's that nobody else may see.
    world.ids["scenario:victim"] = _ok(sup.post("/api/scenarios", json={"name": "victim"}))["key"]
    # Two more of the supervisor's that no case changes (the victim's is merged, closed, proposed by cases
    # in any order): one only read, one proposed for review with the supervisor as its reviewer.
    world.ids["scenario:victimread"] = _ok(sup.post("/api/scenarios", json={"name": "victim read"}))["key"]
    proposed = _ok(sup.post("/api/scenarios", json={"name": "victim proposed"}))["key"]
    _ok(sup.post(f"/api/scenarios/{proposed}/review", json={"reviewers": ["system"]}))
    world.ids["scenario:victimproposed"] = proposed
    for actor in ACTORS:
        for kind in ("scenario", "scenarioclose", "scenarioreview"):
            if actor == "disabled":
                world.ids[f"{kind}:{actor}"] = world.ids["scenario:victim"]
                continue
            made = world.clients[actor].post("/api/scenarios", json={"name": f"{kind} {actor}"})
            world.ids[f"{kind}:{actor}"] = _ok(made)["key"]
    # Saved reports: one of the supervisor's shared with nobody (its filter names the hidden attribute),
    # one shared with Readers to view and Editors to edit, and one per caller to delete, shared alike.
    victim_report = {
        "name": "victim",
        "kind": "list",
        "type": "BusinessProcess",
        "filter": '@"Secret notes" != ""',
    }
    world.ids["report:victim"] = _ok(sup.post("/api/reports", json=victim_report))["id"]
    shared_report = {"name": "shared", "kind": "list", "type": "BusinessProcess", "sort": "name"}
    report_shares = {"shares": [{"role": "Readers", "access": "view"}, {"role": "Editors", "access": "edit"}]}
    world.ids["report:shared"] = _ok(sup.post("/api/reports", json=shared_report))["id"]
    _ok(sup.put(f"/api/reports/{world.ids['report:shared']}/shares", json=report_shares))
    for actor in ACTORS:
        doomed = _ok(sup.post("/api/reports", json={**shared_report, "name": f"doomed {actor}"}))["id"]
        _ok(sup.put(f"/api/reports/{doomed}/shares", json=report_shares))
        world.ids[f"reportdoomed:{actor}"] = doomed
    # Webhooks to a closed loopback port (the world allows loopback targets; no worker runs).
    hook = {"name": "matrix", "url": WEBHOOK_TARGET, "events": ["element.created"]}
    world.ids["webhook:victim"] = _ok(sup.post("/api/webhooks", json=hook))["id"]
    world.ids["webhook:reader"] = _ok(sup.post("/api/webhooks", json=hook, auth=("reader", PASSWORD)))["id"]
    world.ids["attribute:Criticality"] = next(
        a["id"] for a in _ok(sup.get("/api/administration/attributes")) if a["name"] == "Criticality"
    )
    world.ids["role:Readers"] = next(
        r["id"] for r in _ok(sup.get("/api/administration/roles")) if r["name"] == "Readers"
    )
    for block_type in _ok(sup.get("/api/metamodel"))["types"]:
        world.properties[block_type["name"]] = {p["name"]: p["group"] for p in block_type["properties"]}
        world.ends[block_type["name"]] = {e["name"]: e["type"] for e in block_type["relationEnds"]}
    # The repository revision after the set-up, for `asOf` reads (the cases change the process later).
    world.ids["asof"] = _ok(sup.get("/api/history", params={"sinceRevision": 0, "limit": 1000}))["items"][-1][
        "revision"
    ]


@pytest.fixture(scope="module")
def world(template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    url, drop = _clone(template_database, tmp_path_factory.mktemp("matrix"))
    # The disabled caller fails to log in once per case; login throttling must not turn that into 429s.
    app = create_app(
        make_settings(
            url,
            login_max_failures=1_000_000,
            login_max_failures_per_address=1_000_000,
            webhook_allowed_networks="127.0.0.0/8",
        )
    )
    clients: dict[str, TestClient] = {}
    try:
        for actor in ACTORS:
            client = TestClient(app, base_url="http://127.0.0.1")
            client.__enter__()
            client.auth = ("system", ADMIN_PASSWORD) if actor == "supervisor" else (actor, PASSWORD)
            clients[actor] = client
        world = World(clients)
        _setup(clients["supervisor"], world)
        yield world
    finally:
        for client in clients.values():
            client.__exit__(None, None, None)
        app.state.services.dispose()
        drop()


# --- what a body may show ------------------------------------------------------------------------------


def _may_read_type(actor: str, type_name: str) -> bool:
    readable = READABLE_TYPES[actor]
    return readable is None or type_name in readable


def _may_read_group(actor: str, group: str | None) -> bool:
    return group != "Secret" or READS_SECRET[actor]


def check_element(world: World, actor: str, body: dict[str, Any]) -> None:
    """Exactly the keys the caller may read: built-ins, attributes of readable groups, ends to readable
    types; relation attributes of readable groups only; no hidden value anywhere."""
    type_name = body["type"][0]
    expected = {name for name, group in world.properties[type_name].items() if _may_read_group(actor, group)}
    expected |= {end for end, other in world.ends[type_name].items() if _may_read_type(actor, other)}
    assert set(body) == expected
    for end in world.ends[type_name]:
        for entry in body.get(end, []):
            assert all(
                _may_read_group(actor, "Secret" if name in SECRET_NAMES else None)
                for name in entry.get("attributes", {})
            )
    _check_no_secrets(actor, body)


def check_metamodel(world: World, actor: str, body: Any) -> None:
    """Types, relation types, attributes and ends limited to what the caller may read."""
    types = (
        body["types"]
        if isinstance(body, dict) and "types" in body
        else body
        if isinstance(body, list)
        else [body]
    )
    for block_type in types:
        if "properties" not in block_type:
            continue  # a relation type list
        assert _may_read_type(actor, block_type["name"])
        for prop in block_type["properties"]:
            assert _may_read_group(actor, prop["group"])
        for end in block_type["relationEnds"]:
            assert _may_read_type(actor, end["type"])
            assert all(
                _may_read_group(actor, "Secret" if a in SECRET_NAMES else None) for a in end["attributes"]
            )
    relation_types = body.get("relationTypes", []) if isinstance(body, dict) else []
    if isinstance(body, list) and body and "sourceEnd" in body[0]:
        relation_types = body
    if isinstance(body, dict) and "sourceEnd" in body:
        relation_types = [body]
    for relation_type in relation_types:
        assert _may_read_type(actor, relation_type["source"]) and _may_read_type(
            actor, relation_type["target"]
        )
    if READABLE_TYPES[actor] is not None and isinstance(body, dict) and "types" in body:
        assert {t["name"] for t in body["types"]} == READABLE_TYPES[actor]
    _check_no_secrets(actor, body)


def check_history(world: World, actor: str, body: Any) -> None:
    """Changesets only of readable types (no metamodel or administration entries for these callers), and
    no hidden property, relation end, relation attribute or value inside them."""
    for item in body["items"]:
        if item["entity"] == "element":
            assert _may_read_type(actor, item["type"])
            for change in item["changes"]:
                prop = change["property"]
                if prop in world.ends[item["type"]]:
                    assert _may_read_type(actor, world.ends[item["type"]][prop])
                elif prop in world.properties[item["type"]]:
                    assert _may_read_group(actor, world.properties[item["type"]][prop])
        elif READABLE_TYPES[actor] is not None:
            raise AssertionError(f"{actor} sees a {item['entity']} changeset: {item['subject']}")
    _check_no_secrets(actor, body)


def check_diff(world: World, actor: str, body: Any) -> None:
    """A landscape diff: elements only of readable types, and no hidden property or relation end (nor a
    hidden relation attribute or value) among their fields."""
    assert body["items"], "the check needs changed elements to look at"
    for item in body["items"]:
        type_name = item["element"]["type"]
        assert _may_read_type(actor, type_name)
        for entry in item["fields"]:
            prop = entry["field"]
            if prop in world.ends[type_name]:
                assert _may_read_type(actor, world.ends[type_name][prop])
            elif prop in world.properties[type_name]:
                assert _may_read_group(actor, world.properties[type_name][prop])
    for type_name in body.get("summary", {}):
        assert _may_read_type(actor, type_name)
    _check_no_secrets(actor, body)


def check_own_scenarios(world: World, actor: str, body: Any) -> None:
    """A caller's scenario list: their own, those they are asked to review and (holding APPROVE_SCENARIOS,
    as a supervisor does) those proposed for review, alone."""
    login = "system" if actor == "supervisor" else actor

    def listed(scenario: dict[str, Any]) -> bool:
        review = scenario["review"]
        return scenario["owner"] == login or (
            review is not None and (login in review["reviewers"] or actor == "supervisor")
        )

    assert body and all(listed(scenario) for scenario in body), body


def check_own_tokens(world: World, actor: str, body: Any) -> None:
    """A caller's token list: only tokens of their own, never a secret."""
    assert body, "the check needs tokens to look at"
    for token in body:
        assert token["owner"] == ("system" if actor == "supervisor" else actor)
        assert "token" not in token


def check_backup(world: World, actor: str, body: Any) -> None:
    """The backup (a supervisor's alone) holds the hidden data too: it is the whole repository."""
    lines = gzip.decompress(body).splitlines()
    assert orjson.loads(lines[0])["format"] == "blockrepo-backup"
    assert SECRET_VALUE.encode() in b"".join(lines)


def check_elements(world: World, actor: str, body: Any) -> None:
    """A massdata page, query result or NDJSON stream: every element as `check_element` demands."""
    items = (
        body["items"]
        if isinstance(body, dict) and "items" in body
        else body["result"]
        if isinstance(body, dict)
        else body
    )
    assert items, "the check needs elements to look at"
    for item in items:
        check_element(world, actor, item)


def _check_no_secrets(actor: str, body: Any) -> None:
    if READS_SECRET[actor]:
        return
    text = repr(body)
    for secret in (SECRET_VALUE, HIDDEN_DOMAIN, *SECRET_NAMES):
        assert secret not in text, f"{secret!r} leaked to {actor}"


def _allowed_record_keys(world: World, actor: str, type_name: str) -> set[str]:
    """What an export record (or a type sheet's header) of the type may hold for the caller."""
    allowed = set(RECORD_KEYS)
    allowed |= {name for name, group in world.properties[type_name].items() if _may_read_group(actor, group)}
    allowed |= {end for end, other in world.ends[type_name].items() if _may_read_type(actor, other)}
    return allowed


def check_export(types: set[str] | None = None) -> Callable[[World, str, Any], None]:
    """A JSON export: only readable types (exactly the readable ones among those asked for, for the
    restricted callers), records without hidden attributes or ends to unreadable types, a metamodel section
    without hidden types, groups, attributes or relation types, and no hidden value anywhere; the supervisor's
    export does hold the hidden value (the check is not vacuous)."""

    def check(world: World, actor: str, document: Any) -> None:
        assert document["format"] == FORMAT
        exported = set(document["elements"])
        assert all(_may_read_type(actor, t) for t in exported)
        readable = READABLE_TYPES[actor]
        if readable is not None:
            assert exported == (readable if types is None else readable & types)
        elif types is not None:
            assert exported == types
        assert any(document["elements"].values()), "the check needs records to look at"
        for type_name, records in document["elements"].items():
            allowed = _allowed_record_keys(world, actor, type_name)
            for record in records:
                assert set(record) <= allowed, (type_name, set(record) - allowed)
                for end in set(record) & set(world.ends[type_name]):
                    for entry in record[end]:
                        names = entry.get("attributes", {}) if isinstance(entry, dict) else {}
                        assert all(
                            _may_read_group(actor, "Secret" if n in SECRET_NAMES else None) for n in names
                        )
        metamodel = document["metamodel"]
        assert all(_may_read_type(actor, t["name"]) for t in metamodel["types"])
        assert all(_may_read_group(actor, g["name"]) for g in metamodel["attributeGroups"])
        assert all(_may_read_group(actor, a["group"]) for a in metamodel["attributes"])
        assert all(
            _may_read_type(actor, r["source"]) and _may_read_type(actor, r["target"])
            for r in metamodel["relationTypes"]
        )
        _check_no_secrets(actor, document)
        if READS_SECRET[actor]:
            assert ("BusinessProcess" not in exported) or SECRET_VALUE in repr(document)
            assert ("BusinessDomain" not in exported) or HIDDEN_DOMAIN in repr(document)

    return check


def check_workbook(world: World, actor: str, content: bytes) -> None:
    """An xlsx export: type sheets only of readable types, their columns only readable properties and
    ends, and no hidden name or value in any sheet title or cell."""
    workbook = load_workbook(io.BytesIO(content), read_only=True)
    try:
        cells: list[Any] = []
        type_sheets = set()
        types = {title: name for name, title in type_titles(workbook).items()}
        for sheet in workbook.worksheets:
            rows = [list(row) for row in sheet.iter_rows(values_only=True)]
            cells += [sheet.title, *(value for row in rows for value in row if value is not None)]
            type_name = types.get(sheet.title)
            if type_name is not None:
                assert type_name in world.properties
                type_sheets.add(type_name)
                assert _may_read_type(actor, type_name)
                header = {str(name) for name in header_keys(workbook, sheet) if name is not None}
                allowed = _allowed_record_keys(world, actor, type_name)
                assert header <= allowed, (type_name, header - allowed)
    finally:
        workbook.close()
    readable = READABLE_TYPES[actor]
    assert type_sheets == (readable if readable is not None else type_sheets) and type_sheets
    _check_no_secrets(actor, cells)
    if READS_SECRET[actor]:
        assert SECRET_VALUE in repr(cells) and HIDDEN_DOMAIN in repr(cells)


def check_results(**statuses: list[int]) -> Callable[[World, str, Any], None]:
    """A bulk write's answer: the per-item statuses each caller gets (those the case lets write)."""

    def check(_world: World, actor: str, body: Any) -> None:
        assert [r["status"] for r in body["results"]] == statuses[actor], body
        _check_no_secrets(actor, body)

    return check


def _imported_names(world: World) -> set[str]:
    page = _ok(world.clients["supervisor"].get("/api/massdata/BusinessProcess", params={"limit": 1000}))
    return {item["name"][0] for item in page["items"]}


def check_import(prefix: str, *, dry_run: bool) -> Callable[[World, str, Any], None]:
    """An import report: one element created; it exists afterwards unless the import was a dry run."""

    def check(world: World, actor: str, body: Any) -> None:
        assert body["created"] == 1 and body["failed"] == 0 and body["errors"] == [], body
        assert body.get("dryRun", False) is dry_run
        assert (f"{prefix} {actor}" in _imported_names(world)) is not dry_run

    return check


def import_document(type_name: str, prefix: str, **record: Any) -> Callable[[World, str], Any]:
    """An import document with one record of the type, named after the case and the caller."""
    return lambda _world, actor: {
        "format": FORMAT,
        "elements": {type_name: [{"name": f"{prefix} {actor}", **record}]},
    }


def check_archimate(world: World, actor: str, content: bytes) -> None:
    """An ArchiMate export: elements of readable types only, no hidden value; the supervisor's holds the
    hidden value (the check is not vacuous)."""
    text = content.decode()
    types = set(re.findall(r'<element identifier="br-([A-Za-z]+)-\d+"', text))
    assert types, "the check needs elements to look at"
    assert all(_may_read_type(actor, t) for t in types), types
    assert (SECRET_VALUE in text) is READS_SECRET[actor]
    assert HIDDEN_DOMAIN not in text or _may_read_type(actor, "BusinessDomain")


def archimate_model(prefix: str) -> Callable[[World, str], Any]:
    """An exchange file with one business process, named after the case and the caller: a model of its
    own (an import remembers a model's identifiers, so a model shared by the cases would update what an
    earlier case created)."""
    model = prefix.replace(" ", "-")
    return lambda _world, actor: (
        '<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" '
        f'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="m-{model}-{actor}"><name>m</name>'
        f'<elements><element identifier="e-1" xsi:type="BusinessProcess"><name>{prefix} {actor}</name>'
        "</element></elements></model>"
    ).encode()


def check_archimate_import(prefix: str, *, dry_run: bool) -> Callable[[World, str, Any], None]:
    def check(world: World, actor: str, body: Any) -> None:
        assert body["created"] == 1 and body["mapping"]["mapped"] == {"BusinessProcess": 1}, body
        assert (f"{prefix} {actor}" in _imported_names(world)) is not dry_run

    return check


# --- the matrix ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    method: str
    path: Callable[[World, str], str]
    expected: dict[str, int]
    body: Callable[[World, str], Any] | None = None
    check: Callable[[World, str, Any], None] | None = None
    headers: dict[str, str] | None = None
    # The request names nothing hidden, so even an error body must not reveal hidden names.
    errors_checked: bool = False


def expect(supervisor: int, reader: int, editor: int, nobody: int) -> dict[str, int]:
    """Expected statuses; a disabled account is always 401."""
    return {"supervisor": supervisor, "reader": reader, "editor": editor, "nobody": nobody, "disabled": 401}


def fixed(path: str) -> Callable[[World, str], str]:
    return lambda _world, _actor: path


def of(template: str) -> Callable[[World, str], str]:
    """A path with `{key}` placeholders filled from world.ids (`{actor}` is the caller)."""

    def build(world: World, actor: str) -> str:
        keys = {k.replace(":", "_").replace("-", "_"): v for k, v in world.ids.items()}
        for kind in (
            "process",
            "project",
            "role",
            "attribute",
            "group",
            "token",
            "tokendoomed",
            "tokenrotate",
            "scenario",
            "scenarioclose",
            "scenarioreview",
            "reportdoomed",
        ):
            keys[f"{kind}_me"] = world.ids[f"{kind}:{actor}"]
        keys["user_doomed_me"] = world.ids[f"user:doomed-{actor}"]
        return template.format(actor=actor, **keys)

    return build


def body(value: Any) -> Callable[[World, str], Any]:
    return lambda _world, _actor: value


READ_ALL = expect(200, 200, 200, 200)
ADMIN_ONLY_READ = expect(200, 403, 403, 403)
ADMIN_ONLY_CREATE = expect(201, 403, 403, 403)
ADMIN_ONLY_DELETE = expect(204, 403, 403, 403)

CASES = [
    # --- elements ---
    Case(
        "elements",
        "read BusinessProcess",
        "GET",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 200, 200, 403),
        check=check_element,
    ),
    Case(
        "elements",
        "read InformationSystem",
        "GET",
        of("/api/element/InformationSystem/{system}"),
        expect(200, 200, 403, 403),
        check=check_element,
    ),
    Case(
        "elements",
        "read Project",
        "GET",
        of("/api/element/Project/{project}"),
        expect(200, 403, 200, 403),
        check=check_element,
    ),
    Case(
        "elements",
        "read BusinessDomain",
        "GET",
        of("/api/element/BusinessDomain/{domain}"),
        expect(200, 403, 403, 403),
        check=check_element,
    ),
    Case("elements", "read unknown type", "GET", fixed("/api/element/Nope/1"), expect(404, 404, 404, 404)),
    Case(
        "elements",
        "create BusinessProcess",
        "POST",
        fixed("/api/element/BusinessProcess"),
        expect(201, 403, 201, 403),
        body=lambda _w, actor: {"name": [f"New {actor}"]},
        check=check_element,
    ),
    Case(
        "elements",
        "create InformationSystem",
        "POST",
        fixed("/api/element/InformationSystem"),
        expect(201, 403, 403, 403),
        body=lambda _w, actor: {"name": [f"New {actor}"]},
    ),
    Case(
        "elements",
        "update BusinessProcess",
        "PUT",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 403, 200, 403),
        body=lambda _w, actor: {"description": [f"touched by {actor}"]},
        check=check_element,
    ),
    Case(
        "elements",
        "patch Project",
        "PATCH",
        of("/api/element/Project/{project}"),
        expect(200, 403, 200, 403),
        body=lambda _w, actor: {"Criticality": ["low"]},
        check=check_element,
    ),
    Case(
        "elements",
        "delete BusinessProcess",
        "DELETE",
        of("/api/element/BusinessProcess/{process_me}"),
        expect(204, 403, 204, 403),
    ),
    Case(
        "elements",
        "delete Project",
        "DELETE",
        of("/api/element/Project/{project_me}"),
        expect(204, 403, 403, 403),
    ),
    Case(
        "elements",
        "write attribute of unreadable group",
        "PUT",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 403, 400, 403),
        body=body({"Secret notes": [SECRET_VALUE]}),
    ),
    Case(
        "elements",
        "write relation attribute of unreadable group",
        "PUT",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 403, 400, 403),
        body=lambda w, _a: {"informationSystems": [{"id": w.ids["system"], "attributes": {"Share": [42]}}]},
    ),
    Case(
        "elements",
        "write end to unreadable type",
        "PUT",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 403, 400, 403),
        body=lambda w, _a: {"businessDomains": [w.ids["domain"]]},
    ),
    Case(
        "elements",
        "name an unreadable element",
        "PUT",
        of("/api/element/BusinessProcess/{process}"),
        expect(200, 403, 400, 403),
        body=body({"businessDomains": [{"name": HIDDEN_DOMAIN}]}),
    ),
    Case(
        "elements",
        "read BusinessProcess as of a revision",
        "GET",
        of("/api/element/BusinessProcess/{process}?asOf={asof}"),
        expect(200, 200, 403, 403),  # asOf needs VIEW_HISTORY as well
        check=check_element,
    ),
    Case(
        "elements",
        "read InformationSystem as of a revision",
        "GET",
        of("/api/element/InformationSystem/{system}?asOf={asof}"),
        expect(200, 200, 403, 403),
        check=check_element,
    ),
    Case(
        "elements",
        "read Project as of a revision",
        "GET",
        of("/api/element/Project/{project}?asOf={asof}"),
        expect(200, 403, 403, 403),
        check=check_element,
    ),
    Case(
        "elements",
        "read BusinessDomain as of a revision",
        "GET",
        of("/api/element/BusinessDomain/{domain}?asOf={asof}"),
        expect(200, 403, 403, 403),
        check=check_element,
    ),
    # --- history ---
    Case(
        "history",
        "an element's history",
        "GET",
        of("/api/history/BusinessProcess/{process}"),
        expect(200, 200, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "a type's history",
        "GET",
        fixed("/api/history/InformationSystem"),
        expect(200, 200, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "an element's history in one's scenario",
        "GET",
        of("/api/history/BusinessProcess/{process}?scenario={scenario_me}"),
        expect(200, 200, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "a type's history in another's scenario",
        "GET",
        of("/api/history/InformationSystem?scenario={scenario_victimread}"),
        expect(200, 404, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "an unreadable type's history",
        "GET",
        fixed("/api/history/BusinessDomain"),
        expect(200, 403, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "the change feed",
        "GET",
        fixed("/api/history?limit=1000"),
        expect(200, 200, 403, 403),
        check=check_history,
    ),
    Case(
        "history",
        "the landscape diff",
        "GET",
        fixed("/api/history/diff?from=0&limit=1000"),
        expect(200, 200, 403, 403),
        check=check_diff,
    ),
    Case(
        "history",
        "the landscape diff of an unreadable type",
        "GET",
        fixed("/api/history/diff?from=0&type=BusinessDomain"),
        expect(200, 403, 403, 403),
        check=check_diff,
    ),
    # --- massdata ---
    Case(
        "massdata",
        "list a type",
        "GET",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        check=check_elements,
    ),
    Case(
        "massdata",
        "stream a type",
        "GET",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        check=check_elements,
        headers={"Accept": "application/x-ndjson"},
    ),
    Case(
        "massdata",
        "list an unreadable type",
        "GET",
        fixed("/api/massdata/InformationSystem"),
        expect(200, 403, 403, 403),
    ),
    Case(
        "massdata",
        "filter on a hidden attribute",
        "GET",
        fixed(f'/api/massdata/BusinessProcess?filter=@"Secret notes" = "{SECRET_VALUE}"'),
        expect(200, 403, 400, 403),
    ),
    Case(
        "massdata",
        "filter on an end to an unreadable type",
        "GET",
        fixed("/api/massdata/BusinessProcess?filter=count(businessDomains) > 0"),
        expect(200, 403, 400, 403),
    ),
    Case(
        "massdata",
        "sort by a hidden attribute",
        "GET",
        fixed("/api/massdata/BusinessProcess?sort=Secret notes"),
        expect(200, 403, 400, 403),
    ),
    Case(
        "massdata",
        "an error lists only visible properties",
        "GET",
        fixed("/api/massdata/BusinessProcess?sort=nope"),
        expect(400, 403, 400, 403),
        errors_checked=True,
    ),
    Case(
        "massdata",
        "ask for a hidden field",
        "GET",
        fixed("/api/massdata/BusinessProcess?fields=name,Secret notes"),
        expect(200, 403, 400, 403),
    ),
    Case(
        "massdata",
        "query a type",
        "POST",
        fixed("/api/massdata/query"),
        expect(200, 403, 200, 403),
        body=body({"query": "BusinessProcess;"}),
        check=check_elements,
    ),
    Case(
        "massdata",
        "query through an end to an unreadable type",
        "POST",
        fixed("/api/massdata/query"),
        expect(200, 403, 400, 403),
        body=body({"query": "BusinessProcess/informationSystems;"}),
    ),
    Case(
        "massdata",
        "query an unreadable type",
        "POST",
        fixed("/api/massdata/query"),
        expect(200, 403, 403, 403),
        body=body({"query": "InformationSystem;"}),
    ),
    Case(
        "massdata",
        "list a type projected to a date",
        "GET",
        fixed("/api/massdata/BusinessProcess?projection=2027-01-01"),
        expect(200, 403, 200, 403),
        check=check_elements,
    ),
    Case(
        "massdata",
        "stream a type projected to a date",
        "GET",
        fixed("/api/massdata/BusinessProcess?projection=2027-01-01"),
        expect(200, 403, 200, 403),
        check=check_elements,
        headers={"Accept": "application/x-ndjson"},
    ),
    Case(
        "massdata",
        "list an unreadable type projected to a date",
        "GET",
        fixed("/api/massdata/InformationSystem?projection=2027-01-01"),
        expect(200, 403, 403, 403),
    ),
    Case(
        "massdata",
        "filter a projection on a hidden attribute",
        "GET",
        fixed(
            f'/api/massdata/BusinessProcess?projection=2027-01-01&filter=@"Secret notes" = "{SECRET_VALUE}"'
        ),
        expect(200, 403, 400, 403),
    ),
    Case(
        "massdata",
        "list projected with another's scenario",
        "GET",
        of("/api/massdata/BusinessProcess?projection=2027-01-01&scenarios={scenario_victimread}"),
        expect(200, 403, 404, 403),
    ),
    Case(
        "massdata",
        "query a type projected to a date",
        "POST",
        fixed("/api/massdata/query"),
        expect(200, 403, 200, 403),
        body=body({"query": "BusinessProcess;", "projection": "2027-01-01"}),
        check=check_elements,
    ),
    Case(
        "massdata",
        "query a projection through an end to an unreadable type",
        "POST",
        fixed("/api/massdata/query"),
        expect(200, 403, 400, 403),
        body=body({"query": "BusinessProcess/informationSystems;", "projection": "2027-01-01"}),
    ),
    Case(
        "massdata",
        "bulk create and update",
        "POST",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        body=lambda w, actor: {
            "elements": [
                {"name": [f"Bulk {actor}"]},
                {"id": w.ids["process"], "description": [f"bulk {actor}"]},
            ]
        },
        check=check_results(supervisor=[201, 200], editor=[201, 200]),
    ),
    Case(
        "massdata",
        "bulk write of an unreadable type",
        "POST",
        fixed("/api/massdata/InformationSystem"),
        expect(200, 403, 403, 403),
        body=lambda _w, actor: {"elements": [{"name": [f"Bulk {actor}"]}]},
        check=check_results(supervisor=[201]),
    ),
    Case(
        "massdata",
        "bulk write of an attribute of an unreadable group",
        "POST",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 400, 403),  # atomic: the editor's item is refused, so is the request
        body=lambda w, _a: {"elements": [{"id": w.ids["process"], "Secret notes": [SECRET_VALUE]}]},
        check=check_results(supervisor=[200]),
    ),
    Case(
        "massdata",
        "bulk write of a relation attribute of an unreadable group, per item",
        "POST",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        body=lambda w, actor: {
            "mode": "perItem",
            "elements": [
                {"name": [f"Per item {actor}"]},
                {
                    "id": w.ids["process"],
                    "informationSystems": [{"id": w.ids["system"], "attributes": {"Share": [42]}}],
                },
            ],
        },
        check=check_results(supervisor=[201, 200], editor=[201, 400]),
    ),
    Case(
        "massdata",
        "bulk dry run",
        "POST",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        body=lambda _w, actor: {"dryRun": True, "elements": [{"name": [f"Dry bulk {actor}"]}]},
        check=check_results(supervisor=[201], editor=[201]),
    ),
    Case(
        "massdata",
        "bulk delete BusinessProcess",
        "DELETE",
        fixed("/api/massdata/BusinessProcess"),
        expect(200, 403, 200, 403),
        body=lambda w, actor: {"ids": [w.ids[f"bulkprocess:{actor}"]]},
        check=lambda _w, _a, answer: answer == {"deleted": 1} or pytest.fail(repr(answer)),
    ),
    Case(
        "massdata",
        "bulk delete Project",
        "DELETE",
        fixed("/api/massdata/Project"),
        expect(200, 403, 403, 403),  # the editor may update Project, not delete
        body=lambda w, actor: {"ids": [w.ids[f"bulkproject:{actor}"]]},
    ),
    Case(
        "massdata",
        "export as JSON",
        "GET",
        fixed("/api/massdata/export"),
        expect(200, 200, 403, 403),
        check=check_export(),
    ),
    Case(
        "massdata",
        "export as xlsx",
        "GET",
        fixed("/api/massdata/export?format=xlsx"),
        expect(200, 200, 403, 403),
        check=check_workbook,
    ),
    Case(
        "massdata",
        "export one's scenario as JSON",
        "GET",
        of("/api/massdata/export?scenario={scenario_me}"),
        expect(200, 200, 403, 403),
        check=check_export(),
    ),
    Case(
        "massdata",
        "export another's scenario as xlsx",
        "GET",
        of("/api/massdata/export?format=xlsx&scenario={scenario_victimread}"),
        expect(200, 404, 403, 403),
        check=check_workbook,
    ),
    Case(
        "massdata",
        "export readable types",
        "GET",
        fixed("/api/massdata/export?types=BusinessProcess,InformationSystem"),
        expect(200, 200, 403, 403),
        check=check_export({"BusinessProcess", "InformationSystem"}),
    ),
    Case(
        "massdata",
        "export an unreadable type",
        "GET",
        fixed("/api/massdata/export?types=BusinessDomain"),
        expect(200, 403, 403, 403),
        check=check_export({"BusinessDomain"}),
    ),
    Case(
        "massdata",
        "import, dry run",
        "POST",
        fixed("/api/massdata/import?dryRun=true"),
        expect(200, 403, 200, 403),
        body=import_document("BusinessProcess", "Dry import", description="from a file"),
        check=check_import("Dry import", dry_run=True),
    ),
    Case(
        "massdata",
        "import",
        "POST",
        fixed("/api/massdata/import"),
        expect(200, 403, 200, 403),
        body=import_document("BusinessProcess", "Imported", description="from a file"),
        check=check_import("Imported", dry_run=False),
    ),
    Case(
        "massdata",
        "import an attribute of an unreadable group",
        "POST",
        fixed("/api/massdata/import"),
        expect(200, 403, 400, 403),
        body=import_document("BusinessProcess", "Imported secret", **{"Secret notes": [SECRET_VALUE]}),
        check=check_import("Imported secret", dry_run=False),
    ),
    Case(
        "massdata",
        "import an unreadable type",
        "POST",
        fixed("/api/massdata/import?dryRun=true"),
        expect(200, 403, 403, 403),
        body=import_document("InformationSystem", "Imported system"),
    ),
    # --- exchange ---
    Case(
        "exchange",
        "export as ArchiMate",
        "GET",
        fixed("/api/exchange/archimate"),
        expect(200, 200, 403, 403),
        check=check_archimate,
    ),
    Case(
        "exchange",
        "export one's scenario as ArchiMate",
        "GET",
        of("/api/exchange/archimate?scenario={scenario_me}"),
        expect(200, 200, 403, 403),
        check=check_archimate,
    ),
    Case(
        "exchange",
        "export another's scenario as ArchiMate",
        "GET",
        of("/api/exchange/archimate?scenario={scenario_victimread}"),
        expect(200, 404, 403, 403),
        check=check_archimate,
    ),
    Case(
        "exchange",
        "import an ArchiMate model, dry run",
        "POST",
        fixed("/api/exchange/archimate?dryRun=true"),
        expect(200, 403, 200, 403),
        body=archimate_model("Dry ArchiMate"),
        headers={"content-type": "application/xml"},
        check=check_archimate_import("Dry ArchiMate", dry_run=True),
    ),
    Case(
        "exchange",
        "import an ArchiMate model",
        "POST",
        fixed("/api/exchange/archimate"),
        expect(200, 403, 200, 403),
        body=archimate_model("ArchiMate"),
        headers={"content-type": "application/xml"},
        check=check_archimate_import("ArchiMate", dry_run=False),
    ),
    # --- metamodel ---
    Case(
        "metamodel",
        "read the whole metamodel",
        "GET",
        fixed("/api/metamodel"),
        READ_ALL,
        check=check_metamodel,
    ),
    Case("metamodel", "list types", "GET", fixed("/api/metamodel/types"), READ_ALL, check=check_metamodel),
    Case(
        "metamodel",
        "read a readable type",
        "GET",
        fixed("/api/metamodel/types/BusinessProcess"),
        expect(200, 200, 200, 403),
        check=check_metamodel,
    ),
    Case(
        "metamodel",
        "read another type",
        "GET",
        fixed("/api/metamodel/types/InformationSystem"),
        expect(200, 200, 403, 403),
        check=check_metamodel,
    ),
    Case(
        "metamodel",
        "list relation types",
        "GET",
        fixed("/api/metamodel/relationtypes"),
        READ_ALL,
        check=check_metamodel,
    ),
    Case(
        "metamodel",
        "read a relation type",
        "GET",
        fixed("/api/metamodel/relationtypes/BusinessProcess_InformationSystem"),
        expect(200, 200, 403, 403),
        check=check_metamodel,
    ),
    Case(
        "metamodel",
        "create a type",
        "POST",
        fixed("/api/metamodel/types"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {"name": f"New{actor}"},
    ),
    Case(
        "metamodel",
        "change a type",
        "PUT",
        fixed("/api/metamodel/types/Project"),
        ADMIN_ONLY_READ,
        body=lambda _w, actor: {"description": f"by {actor}"},
    ),
    Case("metamodel", "delete a type", "DELETE", of("/api/metamodel/types/Doomed{actor}"), ADMIN_ONLY_DELETE),
    Case(
        "metamodel",
        "create a relation type",
        "POST",
        fixed("/api/metamodel/relationtypes"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {
            "name": f"New_{actor}",
            "source": "Project",
            "sourceEnd": f"new{actor}",
            "target": "Product",
            "targetEnd": f"newBy{actor}",
        },
    ),
    Case(
        "metamodel",
        "change a relation type",
        "PUT",
        fixed("/api/metamodel/relationtypes/Project_ItService"),
        ADMIN_ONLY_READ,
        body=lambda _w, actor: {"description": f"by {actor}"},
    ),
    Case(
        "metamodel",
        "delete a relation type",
        "DELETE",
        of("/api/metamodel/relationtypes/Doomed_{actor}"),
        ADMIN_ONLY_DELETE,
    ),
    # --- administration ---
    Case("users", "the current user", "GET", fixed("/api/administration/users/current"), READ_ALL),
    Case("users", "list", "GET", fixed("/api/administration/users"), ADMIN_ONLY_READ),
    Case("users", "read", "GET", of("/api/administration/users/{user_reader}"), ADMIN_ONLY_READ),
    Case(
        "users",
        "create",
        "POST",
        fixed("/api/administration/users"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {"login": f"new-{actor}", "password": PASSWORD},
    ),
    Case(
        "users",
        "change",
        "PUT",
        of("/api/administration/users/{user_reader}"),
        ADMIN_ONLY_READ,
        body=lambda _w, actor: {"email": f"{actor}@example.com"},
    ),
    Case(
        "users",
        "change a user's roles",
        "PUT",
        of("/api/administration/users/{user_editor}"),
        ADMIN_ONLY_READ,
        body=body({"roles": ["Editors"]}),
    ),
    Case("users", "delete", "DELETE", of("/api/administration/users/{user_doomed_me}"), ADMIN_ONLY_DELETE),
    Case("roles", "list", "GET", fixed("/api/administration/roles"), ADMIN_ONLY_READ),
    Case("roles", "read", "GET", of("/api/administration/roles/{role_Readers}"), ADMIN_ONLY_READ),
    Case(
        "roles",
        "create",
        "POST",
        fixed("/api/administration/roles"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {"name": f"New {actor}"},
    ),
    Case(
        "roles",
        "change",
        "PUT",
        of("/api/administration/roles/{role_Readers}"),
        ADMIN_ONLY_READ,
        body=lambda _w, actor: {"description": f"by {actor}"},
    ),
    Case("roles", "delete", "DELETE", of("/api/administration/roles/{role_me}"), ADMIN_ONLY_DELETE),
    Case("attributes", "list", "GET", fixed("/api/administration/attributes"), ADMIN_ONLY_READ),
    Case(
        "attributes",
        "read",
        "GET",
        of("/api/administration/attributes/{attribute_Criticality}"),
        ADMIN_ONLY_READ,
    ),
    Case(
        "attributes",
        "create",
        "POST",
        fixed("/api/administration/attributes"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {"name": f"New {actor}", "valueType": "boolean"},
    ),
    Case(
        "attributes",
        "change",
        "PUT",
        of("/api/administration/attributes/{attribute_Criticality}"),
        ADMIN_ONLY_READ,
        body=lambda _w, actor: {"description": f"by {actor}"},
    ),
    Case(
        "attributes",
        "delete",
        "DELETE",
        of("/api/administration/attributes/{attribute_me}"),
        ADMIN_ONLY_DELETE,
    ),
    Case("attributegroups", "list", "GET", fixed("/api/administration/attributegroups"), ADMIN_ONLY_READ),
    Case(
        "attributegroups",
        "read",
        "GET",
        of("/api/administration/attributegroups/{group_Secret}"),
        ADMIN_ONLY_READ,
    ),
    Case(
        "attributegroups",
        "create",
        "POST",
        fixed("/api/administration/attributegroups"),
        ADMIN_ONLY_CREATE,
        body=lambda _w, actor: {"name": f"New {actor}"},
    ),
    Case(
        "attributegroups",
        "change a group's permissions",
        "PUT",
        of("/api/administration/attributegroups/{group_Secret}"),
        ADMIN_ONLY_READ,
        body=body({"permissions": [{"role": "Insiders", "read": True, "write": True}]}),
    ),
    Case(
        "attributegroups",
        "delete",
        "DELETE",
        of("/api/administration/attributegroups/{group_me}"),
        ADMIN_ONLY_DELETE,
    ),
    # --- tokens: everybody manages their own, a supervisor everybody's ---
    Case(
        "tokens",
        "mint one's own token",
        "POST",
        fixed("/api/tokens"),
        expect(201, 201, 201, 201),
        body=lambda _world, actor: {
            "name": f"minted by {actor}",
            "expiresAt": (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    ),
    Case("operations", "back up", "GET", fixed("/api/backup"), ADMIN_ONLY_READ, check=check_backup),
    # --- scenarios: everybody plans in their own, a supervisor sees everybody's ---
    Case(
        "scenarios",
        "create a scenario",
        "POST",
        fixed("/api/scenarios"),
        expect(201, 201, 201, 201),
        body=lambda _world, actor: {"name": f"made by {actor}"},
    ),
    Case(
        "scenarios",
        "list one's scenarios",
        "GET",
        fixed("/api/scenarios"),
        READ_ALL,
        check=check_own_scenarios,
    ),
    Case(
        "scenarios",
        "list every account's scenarios",
        "GET",
        fixed("/api/scenarios?everyone=true"),
        ADMIN_ONLY_READ,
    ),
    Case("scenarios", "read one's scenario", "GET", of("/api/scenarios/{scenario_me}"), READ_ALL),
    Case(
        "scenarios",
        "read another's scenario",
        "GET",
        of("/api/scenarios/{scenario_victim}"),
        expect(200, 404, 404, 404),
    ),
    Case("scenarios", "diff one's scenario", "GET", of("/api/scenarios/{scenario_me}/diff"), READ_ALL),
    Case(
        "scenarios",
        "diff another's scenario",
        "GET",
        of("/api/scenarios/{scenario_victim}/diff"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios",
        "project a type to a date",
        "GET",
        fixed("/api/projection?at=2027-01-01&type=BusinessProcess"),
        expect(200, 403, 200, 403),
        check=check_elements,
    ),
    Case(
        "scenarios",
        "project an unreadable type",
        "GET",
        fixed("/api/projection?at=2027-01-01&type=InformationSystem"),
        expect(200, 403, 403, 403),
    ),
    Case(
        "scenarios",
        "compare a type on two dates",
        "GET",
        fixed("/api/projection/diff?from=2026-01-01&to=2027-01-01&type=BusinessProcess"),
        expect(200, 403, 200, 403),
    ),
    Case(
        "scenarios",
        "compare an unreadable type on two dates",
        "GET",
        fixed("/api/projection/diff?from=2026-01-01&to=2027-01-01&type=InformationSystem"),
        expect(200, 403, 403, 403),
    ),
    Case(
        "scenarios",
        "compare two dates with another's scenario",
        "GET",
        of(
            "/api/projection/diff?from=2026-01-01&to=2027-01-01&type=BusinessProcess&scenarios={scenario_victimread}"
        ),
        expect(200, 403, 404, 403),
    ),
    Case(
        "scenarios",
        "project with another's scenario",
        "GET",
        of("/api/projection?at=2027-01-01&type=BusinessProcess&scenarios={scenario_victimread}"),
        expect(200, 403, 404, 403),
    ),
    Case(
        "scenarios",
        "diff one's scenario against another's",
        "GET",
        of("/api/scenarios/{scenario_me}/diff?against=scenario:{scenario_victim}"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios", "close one's scenario", "POST", of("/api/scenarios/{scenarioclose_me}/close"), READ_ALL
    ),
    Case(
        "scenarios", "reopen one's scenario", "POST", of("/api/scenarios/{scenarioclose_me}/reopen"), READ_ALL
    ),
    Case(
        "scenarios",
        "close another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/close"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios",
        "reopen another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/reopen"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios", "list one's resolutions", "GET", of("/api/scenarios/{scenario_me}/resolutions"), READ_ALL
    ),
    Case(
        "scenarios",
        "settle what is no conflict",
        "POST",
        of("/api/scenarios/{scenario_me}/resolutions"),
        expect(400, 400, 400, 400),
        body=body({"element": 1, "field": "name", "take": "main"}),
    ),
    Case(
        "scenarios",
        "dry-run the merge of one's scenario",
        "POST",
        of("/api/scenarios/{scenario_me}/merge"),
        READ_ALL,
        body=body({"dryRun": True}),
    ),
    Case(
        "scenarios",
        "merge another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/merge"),
        expect(200, 404, 404, 404),
        body=body({"dryRun": True}),
    ),
    Case(
        "scenarios",
        "read the changes of one's scenario",
        "GET",
        of("/api/scenarios/{scenario_me}/changes"),
        READ_ALL,
    ),
    Case(
        "scenarios",
        "read the changes of another's scenario",
        "GET",
        of("/api/scenarios/{scenario_victim}/changes"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios",
        "revert one's scenario, not merged",
        "POST",
        of("/api/scenarios/{scenario_me}/revert"),
        expect(409, 409, 409, 409),
    ),
    Case(
        "scenarios",
        "revert another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/revert"),
        expect(409, 404, 404, 404),
    ),
    Case("scenarios", "check one's scenario", "GET", of("/api/scenarios/{scenario_me}/checks"), READ_ALL),
    # --- saved reports ---
    Case("reports", "list one's reports", "GET", fixed("/api/reports"), READ_ALL),
    Case(
        "reports", "list every account's reports", "GET", fixed("/api/reports?everyone=true"), ADMIN_ONLY_READ
    ),
    Case(
        "reports",
        "save a report",
        "POST",
        fixed("/api/reports"),
        expect(201, 403, 201, 403),
        body=lambda _world, actor: {"name": f"report of {actor}", "kind": "list", "type": "BusinessProcess"},
    ),
    Case(
        "reports",
        "read another's report",
        "GET",
        of("/api/reports/{report_victim}"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "reports",
        "read a shared report",
        "GET",
        of("/api/reports/{report_shared}"),
        expect(200, 200, 200, 404),
    ),
    Case(
        "reports",
        "change a report shared to view or edit",
        "PATCH",
        of("/api/reports/{report_shared}"),
        expect(200, 403, 200, 404),
        body=body({"description": "changed"}),
    ),
    Case(
        "reports",
        "change another's report",
        "PATCH",
        of("/api/reports/{report_victim}"),
        expect(200, 404, 404, 404),
        body=body({"description": "changed"}),
        errors_checked=True,
    ),
    Case(
        "reports",
        "delete a report shared to view or edit",
        "DELETE",
        of("/api/reports/{reportdoomed_me}"),
        expect(204, 403, 403, 404),
    ),
    Case(
        "reports",
        "read the shares of a shared report",
        "GET",
        of("/api/reports/{report_shared}/shares"),
        expect(200, 200, 200, 404),
    ),
    Case(
        "reports",
        "share a report shared to view or edit",
        "PUT",
        of("/api/reports/{report_shared}/shares"),
        expect(200, 403, 403, 404),
        body=body({"shares": [{"role": "Readers", "access": "view"}, {"role": "Editors", "access": "edit"}]}),
    ),
    Case(
        "reports",
        "run a shared report",
        "GET",
        of("/api/reports/{report_shared}/run"),
        expect(200, 403, 200, 404),
        check=check_elements,
    ),
    Case(
        "reports",
        "stream a shared report",
        "GET",
        of("/api/reports/{report_shared}/run"),
        expect(200, 403, 200, 404),
        check=check_elements,
        headers={"Accept": "application/x-ndjson"},
    ),
    Case(
        "reports",
        "run another's report",
        "GET",
        of("/api/reports/{report_victim}/run"),
        expect(200, 404, 404, 404),
        errors_checked=True,
    ),
    Case("scenarios", "list the merge rules", "GET", fixed("/api/scenario-rules"), READ_ALL),
    Case(
        "scenarios",
        "add a merge rule",
        "POST",
        fixed("/api/scenario-rules"),
        ADMIN_ONLY_CREATE,
        body=lambda _world, actor: {"name": f"rule of {actor}", "query": "Project;"},
    ),
    Case(
        "scenarios",
        "remove a merge rule",
        "DELETE",
        fixed("/api/scenario-rules/999999"),
        expect(404, 403, 403, 403),
    ),
    Case("scenarios", "sync one's scenario", "POST", of("/api/scenarios/{scenarioreview_me}/sync"), READ_ALL),
    Case(
        "scenarios",
        "sync another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/sync"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "scenarios",
        "propose one's scenario for review",
        "POST",
        of("/api/scenarios/{scenarioreview_me}/review"),
        READ_ALL,
        body=body({"reviewers": ["reader"], "requiredApprovals": 1}),
    ),
    Case(
        "scenarios",
        "propose another's scenario for review",
        "POST",
        of("/api/scenarios/{scenario_victim}/review"),
        expect(200, 404, 404, 404),
        body=body({"reviewers": ["system"]}),
    ),
    Case(
        "scenarios",
        "approve another's scenario one does not review",
        "POST",
        of("/api/scenarios/{scenario_victimproposed}/approvals"),
        expect(403, 404, 404, 404),
    ),
    Case(
        "scenarios",
        "read the shares of one's scenario",
        "GET",
        of("/api/scenarios/{scenario_me}/shares"),
        READ_ALL,
    ),
    Case(
        "scenarios",
        "share one's scenario with no role",
        "PUT",
        of("/api/scenarios/{scenario_me}/shares"),
        READ_ALL,
        body=body({"shares": []}),
    ),
    Case(
        "scenarios",
        "share another's scenario",
        "PUT",
        of("/api/scenarios/{scenario_victimread}/shares"),
        expect(200, 404, 404, 404),
        body=body({"shares": []}),
    ),
    Case(
        "scenarios",
        "read the comments on one's scenario",
        "GET",
        of("/api/scenarios/{scenario_me}/comments"),
        READ_ALL,
    ),
    Case(
        "scenarios",
        "comment on one's scenario",
        "POST",
        of("/api/scenarios/{scenario_me}/comments"),
        expect(201, 201, 201, 201),
        body=body({"text": "a remark"}),
    ),
    Case(
        "scenarios",
        "comment on another's scenario",
        "POST",
        of("/api/scenarios/{scenario_victim}/comments"),
        expect(201, 404, 404, 404),
        body=body({"text": "a remark"}),
    ),
    Case(
        "scenarios",
        "read a process in one's scenario",
        "GET",
        of("/api/element/BusinessProcess/{process_me}?scenario={scenario_me}"),
        expect(200, 200, 200, 403),
    ),
    Case(
        "scenarios",
        "change a process in one's scenario",
        "PATCH",
        of("/api/element/BusinessProcess/{process_me}?scenario={scenario_me}"),
        expect(200, 403, 200, 403),
        body=body({"description": ["planned"]}),
    ),
    Case("tokens", "list one's tokens", "GET", fixed("/api/tokens"), READ_ALL, check=check_own_tokens),
    Case("tokens", "list every account's tokens", "GET", fixed("/api/tokens?everyone=true"), ADMIN_ONLY_READ),
    Case("tokens", "read one's token", "GET", of("/api/tokens/{token_me}"), READ_ALL),
    Case(
        "tokens", "read another's token", "GET", of("/api/tokens/{token_victim}"), expect(200, 404, 404, 404)
    ),
    Case(
        "tokens",
        "rename one's token",
        "PATCH",
        of("/api/tokens/{token_me}"),
        READ_ALL,
        body=body({"name": "renamed"}),
    ),
    Case(
        "tokens",
        "rotate one's token",
        "POST",
        of("/api/tokens/{tokenrotate_me}/rotate"),
        expect(201, 201, 201, 201),
        body=body({"overlapSeconds": 60}),
    ),
    Case(
        "tokens",
        "revoke one's token",
        "DELETE",
        of("/api/tokens/{tokendoomed_me}"),
        expect(204, 204, 204, 204),
    ),
    Case(
        "tokens",
        "revoke another's token",
        "DELETE",
        of("/api/tokens/{token_victim}"),
        expect(204, 404, 404, 404),
    ),
    Case(
        "tokens",
        "revoke a token by its string (public)",
        "POST",
        fixed("/api/tokens/revocations"),
        {actor: 204 for actor in ACTORS},
        body=body({"token": "brp_" + "0" * 50}),
    ),
    # --- webhooks: whoever reads history subscribes; each manages their own, a supervisor everybody's ---
    Case(
        "webhooks",
        "subscribe a webhook",
        "POST",
        fixed("/api/webhooks"),
        expect(201, 201, 403, 403),
        body=body({"name": "new", "url": WEBHOOK_TARGET, "events": ["element.updated"]}),
    ),
    Case("webhooks", "list one's webhooks", "GET", fixed("/api/webhooks"), READ_ALL),
    Case(
        "webhooks",
        "list every account's webhooks",
        "GET",
        fixed("/api/webhooks?everyone=true"),
        ADMIN_ONLY_READ,
    ),
    Case(
        "webhooks",
        "read a reader's webhook",
        "GET",
        of("/api/webhooks/{webhook_reader}"),
        expect(200, 200, 404, 404),
    ),
    Case(
        "webhooks",
        "read another's webhook",
        "GET",
        of("/api/webhooks/{webhook_victim}"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "webhooks",
        "change another's webhook",
        "PATCH",
        of("/api/webhooks/{webhook_victim}"),
        expect(200, 404, 404, 404),
        body=body({"name": "renamed"}),
    ),
    Case(
        "webhooks",
        "pause another's webhook",
        "POST",
        of("/api/webhooks/{webhook_victim}/pause"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "webhooks",
        "resume a reader's webhook",
        "POST",
        of("/api/webhooks/{webhook_reader}/resume"),
        expect(200, 200, 404, 404),
    ),
    Case(
        "webhooks",
        "replay another's webhook",
        "POST",
        of("/api/webhooks/{webhook_victim}/replay"),
        expect(200, 404, 404, 404),
        body=body({"fromRevision": 0}),
    ),
    Case(
        "webhooks",
        "rotate another's webhook secret",
        "POST",
        of("/api/webhooks/{webhook_victim}/secret"),
        expect(201, 404, 404, 404),
        body=body({"overlapSeconds": 0}),
    ),
    Case(
        "webhooks",
        "read another's delivery log",
        "GET",
        of("/api/webhooks/{webhook_victim}/deliveries"),
        expect(200, 404, 404, 404),
    ),
    Case(
        "webhooks",
        "test-send a reader's webhook",
        "POST",
        of("/api/webhooks/{webhook_reader}/test"),
        expect(200, 200, 404, 404),
    ),
    Case(
        "webhooks",
        "delete another's webhook",
        "DELETE",
        of("/api/webhooks/{webhook_victim}"),
        expect(204, 404, 404, 404),
    ),
]


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.family}: {c.name}")
def test_permission_matrix(world: World, case: Case, actor: str) -> None:
    client = world.clients[actor]
    path = case.path(world, actor)
    payload = case.body(world, actor) if case.body is not None else None
    if isinstance(payload, bytes):  # a file of its own media type (the case's headers name it)
        response = client.request(case.method, path, content=payload, headers=case.headers)
    else:
        response = client.request(case.method, path, json=payload, headers=case.headers)
    expected = case.expected[actor]
    assert response.status_code == expected, (
        f"{case.method} {path} as {actor}: {response.status_code} {response.text}"
    )
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
        if case.errors_checked and actor in READS_SECRET:
            _check_no_secrets(actor, response.text)
    elif case.check is not None:
        content_type = response.headers["content-type"]
        if content_type.startswith("application/x-ndjson"):
            case.check(world, actor, [orjson.loads(line) for line in response.text.splitlines() if line])
        elif content_type.startswith((XLSX, "application/gzip", "application/xml", "application/zip")):
            case.check(world, actor, response.content)
        else:
            case.check(world, actor, response.json())


FAMILIES = (
    "/api/element",
    "/api/metamodel",
    "/api/administration",
    "/api/history",
    "/api/massdata",
    "/api/tokens",
    "/api/webhooks",
    "/api/backup",
    "/api/exchange",
    "/api/scenarios",
    "/api/scenario-rules",
    "/api/projection",
    "/api/reports",
)
HTTP_METHODS = ("get", "put", "post", "delete", "patch")


def _published(client: TestClient) -> set[tuple[str, str]]:
    """(method, path template) of every operation of the families in the published OpenAPI description."""
    document = client.get("/api/7_4/openapi.json").json()
    return {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        if path.startswith(FAMILIES)
        for method in operations
        if method in HTTP_METHODS
    }


def _route_of(method: str, concrete: str, published: set[tuple[str, str]]) -> str | None:
    """The template a request is routed to: among those that match, the one with the most literal
    segments (`/api/massdata/query` beats `/api/massdata/{type}`, `users/current` beats `users/{id}`)."""
    actual = concrete.split("?", 1)[0].strip("/").split("/")
    best: tuple[int, str] | None = None
    for candidate_method, template in published:
        parts = template.strip("/").split("/")
        if candidate_method != method or len(parts) != len(actual):
            continue
        if all(p == a or p.startswith("{") for p, a in zip(parts, actual, strict=True)):
            literals = sum(1 for p in parts if not p.startswith("{"))
            if best is None or literals > best[0]:
                best = (literals, template)
    return None if best is None else best[1]


def test_matrix_covers_every_route_family(world: World) -> None:
    """Each published operation of these families is exercised by at least one case, and each case is
    routed to a published operation."""
    published = _published(world.clients["supervisor"])
    assert published, "the published description lists no operation of the families"
    for operation in (
        ("GET", "/api/element/{type}/{id}"),
        ("POST", "/api/massdata/{type}"),
        ("DELETE", "/api/massdata/{type}"),
        ("GET", "/api/massdata/export"),
        ("POST", "/api/massdata/import"),
        ("GET", "/api/administration/users/current"),
    ):
        assert operation in published
    # The matcher prefers literal segments.
    assert _route_of("POST", "/api/massdata/query", published) == "/api/massdata/query"
    assert _route_of("POST", "/api/massdata/Project", published) == "/api/massdata/{type}"
    assert _route_of("GET", "/api/massdata/export?format=xlsx", published) == "/api/massdata/export"
    assert (
        _route_of("GET", "/api/administration/users/current", published)
        == "/api/administration/users/current"
    )
    assert _route_of("GET", "/api/administration/users/7", published) == "/api/administration/users/{id}"
    exercised = set()
    for case in CASES:
        template = _route_of(case.method, case.path(world, "supervisor"), published)
        assert template is not None, f"{case.family}: {case.name} is routed to no published operation"
        exercised.add((case.method, template))
    # The live change stream never ends, so an in-process client cannot read its answer: its permissions
    # are tested on a live server (tests/e2e/test_change_stream_live.py).
    missing = published - exercised - {("GET", "/api/history/stream")}
    assert not missing, f"operations without a case in the matrix: {sorted(missing)}"


def test_hidden_data_is_there_for_the_supervisor(world: World) -> None:
    """The negative checks above are not vacuous: what they look for is really in the repository."""
    sup = world.clients["supervisor"]
    process = sup.get(f"/api/element/BusinessProcess/{world.ids['process']}")
    assert SECRET_VALUE in process.text and HIDDEN_DOMAIN in process.text and '"Share":[42]' in process.text
    history = sup.get(f"/api/history/BusinessProcess/{world.ids['process']}")
    assert SECRET_VALUE in history.text and HIDDEN_DOMAIN in history.text and '"Share":[42]' in history.text
    feed = sup.get("/api/history?limit=1000").text
    assert "attribute Secret notes" in feed and "attributeGroup Secret" in feed
    assert "Secret notes" in sup.get("/api/metamodel").text
    found = sup.get("/api/massdata/BusinessProcess", params={"filter": f'@"Secret notes" = "{SECRET_VALUE}"'})
    # (A supervisor's import case may have added a second element holding it.)
    assert [world.ids["process"]] in [item["id"] for item in found.json()["items"]]
