"""Names that look alike are one name (API.md 1.9): trimmed and NFC-normalised on input, refused (400
`invalid_character` at the pointer) when they hold a control or invisible format character, unique on the
normalised name. Elements and literals are unique case-sensitively; logins, roles, attribute groups and
attributes regardless of case, with full Unicode case folding on both databases."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from blockrepo.massdata.transfer.plan import FORMAT
from tests.api.access_helpers import PASSWORD, create_role

BASE = "Café"
# The ways the audit found to spell BASE so that it looked the same and was another name.
ALIKE = {
    "trailing space": "Café ",
    "leading space": " Café",
    "NFD": "Cafe\u0301",
}
INVISIBLE = {
    "zero-width space": "Ca\u200bfé",
    "BOM": "\ufeffCafé",
    "bidi override": "Caf\u202eé",
    "zero-width joiner": "Café\u200d",
    "hangul filler": "Café\u3164",
}


@dataclass(frozen=True)
class Kind:
    """How to create a thing of one kind with a given name, where its name sits in the body, and how to
    read back every stored name of the kind."""

    create: Callable[[TestClient, str], Any]
    pointer: str
    names: Callable[[TestClient], list[str]]


def _element(client: TestClient, name: str) -> Any:
    return client.post("/api/element/BusinessProcess", json={"name": [name]})


def _element_names(client: TestClient) -> list[str]:
    items = client.get("/api/massdata/BusinessProcess", params={"limit": 1000}).json()["items"]
    return [item["name"][0] for item in items]


def _role(client: TestClient, name: str) -> Any:
    return client.post("/api/administration/roles", json={"name": name})


def _group(client: TestClient, name: str) -> Any:
    return client.post("/api/administration/attributegroups", json={"name": name})


def _attribute(client: TestClient, name: str) -> Any:
    return client.post("/api/administration/attributes", json={"name": name, "valueType": "text"})


def _literal(client: TestClient, name: str) -> Any:
    # The literal of one enum attribute `Mood`, created once and then given its literals anew: BASE and
    # `name` side by side.
    attributes = client.get("/api/administration/attributes").json()
    mood = next((a for a in attributes if a["name"] == "Mood"), None)
    literals = [{"name": BASE}, {"name": name}] if name != BASE else [{"name": BASE}]
    if mood is None:
        return client.post(
            "/api/administration/attributes", json={"name": "Mood", "valueType": "enum", "literals": literals}
        )
    return client.put(f"/api/administration/attributes/{mood['id']}", json={"literals": literals})


def _names_of(path: str, key: str = "name") -> Callable[[TestClient], list[str]]:
    return lambda client: [item[key] for item in client.get(path).json()]


def _literal_names(client: TestClient) -> list[str]:
    attributes = client.get("/api/administration/attributes").json()
    return [lit["name"] for a in attributes if a["name"] == "Mood" for lit in a["literals"]]


def _user(client: TestClient, login: str) -> Any:
    return client.post("/api/administration/users", json={"login": login, "password": PASSWORD, "roles": []})


KINDS = {
    "element": Kind(_element, "/name/0", _element_names),
    "role": Kind(_role, "/name", _names_of("/api/administration/roles")),
    "group": Kind(_group, "/name", _names_of("/api/administration/attributegroups")),
    "attribute": Kind(_attribute, "/name", _names_of("/api/administration/attributes")),
    "literal": Kind(_literal, "/literals/1/name", _literal_names),
}


@pytest.mark.parametrize("spelling", list(ALIKE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_name_spelled_alike_is_the_same_name(client: TestClient, kind: str, spelling: str) -> None:
    kinds = KINDS[kind]
    first = kinds.create(client, BASE)
    assert first.status_code in (200, 201), first.text
    again = kinds.create(client, ALIKE[spelling])
    # A second thing of that name is refused: 409 for a name taken, 400 `duplicate` for a literal list.
    assert again.status_code in (400, 409), again.text
    assert again.json()["code"] in ("name_conflict", "validation_failed")
    assert kinds.names(client).count(BASE) == 1
    assert all(unicodedata.is_normalized("NFC", n) and n == n.strip() for n in kinds.names(client))


@pytest.mark.parametrize("spelling", list(ALIKE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_name_is_stored_trimmed_and_in_nfc(client: TestClient, kind: str, spelling: str) -> None:
    kinds = KINDS[kind]
    created = kinds.create(client, ALIKE[spelling]) if kind != "literal" else kinds.create(client, BASE)
    assert created.status_code in (200, 201), created.text
    if kind == "literal":  # a literal list of one, spelled alike
        attribute = next(
            a for a in client.get("/api/administration/attributes").json() if a["name"] == "Mood"
        )
        changed = client.put(
            f"/api/administration/attributes/{attribute['id']}",
            json={"literals": [{"name": ALIKE[spelling]}]},
        )
        assert changed.status_code == 200, changed.text
    assert BASE in kinds.names(client)
    assert ALIKE[spelling] not in kinds.names(client)


@pytest.mark.parametrize("spelling", list(INVISIBLE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_name_with_an_invisible_character_is_400_at_its_pointer(
    client: TestClient, kind: str, spelling: str
) -> None:
    kinds = KINDS[kind]
    before = kinds.names(client)
    response = kinds.create(client, INVISIBLE[spelling])
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert [(e["pointer"], e["code"]) for e in problem["errors"]] == [(kinds.pointer, "invalid_character")]
    if kind != "literal":  # the literal case creates the attribute with BASE beside the refused one
        assert kinds.names(client) == before


@pytest.mark.parametrize("login", ["anna ", " anna", "anna\u200b", "\ufeffanna", "an\u202ena", "anne\u0301"])
def test_a_login_spelled_alike_or_with_an_invisible_character_is_refused(
    client: TestClient, login: str
) -> None:
    assert _user(client, "anna").status_code == 201
    assert _user(client, login).status_code == 400
    logins = [u["login"] for u in client.get("/api/administration/users").json()]
    assert logins.count("anna") == 1 and login not in logins


@pytest.mark.parametrize(("first", "second"), [("Ärger", "ärger"), ("STRASSE", "straße"), ("Ω", "ω")])
@pytest.mark.parametrize("kind", ["role", "group", "attribute"])
def test_administration_names_are_unique_regardless_of_case_on_both_databases(
    client: TestClient, kind: str, first: str, second: str
) -> None:
    # SQL lower() folded only ASCII on SQLite: `Ärger` and `ärger` were two roles there and one on PostgreSQL.
    assert KINDS[kind].create(client, first).status_code == 201
    again = KINDS[kind].create(client, second)
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "name_conflict"


def test_element_names_stay_case_sensitive(client: TestClient) -> None:
    assert _element(client, "ERP").status_code == 201
    assert _element(client, "erp").status_code == 201


def test_references_by_name_are_normalised(client: TestClient) -> None:
    system = client.post("/api/element/InformationSystem", json={"name": ["Café"]})
    assert system.status_code == 201
    process = client.post(
        "/api/element/BusinessProcess",
        json={"name": ["P"], "informationSystems": [{"name": "Cafe\u0301 "}]},
    )
    assert process.status_code == 201, process.text
    [entry] = process.json()["informationSystems"]
    assert (entry["id"], entry["name"]) == (system.json()["id"][0], "Café")
    create_role(client, "Café")
    user = client.post(
        "/api/administration/users", json={"login": "bert", "password": PASSWORD, "roles": ["Cafe\u0301 "]}
    )
    assert user.status_code == 201, user.text
    assert user.json()["roles"] == ["Café"]


def test_bulk_match_by_name_finds_the_normalised_name(client: TestClient) -> None:
    created = _element(client, "Café").json()["id"][0]
    response = client.post(
        "/api/massdata/BusinessProcess",
        json={"match": "name", "elements": [{"name": ["Cafe\u0301 "], "description": ["matched"]}]},
    )
    assert response.status_code == 200, response.text
    assert response.json()["updated"] == 1 and response.json()["created"] == 0
    assert client.get(f"/api/element/BusinessProcess/{created}").json()["description"] == ["matched"]


def test_import_matches_records_by_the_normalised_name(client: TestClient) -> None:
    created = _element(client, "Café").json()["id"][0]
    document = {"format": FORMAT, "elements": {"BusinessProcess": [{"name": "Cafe\u0301 "}]}}
    response = client.post("/api/massdata/import", json=document)
    assert response.status_code == 200, response.text
    assert _element_names(client).count("Café") == 1
    assert client.get(f"/api/element/BusinessProcess/{created}").status_code == 200


# --- property: every accepted name is stored normalised, and no two stored names normalise alike -----

# Letters that compose, combining marks, spaces of several kinds, invisible characters: the alphabet of
# look-alikes, plus a few plain letters so that names collide often.
LOOK_ALIKE = st.sampled_from(
    ["a", "b", "e", "A", "é", "\u0301", " ", "\u00a0", "\u3000", "\t", "\u200b", "\ufeff", "\u202e", "ß", "ẞ"]
)
raw_names = st.lists(LOOK_ALIKE, min_size=1, max_size=6).map("".join)


def _is_kept_form(name: str) -> bool:
    """Trimmed, NFC, with no control or format character and only plain spaces."""
    return (
        name == name.strip()
        and unicodedata.is_normalized("NFC", name)
        and all(unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in name)
        and all(c == " " or unicodedata.category(c) != "Zs" for c in name)
        and name != ""
    )


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name.casefold())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(raw_names, min_size=1, max_size=4), min_size=1, max_size=4))
def test_random_element_writes_keep_every_name_normalised_and_unique(
    client: TestClient, batches: list[list[str]]
) -> None:
    for batch in batches:
        if len(batch) == 1:
            response = _element(client, batch[0])
            assert response.status_code in (201, 400, 409), response.text
        else:
            response = client.post(
                "/api/massdata/BusinessProcess",
                json={"mode": "perItem", "elements": [{"name": [name]} for name in batch]},
            )
            assert response.status_code == 200, response.text
        names = _element_names(client)
        assert all(_is_kept_form(name) for name in names), names
        assert len(names) == len(set(names)), names


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(raw_names, min_size=1, max_size=6))
def test_random_role_writes_keep_every_name_normalised_and_unique_regardless_of_case(
    client: TestClient, names: list[str]
) -> None:
    for name in names:
        response = _role(client, name)
        assert response.status_code in (201, 400, 409), response.text
    stored = KINDS["role"].names(client)
    assert all(_is_kept_form(name) for name in stored), stored
    assert len({_key(name) for name in stored}) == len(stored), stored
