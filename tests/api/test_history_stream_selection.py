"""The change stream picks, in memory, from the changesets its process read once for every stream
(`history.stream.select_changes`): for every kind of reader it must send exactly what the feed shows that
reader, the same changesets masked the same way (issue 26)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.access.models import User
from blockrepo.api.context import AppServices, session_context
from blockrepo.auth.basic import Principal
from blockrepo.history import service, stream
from tests.helpers import create_attribute, create_group, create_role, create_user

READERS = {
    "system": None,  # the supervisor: everything
    "rita": ["BusinessProcess readers"],  # one type, not the Finance group, history
    "finn": ["BusinessProcess readers", "finance"],  # the same and Finance
    "adam": ["user admins"],  # history of users and tokens, no element type
}


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> dict[str, int]:
    create_group(app, "Finance")
    create_attribute(app, "Costs", "number", types=["BusinessProcess"], group="Finance")
    create_attribute(app, "Note", "text", types=["BusinessProcess", "InformationSystem"])
    create_role(
        app, "BusinessProcess readers", types={"BusinessProcess": ["read"]}, functional=["VIEW_HISTORY"]
    )
    create_role(app, "finance", groups={"Finance": (True, False)})
    create_role(app, "user admins", functional=["VIEW_HISTORY", "ADMIN_USERS"])
    ids = {}
    for login, roles in READERS.items():
        if roles is not None:
            ids[login] = create_user(app, login, f"{login}-password-1", roles)
    process = client.post("/api/element/BusinessProcess", json={"name": ["Billing"], "Costs": [3]}).json()
    system = client.post("/api/element/InformationSystem", json={"name": ["Ledger"], "Note": ["x"]}).json()
    client.patch(
        f"/api/element/BusinessProcess/{process['id'][0]}",
        json={
            "Costs": [4],
            "Note": ["seen by all readers of processes"],
            "informationSystems": [system["id"][0]],
        },
    )
    client.post("/api/element/BusinessProcess", json={"name": ["Only costs"], "Costs": [1]})
    client.post("/api/metamodel/types", json={"name": "Capability2"})
    client.post("/api/administration/users", json={"login": "late", "password": "late-password-1"})
    client.post("/api/tokens", json={"name": "t", "expiresAt": "2099-01-01T00:00:00Z"})
    client.delete(f"/api/element/InformationSystem/{system['id'][0]}")
    return ids


@pytest.mark.parametrize("login", sorted(READERS))
def test_the_stream_picks_exactly_what_the_feed_shows_each_reader(
    app: FastAPI, landscape: dict[str, int], login: str
) -> None:
    services: AppServices = app.state.services
    user_id = 1 if login == "system" else landscape[login]
    with session_context(services, _principal(services, user_id, login), "test", writing=False) as ctx:
        feed = service.feed(
            ctx.db,
            ctx.actor,
            ctx.metamodel,
            service.Limits(1000, 1000),
            "0",
            service.PageParameters(limit="1000"),
        )["items"]
        everything = stream.recent_rows(ctx.db, (0, stream.AFTER_REVISION), 10_000)
        chosen = stream.stream_filter(ctx.actor, ctx.metamodel, None, None)
        view = stream.stream_view(ctx.db, ctx.actor, ctx.metamodel, chosen, (0, 0))
        picked = stream.select_changes(view, everything.rows, everything.through)
    assert picked.items == feed
    assert feed, "the check needs changesets the reader may see"


def _principal(services: AppServices, user_id: int, login: str) -> Principal:
    with services.read_sessions() as db:
        user = db.get(User, user_id)
        assert user is not None and user.login == login
        return Principal(
            user_id=user_id, login=login, credentials_version=user.credentials_version, via="basic"
        )
