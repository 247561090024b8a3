"""Through the API only (in-process, with TestClient): an administrator models a new part of the landscape,
restricts some of it to one role, and the restricted and unrestricted users see and may write exactly what
the rules say. The same scenario against a live `blockrepo serve --workers 2` over real HTTP, with a user
who isolates the group rule from the type rule, is tests/e2e/test_access_scenario_live.py.

Cast:
- `system` (Supervisor) sets everything up.
- olga, role Operators: reads/creates/updates DataCenter, reads/updates InformationSystem, and is the only
  role that may read and write the attribute group Operations.
- vera, role Viewers: reads DataCenter and InformationSystem, nothing else.
- dora, role Site viewers: reads DataCenter only.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import PASSWORD, acting_as


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def test_restricted_attribute_group_on_a_new_type_and_relation(client: TestClient, app: FastAPI) -> None:
    # --- the administrator models the new part of the landscape ---
    ok(client.post("/api/metamodel/types", json={"name": "DataCenter", "displayName": "Data Center"}), 201)
    ok(
        client.post(
            "/api/metamodel/relationtypes",
            json={
                "source": "DataCenter",
                "sourceEnd": "informationSystems",
                "target": "InformationSystem",
                "targetEnd": "dataCenters",
            },
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/roles",
            json={
                "name": "Operators",
                "typePermissions": {
                    "DataCenter": ["read", "create", "update"],
                    "InformationSystem": ["read", "update"],
                },
            },
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/roles",
            json={
                "name": "Viewers",
                "typePermissions": {"DataCenter": ["read"], "InformationSystem": ["read"]},
            },
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/roles",
            json={"name": "Site viewers", "typePermissions": {"DataCenter": ["read"]}},
        ),
        201,
    )
    for login, role in (("olga", "Operators"), ("vera", "Viewers"), ("dora", "Site viewers")):
        ok(
            client.post(
                "/api/administration/users", json={"login": login, "password": PASSWORD, "roles": [role]}
            ),
            201,
        )
    ok(
        client.post(
            "/api/administration/attributegroups",
            json={"name": "Operations", "permissions": [{"role": "Operators", "read": True, "write": True}]},
        ),
        201,
    )
    tier = ok(
        client.post(
            "/api/administration/attributes",
            json={
                "name": "Tier",
                "valueType": "enum",
                "group": "Operations",
                "literals": [{"name": "gold"}, {"name": "silver"}, {"name": "bronze"}],
                "types": ["DataCenter", "InformationSystem"],
                "relationTypes": ["DataCenter_InformationSystem"],
            },
        ),
        201,
    )
    assert tier["group"] == "Operations"

    # --- elements are created and related ---
    erp = ok(client.post("/api/element/InformationSystem", json={"name": ["ERP"], "Tier": ["gold"]}), 201)[
        "id"
    ][0]
    with acting_as(app, "olga") as olga:
        north = ok(
            olga.post(
                "/api/element/DataCenter",
                json={
                    "name": ["DC North"],
                    "Tier": ["silver"],
                    "informationSystems": [{"id": erp, "attributes": {"Tier": ["bronze"]}}],
                },
            ),
            201,
        )
        north_id = north["id"][0]
        # What olga sees: the group's attribute on both types and on the relation, from both ends.
        assert north["Tier"] == ["silver"]
        assert north["informationSystems"] == [{"id": erp, "name": "ERP", "attributes": {"Tier": ["bronze"]}}]
        system = ok(olga.get(f"/api/element/InformationSystem/{erp}"))
        assert system["Tier"] == ["gold"]
        assert system["dataCenters"] == [
            {"id": north_id, "name": "DC North", "attributes": {"Tier": ["bronze"]}}
        ]
        # What olga may write: the group's attributes on types she may update; not what she may not do.
        assert ok(olga.put(f"/api/element/InformationSystem/{erp}", json={"Tier": ["silver"]}))["Tier"] == [
            "silver"
        ]
        assert olga.post("/api/element/InformationSystem", json={"name": ["CRM"]}).status_code == 403
        assert olga.delete(f"/api/element/DataCenter/{north_id}").status_code == 403
        properties = {p["name"]: p for p in ok(olga.get("/api/metamodel/types/DataCenter"))["properties"]}
        assert properties["Tier"]["readOnly"] is False

    # --- vera may read both types but not the group ---
    with acting_as(app, "vera") as vera:
        seen = vera.get(f"/api/element/DataCenter/{north_id}")
        body = ok(seen)
        assert "Tier" not in body
        assert body["informationSystems"] == [{"id": erp, "name": "ERP", "attributes": {}}]
        system = ok(vera.get(f"/api/element/InformationSystem/{erp}"))
        assert "Tier" not in system and system["dataCenters"] == [
            {"id": north_id, "name": "DC North", "attributes": {}}
        ]
        for text in (seen.text, vera.get(f"/api/element/InformationSystem/{erp}").text):
            assert "gold" not in text and "silver" not in text and "bronze" not in text
        metamodel = vera.get("/api/metamodel").text
        assert "Tier" not in metamodel and "Operations" not in metamodel
        assert ok(vera.get("/api/metamodel/relationtypes/DataCenter_InformationSystem"))["attributes"] == []
        # Writing: no update right at all, and the group is closed to her even where she could write.
        assert (
            vera.put(f"/api/element/DataCenter/{north_id}", json={"description": ["mine"]}).status_code == 403
        )
        assert vera.put(f"/api/element/DataCenter/{north_id}", json={"Tier": ["gold"]}).status_code == 403
        me = vera.get("/api/administration/users/current")
        assert "Operations" not in me.text and ok(me)["attributeGroups"] == [
            {"name": "[Default Attribute Group]", "read": True, "write": True}
        ]

    # --- dora may read DataCenter only: the relation end to InformationSystem disappears too ---
    with acting_as(app, "dora") as dora:
        body = ok(dora.get(f"/api/element/DataCenter/{north_id}"))
        assert "informationSystems" not in body and "Tier" not in body and "ERP" not in str(body)
        assert dora.get(f"/api/element/InformationSystem/{erp}").status_code == 403
        ends = {e["name"] for e in ok(dora.get("/api/metamodel/types/DataCenter"))["relationEnds"]}
        assert "informationSystems" not in ends

    # --- the unrestricted supervisor sees everything ---
    body = ok(client.get(f"/api/element/DataCenter/{north_id}"))
    assert body["Tier"] == ["silver"] and body["informationSystems"][0]["attributes"] == {"Tier": ["bronze"]}
    assert body["lastModificationUser"] == ["olga"]

    # --- opening the group to Viewers (read only) applies to vera's next request ---
    group_id = next(
        g["id"] for g in ok(client.get("/api/administration/attributegroups")) if g["name"] == "Operations"
    )
    ok(
        client.put(
            f"/api/administration/attributegroups/{group_id}",
            json={
                "permissions": [
                    {"role": "Operators", "read": True, "write": True},
                    {"role": "Viewers", "read": True, "write": False},
                ]
            },
        )
    )
    with acting_as(app, "vera") as vera:
        assert ok(vera.get(f"/api/element/DataCenter/{north_id}"))["Tier"] == ["silver"]
        assert ok(vera.get("/api/metamodel/types/DataCenter"))["properties"][-3]["name"] == "Tier"

    # --- disabling olga locks her out at once ---
    olga_id = next(u["id"] for u in ok(client.get("/api/administration/users")) if u["login"] == "olga")
    ok(client.put(f"/api/administration/users/{olga_id}", json={"enabled": False}))
    with acting_as(app, "olga") as olga:
        assert olga.get(f"/api/element/DataCenter/{north_id}").status_code == 401


def test_a_mandatory_attribute_of_a_hidden_group_does_not_leak_or_block(
    client: TestClient, app: FastAPI
) -> None:
    """A caller cannot be made to supply, or learn about, a property they may not read."""
    ok(client.post("/api/administration/roles", json={"name": "Insiders"}), 201)
    ok(
        client.post(
            "/api/administration/roles",
            json={"name": "Planners", "typePermissions": {"Project": ["read", "create", "update"]}},
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/users", json={"login": "pia", "password": PASSWORD, "roles": ["Planners"]}
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/attributegroups",
            json={"name": "Board", "permissions": [{"role": "Insiders", "read": True, "write": True}]},
        ),
        201,
    )
    ok(
        client.post(
            "/api/administration/attributes",
            json={
                "name": "Board approval",
                "valueType": "boolean",
                "mandatory": True,
                "group": "Board",
                "types": ["Project"],
            },
        ),
        201,
    )
    with acting_as(app, "pia") as pia:
        response = pia.post("/api/element/Project", json={"name": ["Migration"]})
        assert "Board approval" not in response.text
        assert response.status_code == 201
    # The supervisor, who may write it, must still supply it.
    response = client.post("/api/element/Project", json={"name": ["Other"]})
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/Board approval"
