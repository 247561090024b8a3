"""API tokens (API.md section 11, issue 26): Bearer on every endpoint, shown once and stored only as a keyed
hash, expiring, narrowing their owner's rights and never widening them, revoked at once on every worker."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select, text, update
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from blockrepo.tokens.models import ApiToken
from blockrepo.tokens.strings import TOKEN_PATTERN, checksum, parse_token
from tests.helpers import client_as, create_attribute, create_group, create_role, create_user, session_of

ELEMENTS = "/api/element/BusinessProcess"


def soon(days: int = 30) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def mint(client: TestClient, **fields: Any) -> dict[str, Any]:
    body = {"name": "a script", "expiresAt": soon(), **fields}
    response = client.post("/api/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def web(app: FastAPI) -> Iterator[TestClient]:
    """A client with no credentials of its own (each request names its token)."""
    with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as client:
        yield client


@pytest.fixture
def process_id(client: TestClient) -> int:
    response = client.post(ELEMENTS, json={"name": ["Order handling"]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def test_a_minted_token_is_shown_once_in_the_published_format(client: TestClient, web: TestClient) -> None:
    issued = mint(client)
    token = issued["token"]
    assert TOKEN_PATTERN.fullmatch(token)
    parts = parse_token(token)
    assert parts is not None and parts.public_id == issued["publicId"]
    assert checksum(token[:-6]) == token[-6:]
    listed = client.get("/api/tokens").json()
    assert [t["id"] for t in listed] == [issued["id"]]
    assert "token" not in listed[0] and "token" not in client.get(f"/api/tokens/{issued['id']}").json()
    assert listed[0]["owner"] == "system" and listed[0]["expiresAt"] == issued["expiresAt"]


def test_a_mistyped_token_fails_its_checksum_offline() -> None:
    from blockrepo.tokens.strings import new_token

    token, _ = new_token()
    typo = token[:10] + ("a" if token[10] != "a" else "b") + token[11:]
    assert parse_token(token) is not None
    assert parse_token(typo) is None


def test_the_database_holds_no_secret(app: FastAPI, client: TestClient) -> None:
    token = mint(client)["token"]
    parts = parse_token(token)
    assert parts is not None
    with session_of(app) as db:
        rows = [tuple(str(v) for v in row) for row in db.execute(text("SELECT * FROM api_token"))]
    dumped = " ".join(" ".join(row) for row in rows)
    assert parts.public_id in dumped
    assert parts.secret not in dumped and token not in dumped


def test_bearer_reads_and_writes_without_csrf_or_cookie(
    client: TestClient, web: TestClient, process_id: int
) -> None:
    token = mint(client)["token"]
    read = web.get(f"{ELEMENTS}/{process_id}", headers=bearer(token))
    assert read.status_code == 200, read.text
    assert "set-cookie" not in read.headers
    listed = web.get("/api/administration/users/current", headers=bearer(token))
    assert listed.status_code == 200 and "set-cookie" not in listed.headers
    created = web.post(ELEMENTS, json={"name": ["Invoicing"]}, headers=bearer(token))
    assert created.status_code == 201, created.text
    assert "set-cookie" not in created.headers
    assert not web.cookies


def test_a_wrong_expired_or_disabled_token_is_401(
    app: FastAPI, client: TestClient, web: TestClient, process_id: int
) -> None:
    issued = mint(client)
    token = issued["token"]
    path = f"{ELEMENTS}/{process_id}"
    wrong_secret = token[:20] + ("x" if token[20] != "x" else "y") + token[21:-6]
    wrong_secret += checksum(wrong_secret)
    # A wrong checksum: the last character changed (to "1" when it already is "0").
    wrong_checksum = token[:-1] + ("0" if token[-1] != "0" else "1")
    for sent in ("brp_nonsense", wrong_secret, wrong_checksum):
        response = web.get(path, headers=bearer(sent))
        assert response.status_code == 401, sent
        assert response.json()["code"] == "unauthenticated"
    assert client.patch(f"/api/tokens/{issued['id']}", json={"enabled": False}).status_code == 200
    assert web.get(path, headers=bearer(token)).status_code == 401
    assert client.patch(f"/api/tokens/{issued['id']}", json={"enabled": True}).status_code == 200
    assert web.get(path, headers=bearer(token)).status_code == 200
    with session_of(app) as db:
        db.execute(update(ApiToken).values(expires_at=int(dt.datetime.now(dt.UTC).timestamp()) - 1))
    assert web.get(path, headers=bearer(token)).status_code == 401


def test_expiry_is_required_in_the_future_and_bounded(client: TestClient) -> None:
    for body, code in (
        ({"name": "x"}, "missing"),
        ({"name": "x", "expiresAt": "yesterday"}, "invalid_time"),
        ({"name": "x", "expiresAt": "2001-01-01T00:00:00Z"}, "past_expiry"),
        ({"name": "x", "expiresAt": soon(4000)}, "expiry_too_far"),
        ({"name": "x", "expiresAt": soon(), "types": ["NoSuchType"]}, "unknown_type"),
        ({"name": "x", "expiresAt": soon(), "functions": ["EVERYTHING"]}, "unknown_permission"),
        ({"name": "x", "expiresAt": soon(), "allowedNetworks": ["not a network"]}, "invalid_network"),
    ):
        response = client.post("/api/tokens", json=body)
        assert response.status_code == 400, (body, response.text)
        assert code in {e["code"] for e in response.json()["errors"]}, response.json()
    assert client.get("/api/tokens").json() == []


def test_revocation_is_seen_by_the_next_request_on_another_worker(
    settings: Settings, client: TestClient, process_id: int
) -> None:
    issued = mint(client)
    other = create_app(settings)  # a second worker process on the same database
    try:
        with TestClient(other, base_url="http://127.0.0.1") as worker:
            path = f"{ELEMENTS}/{process_id}"
            assert worker.get(path, headers=bearer(issued["token"])).status_code == 200
            assert worker.get(path, headers=bearer(issued["token"])).status_code == 200  # cached paths too
            assert client.delete(f"/api/tokens/{issued['id']}").status_code == 204
            assert worker.get(path, headers=bearer(issued["token"])).status_code == 401
    finally:
        other.state.services.dispose()
    assert client.get("/api/tokens").json() == []
    assert [t["revoked"] for t in client.get("/api/tokens?revoked=true").json()] == [True]


def test_a_leaked_token_is_revoked_by_posting_its_string(
    anon: TestClient, client: TestClient, web: TestClient, process_id: int
) -> None:
    leaked = mint(client)
    token = leaked["token"]
    assert anon.post("/api/tokens/revocations", json={"token": "brp_not-a-token"}).status_code == 204
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(token)).status_code == 200
    # Whoever holds it may have rotated it: what the rotation made goes with it.
    rotated = web.post(
        f"/api/tokens/{leaked['id']}/rotate", json={"overlapSeconds": 600}, headers=bearer(token)
    )
    assert rotated.status_code == 201
    assert anon.post("/api/tokens/revocations", json={"token": token}).status_code == 204
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(token)).status_code == 401
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(rotated.json()["token"])).status_code == 401


def test_revoking_a_rotated_token_ends_the_overlap_and_keeps_its_successor(
    client: TestClient, web: TestClient, process_id: int
) -> None:
    old = mint(client)
    new = client.post(f"/api/tokens/{old['id']}/rotate", json={"overlapSeconds": 600}).json()
    assert client.delete(f"/api/tokens/{old['id']}").status_code == 204
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(old["token"])).status_code == 401
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(new["token"])).status_code == 200


def test_a_read_only_token_reads_and_never_writes(
    client: TestClient, web: TestClient, process_id: int
) -> None:
    token = mint(client, readOnly=True)["token"]
    path = f"{ELEMENTS}/{process_id}"
    assert web.get(path, headers=bearer(token)).status_code == 200
    assert web.post(ELEMENTS, json={"name": ["Nope"]}, headers=bearer(token)).status_code == 403
    assert web.patch(path, json={"description": ["x"]}, headers=bearer(token)).status_code == 403
    assert web.put(path, json={"name": ["Renamed"]}, headers=bearer(token)).status_code == 403
    assert web.delete(path, headers=bearer(token)).status_code == 403
    user = {"login": "eve", "password": "a-long-password-1", "roles": ["Supervisor"]}
    assert web.post("/api/administration/users", json=user, headers=bearer(token)).status_code == 403
    me = web.get("/api/administration/users/current", headers=bearer(token)).json()
    assert me["supervisor"] is False
    assert all(actions == ["read"] for actions in me["typePermissions"].values())
    assert "ADMIN_USERS" not in me["functionalPermissions"] and "VIEW_HISTORY" in me["functionalPermissions"]
    assert client.get(path).json()["name"] == ["Order handling"]


def test_a_token_bound_to_types_keeps_no_administrative_power_unless_named(
    client: TestClient, web: TestClient
) -> None:
    bound = mint(client, types=["BusinessProcess"])
    assert bound["functions"] == ["EXPORT", "MASSDATA", "VIEW_HISTORY"]
    user = {"login": "eve", "password": "a-long-password-1", "roles": ["Supervisor"]}
    assert web.post("/api/administration/users", json=user, headers=bearer(bound["token"])).status_code == 403
    named = mint(client, types=["BusinessProcess"], functions=["ADMIN_USERS"])
    assert named["functions"] == ["ADMIN_USERS"]


def test_type_and_group_restrictions_narrow_what_the_owner_sees(
    app: FastAPI, client: TestClient, web: TestClient, process_id: int
) -> None:
    create_group(app, "Finance")
    create_group(app, "Operations")
    create_attribute(app, "Costs", "number", types=["BusinessProcess"], group="Finance")
    create_attribute(app, "Shift", "text", types=["BusinessProcess"], group="Operations")
    path = f"{ELEMENTS}/{process_id}"
    assert client.patch(path, json={"Costs": [12], "Shift": ["early"]}).status_code == 200
    system = client.get(path)
    token = mint(client, types=["BusinessProcess"], attributeGroups=["Operations"])["token"]
    seen = web.get(path, headers=bearer(token))
    assert seen.status_code == 200
    assert "Costs" not in seen.json() and seen.json()["Shift"] == ["early"]
    assert seen.headers["etag"] != system.headers["etag"]  # a 304 never crosses the two views
    system_id = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    assert client.get(f"/api/element/InformationSystem/{system_id}").status_code == 200
    assert web.get(f"/api/element/InformationSystem/{system_id}", headers=bearer(token)).status_code == 403
    written = web.patch(path, json={"Costs": [13]}, headers=bearer(token))
    assert written.status_code == 400  # a hidden property answers like an unknown one
    assert written.json()["errors"][0]["code"] == "unknown_property"
    assert web.patch(path, json={"Shift": ["late"]}, headers=bearer(token)).status_code == 200
    assert client.get(path).json()["Costs"] == [12]
    # The owner still sees everything: the two views are cached apart.
    assert client.get(path).json()["Costs"] == [12]


def test_a_token_never_exceeds_its_owner_and_follows_the_owners_roles(
    app: FastAPI, client: TestClient, web: TestClient, process_id: int
) -> None:
    create_role(app, "reader", types={"BusinessProcess": ["read"]})
    create_role(app, "editor", types={"BusinessProcess": ["read", "create", "update", "delete"]})
    create_user(app, "anna", "anna-password-1", ["reader", "editor"])
    anna = client_as(app, "anna", "anna-password-1")
    token = mint(anna, types=["BusinessProcess", "InformationSystem"])["token"]
    system_id = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    not_annas = web.get(f"/api/element/InformationSystem/{system_id}", headers=bearer(token))
    assert not_annas.status_code == 403
    assert web.post(ELEMENTS, json={"name": ["By anna"]}, headers=bearer(token)).status_code == 201
    changed = client.put(
        "/api/administration/users/" + str(_user_id(client, "anna")), json=_user(client, "anna", ["reader"])
    )
    assert changed.status_code == 200, changed.text
    assert web.post(ELEMENTS, json={"name": ["Again"]}, headers=bearer(token)).status_code == 403
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(token)).status_code == 200
    disabled = _user(client, "anna", ["reader"]) | {"enabled": False}
    assert (
        client.put(f"/api/administration/users/{_user_id(client, 'anna')}", json=disabled).status_code == 200
    )
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(token)).status_code == 401


def _user_id(client: TestClient, login: str) -> int:
    return next(u["id"] for u in client.get("/api/administration/users").json() if u["login"] == login)


def _user(client: TestClient, login: str, roles: list[str]) -> dict[str, Any]:
    found = next(u for u in client.get("/api/administration/users").json() if u["login"] == login)
    return {k: v for k, v in found.items() if k != "id"} | {"roles": roles}


def test_a_token_cannot_mint_but_may_rotate_and_revoke_itself(
    client: TestClient, web: TestClient, process_id: int
) -> None:
    first = mint(client)
    other = mint(client, name="another")
    headers = bearer(first["token"])
    refused = web.post("/api/tokens", json={"name": "child", "expiresAt": soon()}, headers=headers)
    assert refused.status_code == 403 and refused.json()["code"] == "token_cannot_mint"
    assert web.delete(f"/api/tokens/{other['id']}", headers=headers).status_code == 403
    rotated = web.post(f"/api/tokens/{first['id']}/rotate", json={"overlapSeconds": 600}, headers=headers)
    assert rotated.status_code == 201, rotated.text
    new = rotated.json()
    assert new["rotatedFrom"] == first["id"] and new["expiresAt"] == first["expiresAt"]
    path = f"{ELEMENTS}/{process_id}"
    assert web.get(path, headers=headers).status_code == 200  # the overlap
    assert web.get(path, headers=bearer(new["token"])).status_code == 200
    twice = web.post(f"/api/tokens/{first['id']}/rotate", json={"overlapSeconds": 600}, headers=headers)
    assert twice.status_code == 409 and twice.json()["code"] == "token_rotated"  # no chain of live copies
    again = web.post(
        f"/api/tokens/{new['id']}/rotate", json={"overlapSeconds": 0}, headers=bearer(new["token"])
    )
    assert again.status_code == 201
    assert web.get(path, headers=bearer(new["token"])).status_code == 401
    newest = again.json()["token"]
    assert web.delete(f"/api/tokens/{again.json()['id']}", headers=bearer(newest)).status_code == 204
    assert web.get(path, headers=bearer(newest)).status_code == 401


def test_history_says_which_token_made_a_change(client: TestClient, web: TestClient) -> None:
    issued = mint(client)
    created = web.post(ELEMENTS, json={"name": ["Via token"]}, headers=bearer(issued["token"]))
    element_id = created.json()["id"][0]
    client.patch(f"{ELEMENTS}/{element_id}", json={"description": ["via basic"]})
    history = client.get(f"/api/history/BusinessProcess/{element_id}").json()
    items = history["items"] if isinstance(history, dict) else history
    vias = sorted(item["via"] for item in items)
    assert vias == ["basic", f"token:{issued['publicId']}"]


def test_allowed_networks_bind_a_token_to_addresses(
    app: FastAPI, client: TestClient, process_id: int
) -> None:
    token = mint(client, allowedNetworks=["10.1.0.0/16"])["token"]
    path = f"{ELEMENTS}/{process_id}"
    with TestClient(app, base_url="http://127.0.0.1", client=("10.1.2.3", 4000)) as inside:
        assert inside.get(path, headers=bearer(token)).status_code == 200
    with TestClient(app, base_url="http://127.0.0.1", client=("10.2.0.1", 4000)) as outside:
        assert outside.get(path, headers=bearer(token)).status_code == 401


def test_last_use_is_recorded(client: TestClient, web: TestClient, process_id: int) -> None:
    issued = mint(client)
    assert client.get(f"/api/tokens/{issued['id']}").json()["lastUsedAt"] is None
    assert web.get(f"{ELEMENTS}/{process_id}", headers=bearer(issued["token"])).status_code == 200
    seen = client.get(f"/api/tokens/{issued['id']}").json()
    assert seen["lastUsedAt"] is not None and seen["lastUsedAddress"] == "127.0.0.1"


def test_a_supervisor_sees_every_token_and_others_only_their_own(app: FastAPI, client: TestClient) -> None:
    create_user(app, "anna", "anna-password-1", [])
    anna = client_as(app, "anna", "anna-password-1")
    mine = mint(anna)
    theirs = mint(client)
    assert [t["id"] for t in anna.get("/api/tokens").json()] == [mine["id"]]
    assert anna.get(f"/api/tokens/{theirs['id']}").status_code == 404
    assert anna.delete(f"/api/tokens/{theirs['id']}").status_code == 404
    assert anna.get("/api/tokens?everyone=true").status_code == 403
    assert {t["id"] for t in client.get("/api/tokens?everyone=true").json()} == {mine["id"], theirs["id"]}
    assert client.delete(f"/api/tokens/{mine['id']}").status_code == 204


def test_minting_for_a_service_account_needs_the_permission(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    create_role(app, "reader", types={"BusinessProcess": ["read"]})
    create_role(app, "minter", functional=["MINT_TOKENS", "ADMIN_USERS"])
    create_user(app, "sync-bot", "bot-password-12", ["reader"])
    create_user(app, "anna", "anna-password-1", [])
    create_user(app, "mia", "mia-password-12", ["minter"])
    anna = client_as(app, "anna", "anna-password-1")
    body = {"name": "bot", "expiresAt": soon(), "owner": "sync-bot"}
    assert anna.post("/api/tokens", json=body).status_code == 403
    mia = client_as(app, "mia", "mia-password-12")
    issued = mia.post("/api/tokens", json=body)
    assert issued.status_code == 201, issued.text
    assert issued.json()["owner"] == "sync-bot" and issued.json()["createdBy"] == "mia"
    assert (
        web.get("/api/administration/users/current", headers=bearer(issued.json()["token"])).json()["login"]
        == "sync-bot"
    )
    for_system = mia.post("/api/tokens", json=body | {"owner": "system"})
    assert for_system.status_code == 403 and for_system.json()["code"] == "supervisor_only"
    # The minter manages the token while she may mint for the account, and no longer once she may not.
    token_id = issued.json()["id"]
    assert mia.get(f"/api/tokens/{token_id}").status_code == 200
    mia_id = next(u["id"] for u in client.get("/api/administration/users").json() if u["login"] == "mia")
    demoted = {"login": "mia", "roles": [], "firstName": "", "lastName": "", "email": "", "enabled": True}
    assert client.put(f"/api/administration/users/{mia_id}", json=demoted).status_code == 200
    assert mia.get(f"/api/tokens/{token_id}").status_code == 404


def test_a_token_and_a_session_cookie_together_act_as_the_token(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    create_user(app, "anna", "anna-password-1", [])
    token = mint(client, readOnly=True)["token"]
    login = web.post(
        "/api/j_service_security_check", data={"j_username": "anna", "j_password": "anna-password-1"}
    )
    assert login.status_code == 200
    me = web.get("/api/administration/users/current", headers=bearer(token)).json()
    assert me["login"] == "system"
    with session_of(app) as db:
        assert db.scalar(select(ApiToken.user_id)) is not None


def test_a_token_bound_to_a_scenario_writes_only_there(
    app: FastAPI, client: TestClient, web: TestClient, process_id: int
) -> None:
    key = client.post("/api/scenarios", json={"name": "agent proposals"}).json()["key"]
    other = client.post("/api/scenarios", json={"name": "someone else's plan"}).json()["key"]
    bound = mint(client, scenario=key)
    assert bound["scenario"] == key and client.get(f"/api/tokens/{bound['id']}").json()["scenario"] == key
    token = bearer(bound["token"])
    path = f"{ELEMENTS}/{process_id}"
    # In its scenario it writes as its owner would: PATCH, POST, bulk, DELETE.
    changed = web.patch(path, json={"description": ["proposed"]}, params={"scenario": key}, headers=token)
    assert changed.status_code == 200, changed.text
    created = web.post(
        ELEMENTS, json={"name": ["Proposed process"]}, headers={**token, "Blockrepo-Scenario": key}
    )
    assert created.status_code == 201, created.text
    bulk = web.post(
        "/api/massdata/BusinessProcess",
        json={"elements": [{"name": ["Bulk proposal"]}]},
        params={"scenario": key},
        headers=token,
    )
    assert bulk.status_code == 200, bulk.text
    # Main, and any other scenario, it only reads.
    assert web.get(path, headers=token).json()["description"] == []
    assert web.patch(path, json={"description": ["direct"]}, headers=token).status_code == 403
    assert web.post(ELEMENTS, json={"name": ["Direct"]}, headers=token).status_code == 403
    assert web.delete(path, headers=token).status_code == 403
    elsewhere = web.patch(path, json={"description": ["x"]}, params={"scenario": other}, headers=token)
    assert elsewhere.status_code == 403 and elsewhere.json()["code"] == "token_scenario", elsewhere.text
    # It proposes; merging (main's change) stays with a person.
    assert web.post(f"/api/scenarios/{key}/merge", json={}, headers=token).status_code == 403
    user = {"login": "eve", "password": "a-long-password-1", "roles": ["Supervisor"]}
    assert web.post("/api/administration/users", json=user, headers=token).status_code == 403
    assert client.get(path).json()["description"] == []
    assert client.get(path, params={"scenario": key}).json()["description"] == ["proposed"]
    # A token is bound only to a scenario its owner sees.
    create_role(app, "planners", types={"BusinessProcess": ["read", "update", "create", "delete"]})
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    with client_as(app, "anna", "anna-password-1") as anna:
        refused = anna.post("/api/tokens", json={"name": "x", "expiresAt": soon(), "scenario": key})
        assert refused.status_code == 400 and refused.json()["errors"][0]["pointer"] == "/scenario", (
            refused.text
        )
