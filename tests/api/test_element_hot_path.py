"""The element hot path (issue 16): what one GET by id costs in SQL statements, Basic clients that never
keep the cookie cost no write, and nothing the GET caches outlives a change made elsewhere."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import func, insert, select, update
from starlette.testclient import TestClient

from blockrepo.access.models import User, UserRole
from blockrepo.app import create_app
from blockrepo.auth.models import AuthSession
from blockrepo.auth.sessions import session_key
from blockrepo.revisions.models import RepositoryState
from blockrepo.settings import Settings
from tests.api.auth_support import (
    PROTECTED,
    bare_client,
    cookie_value,
    install_clock,
    logged_in,
    session_headers,
)
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import (
    count_queries,
    create_attribute,
    create_role,
    create_user,
    engine_of,
    session_of,
)

WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    return make_settings(database_url, **auth_store)


@pytest.fixture
def web(app: FastAPI) -> Iterator[TestClient]:
    with bare_client(app) as client:
        yield client


def rich_and_bare(app: FastAPI, client: TestClient) -> tuple[int, int]:
    """A business process with many values, children, relations with attributes on both ends, and one with
    nothing but its name."""
    create_attribute(app, "Tags", "text", types=["BusinessProcess"], multiple=True)
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    systems = [
        client.post("/api/element/InformationSystem", json={"name": [f"IS{i}"]}).json()["id"][0]
        for i in range(12)
    ]
    before = client.post("/api/element/BusinessProcess", json={"name": ["Before"]}).json()["id"][0]
    rich = client.post(
        "/api/element/BusinessProcess",
        json={
            "name": ["Rich"],
            "description": ["many values and relations"],
            "Tags": [f"t{i}" for i in range(30)],
            "informationSystems": [{"id": s, "attributes": {"Share": [i]}} for i, s in enumerate(systems)],
            "predecessors": [before],
        },
    ).json()["id"][0]
    for i in range(5):
        child = client.post("/api/element/BusinessProcess", json={"name": [f"Child {i}"], "parent": [rich]})
        assert child.status_code == 201, child.text
    client.post("/api/element/BusinessProcess", json={"name": ["After"], "predecessors": [rich]})
    bare = client.post("/api/element/BusinessProcess", json={"name": ["Bare"]}).json()["id"][0]
    return rich, bare


def tables_read(statement: str) -> str:
    """The first table a statement reads, or its verb (BEGIN)."""
    words = statement.split()
    if words[0] != "SELECT":
        return words[0]
    depth = 0  # the statement's own FROM, not a subquery's in its columns
    for index, word in enumerate(words):
        if word == "FROM" and depth == 0:
            return words[index + 1]
        depth += word.count("(") - word.count(")")
    return words[1]  # a function's call


def test_a_session_get_runs_a_fixed_small_number_of_statements(
    app: FastAPI, client: TestClient, web: TestClient, auth_store: dict[str, str]
) -> None:
    """A GET by id with a session cookie runs, whatever the element holds:

    - the session with its user's state and the repository's revisions, one join (with Redis, which holds
      the session: the user's state with the revisions), because the session, the account, the metamodel
      and the rights may have changed in another process; the cached metamodel, rights and rendered
      bodies are keyed by those revisions, so a change made anywhere is seen by the next request;
    - only the first time since the last write anywhere (no body rendered at these revisions yet): on
      PostgreSQL the committed horizon (a body is kept only if no write up to these revisions is still
      under way, `access.service.settled`), a BEGIN
      (one snapshot for the rest), the revisions again (still the same ones, or the GET goes the
      documented way), then the element with its parent's name, its children, its values, the relations
      it is the source of, those it is the target of, and the relations' values: one statement each, for
      any number of rows.

    Nothing is written (the session's idle time stamp is written at most every touch interval). Changed in
    issue 16's second round: the session, the user and the revisions became one statement (two before,
    after a BEGIN), and a repeated GET serves the body rendered at the same revisions instead of reading
    the element again."""
    rich, bare = rich_and_bare(app, client)
    session_id, _ = logged_in(web)
    headers = session_headers(session_id)
    engine = engine_of(app)
    assert web.get(f"/api/element/BusinessProcess/{bare}", headers=headers).status_code == 200  # warm caches
    with count_queries(engine) as rich_count:
        response = web.get(f"/api/element/BusinessProcess/{rich}", headers=headers)
    assert response.status_code == 200
    assert len(response.json()["Tags"]) == 30 and len(response.json()["informationSystems"]) == 12
    assert len(response.json()["children"]) == 5 and response.json()["successors"] != []
    with count_queries(engine) as again_count:
        again = web.get(f"/api/element/BusinessProcess/{rich}", headers=headers)
    assert again.status_code == 200 and again.content == response.content
    with count_queries(engine) as bare_count:
        assert web.get(f"/api/element/BusinessProcess/{bare}", headers=headers).status_code == 200
    # Redis holds the session but not the account: its state and the revisions are one read.
    who = ["app_user" if auth_store else "auth_session"]
    element = [
        "element",  # the element and its parent's name
        "element",  # its children
        "element_value",
        "relation",  # as the source
        "relation",  # as the target
        "relation_value",
    ]
    settled = [] if engine.dialect.name == "sqlite" else ["blockrepo_revision_horizon()"]
    first_read = [*who, *settled, "BEGIN", "repository_state", *element]
    assert [tables_read(s) for s in rich_count.statements] == first_read, [
        s[:60] for s in rich_count.statements
    ]
    assert [tables_read(s) for s in again_count.statements] == who
    assert [tables_read(s) for s in bare_count.statements] == who


def test_repeated_basic_gets_without_the_cookie_write_nothing(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    element = client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]}).json()["id"][0]
    url = f"/api/element/BusinessProcess/{element}"
    assert web.get(url, auth=("system", ADMIN_PASSWORD)).status_code == 200  # the credentials are cached
    with session_of(app) as db:
        sessions_before = db.scalar(select(func.count()).select_from(AuthSession))
    with count_queries(engine_of(app)) as counter:
        cookies = set()
        for _ in range(5):
            response = web.get(url, auth=("system", ADMIN_PASSWORD))
            assert response.status_code == 200
            cookies.add(cookie_value(response, "JSESSIONID"))  # the contract: a session for credentials
    assert len(cookies) == 5
    assert not [s for s in counter.statements if s.split()[0] in WRITES]
    with session_of(app) as db:
        assert db.scalar(select(func.count()).select_from(AuthSession)) == sessions_before


def basic_header(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def test_each_basic_answer_of_the_lane_carries_its_own_working_session(
    app: FastAPI, client: TestClient, web: TestClient, auth_store: dict[str, str]
) -> None:
    """Answers of the GET lane to repeated Basic credentials, one right after the other (within a second),
    each carry a new signed session and its CSRF token; each cookie works when it comes back, its token
    passes CSRF on a write, and logging one out leaves the other."""
    element = client.post("/api/element/BusinessProcess", json={"name": ["Cookies"]}).json()["id"][0]
    url = f"/api/element/BusinessProcess/{element}"
    basic = basic_header("system", ADMIN_PASSWORD)
    for _ in range(2):  # verifies the credentials, then renders the body on the lane
        assert web.get(url, headers=basic).status_code == 200
    with count_queries(engine_of(app)) as counter:
        answers = [web.get(url, headers=basic) for _ in range(2)]
    assert [tables_read(s) for s in counter.statements] == ["app_user", "app_user"]  # on the lane
    sessions = [(cookie_value(a, "JSESSIONID"), cookie_value(a, "XSRF-TOKEN")) for a in answers]
    assert sessions[0][0] != sessions[1][0] and sessions[0][1] != sessions[1][1]
    for index, (session_id, token) in enumerate(sessions):
        assert web.get(url, headers=session_headers(session_id)).json() == answers[index].json()
        created = web.post(
            "/api/element/BusinessProcess",
            json={"name": [f"By cookie {index}"]},
            headers=session_headers(session_id, token),
        )
        assert created.status_code == 201, created.text
    first, second = sessions
    assert web.post("/j_service_logout", headers=session_headers(*first)).status_code == 204
    assert web.get(url, headers=session_headers(first[0])).status_code == 401
    assert web.get(url, headers=session_headers(second[0])).status_code == 200


@pytest.mark.parametrize("change", ["password", "disabled"])
def test_the_lane_refuses_changed_credentials_on_the_next_request(
    app: FastAPI, client: TestClient, web: TestClient, change: str
) -> None:
    """The lane recognises repeated credentials by their header, but the account's state is read with
    every request: a new password or a disabled account is refused by the very next one."""
    element = client.post("/api/element/BusinessProcess", json={"name": ["Changing"]}).json()["id"][0]
    url = f"/api/element/BusinessProcess/{element}"
    user_id = create_user(app, "anna", "anna-password", roles=["Supervisor"])
    basic = basic_header("anna", "anna-password")
    for _ in range(2):
        assert web.get(url, headers=basic).status_code == 200
    with count_queries(engine_of(app)) as counter:
        assert web.get(url, headers=basic).status_code == 200
    assert [tables_read(s) for s in counter.statements] == ["app_user"]  # answered on the lane
    body = {"password": "anna-new-password"} if change == "password" else {"enabled": False}
    assert client.put(f"/api/administration/users/{user_id}", json=body).status_code == 200
    for _ in range(2):
        assert web.get(url, headers=basic).status_code == 401
    if change == "password":
        assert web.get(url, headers=basic_header("anna", "anna-new-password")).status_code == 200


def test_credentials_verified_from_one_address_are_not_quick_from_another(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    """The lane takes only credentials verified from the request's own address (as the login throttle
    does): the same header from elsewhere goes the documented way, which checks the throttle first."""
    element = client.post("/api/element/BusinessProcess", json={"name": ["Address"]}).json()["id"][0]
    url = f"/api/element/BusinessProcess/{element}"
    basic = basic_header("system", ADMIN_PASSWORD)
    for _ in range(2):
        assert web.get(url, headers=basic).status_code == 200
    with bare_client(app, address="203.0.113.9") as elsewhere:
        with count_queries(engine_of(app)) as counter:
            assert elsewhere.get(url, headers=basic).status_code == 200
        assert [tables_read(s) for s in counter.statements] != ["app_user"]
        with count_queries(engine_of(app)) as counter:
            assert elsewhere.get(url, headers=basic).status_code == 200
        assert [tables_read(s) for s in counter.statements] == ["app_user"]  # verified here now


def test_the_cookie_of_a_basic_request_works_once_it_comes_back(web: TestClient) -> None:
    response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
    session_id = cookie_value(response, "JSESSIONID")
    token = cookie_value(response, "XSRF-TOKEN")
    assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
    assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
    # The token given with the cookie is the session's: a write with it passes CSRF.
    created = web.post(
        "/api/element/BusinessProcess",
        json={"name": ["By cookie"]},
        headers=session_headers(session_id, token),
    )
    assert created.status_code == 201, created.text


def test_another_process_accepts_the_signed_cookie(database_url: str, auth_store: dict[str, str]) -> None:
    first, second = (create_app(make_settings(database_url, **auth_store)) for _ in range(2))
    try:
        with bare_client(first) as one, bare_client(second) as other:
            response = one.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
            assert response.status_code == 200
            session_id = cookie_value(response, "JSESSIONID")
            assert other.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
            assert one.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
    finally:
        first.state.services.dispose()
        second.state.services.dispose()


@pytest.mark.parametrize("returned_first", [False, True])
def test_logout_ends_a_signed_session_for_good(web: TestClient, returned_first: bool) -> None:
    response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
    session_id, token = cookie_value(response, "JSESSIONID"), cookie_value(response, "XSRF-TOKEN")
    if returned_first:
        assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
    assert web.post("/j_service_logout", headers=session_headers(session_id, token)).status_code == 204
    for _ in range(2):
        assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 401


def test_a_signed_cookie_of_a_changed_password_is_refused(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password", roles=["Supervisor"])
    response = web.get(PROTECTED, auth=("anna", "anna-password"))
    session_id = cookie_value(response, "JSESSIONID")
    with session_of(app) as db:
        db.execute(
            update(User).where(User.login == "anna").values(credentials_version=User.credentials_version + 1)
        )
    assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 401


def test_a_forged_or_altered_cookie_is_no_session(web: TestClient) -> None:
    response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
    session_id = cookie_value(response, "JSESSIONID")
    altered = session_id[:20] + ("A" if session_id[20] != "A" else "B") + session_id[21:]
    assert web.get(PROTECTED, headers=session_headers(altered)).status_code == 401


def test_permission_and_metamodel_changes_are_seen_by_the_next_get(app: FastAPI, client: TestClient) -> None:
    element = client.post("/api/element/BusinessProcess", json={"name": ["Seen"]}).json()["id"][0]
    role_id = create_role(app, "Readers", types={"BusinessProcess": ["read"]})
    user_id = create_user(app, "rita", "rita-password")
    url = f"/api/element/BusinessProcess/{element}"
    with bare_client(app) as rita:
        rita_session, _ = logged_in(rita, "rita", "rita-password")
        headers = session_headers(rita_session)
        assert rita.get(url, headers=headers).status_code == 403
        assert rita.get(url, headers=headers).status_code == 403  # now cached: actor, metamodel
        with session_of(app) as db:  # what the administration API does: the role, and a new access revision
            db.execute(insert(UserRole).values(user_id=user_id, role_id=role_id))
            db.execute(
                update(RepositoryState)
                .where(RepositoryState.id == 1)
                .values(access_revision=RepositoryState.access_revision + 1)
            )
        assert rita.get(url, headers=headers).status_code == 200
        assert "Costs" not in rita.get(url, headers=headers).json()  # cached: actor, metamodel, reader
        create_attribute(app, "Costs", "number", types=["BusinessProcess"])
        assert client.put(url, json={"Costs": [7]}).status_code == 200
        assert rita.get(url, headers=headers).json()["Costs"] == [7]
        with session_of(app) as db:
            db.execute(update(User).where(User.login == "rita").values(enabled=False))
        # Nothing else changes with it: the GET reads the account's state every time.
        assert rita.get(url, headers=headers).status_code == 401


# --- changes made by another worker ------------------------------------------------------------------------
# Two application instances on one database are two workers (or hosts): each has its own caches of
# sessions' users, metamodels, rights and rendered bodies. The reader's worker has answered the GET on its
# lane (asserted by its statements) before the other worker changes something; the next GET must show it.


@pytest.fixture
def workers(database_url: str, auth_store: dict[str, str]) -> Iterator[tuple[FastAPI, FastAPI]]:
    reader, admin = (create_app(make_settings(database_url, **auth_store)) for _ in range(2))
    yield reader, admin
    reader.state.services.dispose()
    admin.state.services.dispose()


def assert_on_the_lane(
    app: FastAPI, client: TestClient, url: str, headers: dict[str, str], auth_store: dict[str, str]
) -> dict[str, object]:
    """GET `url` and assert that the lane answered it from the cached body: only the statement of who acts
    and the revisions (see the statement-count test above; Basic credentials and Redis sessions read the
    account with the revisions, a database session reads its row with them)."""
    with count_queries(engine_of(app)) as counter:
        response = client.get(url, headers=headers)
    assert response.status_code == 200, response.text
    who = "app_user" if auth_store or "Authorization" in headers else "auth_session"
    assert [tables_read(s) for s in counter.statements] == [who]
    return response.json()  # type: ignore[no-any-return]


def test_changes_by_another_worker_are_seen_by_the_next_get(
    workers: tuple[FastAPI, FastAPI], auth_store: dict[str, str]
) -> None:
    reader, admin = workers
    with bare_client(reader) as one, TestClient(admin, base_url="http://127.0.0.1") as other:
        other.auth = ("system", ADMIN_PASSWORD)
        group = other.post(
            "/api/administration/attributegroups",
            json={"name": "Finance", "description": "", "permissions": []},
        )
        assert group.status_code == 201, group.text
        attribute = other.post(
            "/api/administration/attributes",
            json={"name": "Costs", "valueType": "number", "group": "Finance", "types": ["BusinessProcess"]},
        )
        assert attribute.status_code == 201, attribute.text
        role = other.post(
            "/api/administration/roles",
            json={"name": "Readers", "typePermissions": {"BusinessProcess": ["read"]}},
        )
        assert role.status_code == 201, role.text
        user = other.post(
            "/api/administration/users",
            json={
                "login": "rita",
                "firstName": "Rita",
                "lastName": "Reader",
                "email": "rita@example.org",
                "roles": ["Readers"],
                "password": "rita-password",
            },
        )
        assert user.status_code == 201, user.text
        element = other.post("/api/element/BusinessProcess", json={"name": ["Seen"], "Costs": [7]})
        url = f"/api/element/BusinessProcess/{element.json()['id'][0]}"

        session = session_headers(logged_in(one, "rita", "rita-password")[0])
        basic = {"Authorization": "Basic " + base64.b64encode(b"rita:rita-password").decode()}
        for headers in (session, basic):  # fills the reader's caches: metamodel, rights, verified credentials
            assert one.get(url, headers=headers).json()["Costs"] == [7]
        for headers in (session, basic):
            assert assert_on_the_lane(reader, one, url, headers, auth_store)["Costs"] == [7]

        # A value written elsewhere.
        assert other.put(url, json={"Costs": [8]}).status_code == 200
        for headers in (session, basic):
            assert one.get(url, headers=headers).json()["Costs"] == [8]
            assert assert_on_the_lane(reader, one, url, headers, auth_store)["Costs"] == [8]

        # A metamodel change: the attribute is no longer active for the type.
        changed = other.put(f"/api/administration/attributes/{attribute.json()['id']}", json={"types": []})
        assert changed.status_code == 200, changed.text
        for headers in (session, basic):
            # The first GET loads the new metamodel (the documented way), the second renders with it.
            for _ in range(2):
                assert "Costs" not in one.get(url, headers=headers).json()
            assert "Costs" not in assert_on_the_lane(reader, one, url, headers, auth_store)

        # A permission change: the role loses read on the type.
        revoked = other.put(f"/api/administration/roles/{role.json()['id']}", json={"typePermissions": {}})
        assert revoked.status_code == 200, revoked.text
        for headers in (session, basic):
            assert one.get(url, headers=headers).status_code == 403
            assert one.get(url, headers=headers).status_code == 403
        granted = other.put(
            f"/api/administration/roles/{role.json()['id']}",
            json={"typePermissions": {"BusinessProcess": ["read"]}},
        )
        assert granted.status_code == 200, granted.text
        for headers in (session, basic):
            for _ in range(2):
                assert one.get(url, headers=headers).status_code == 200
            assert_on_the_lane(reader, one, url, headers, auth_store)

        # A password change: the old password no longer passes, and the sessions it made are ended.
        assert other.put(
            f"/api/administration/users/{user.json()['id']}", json={"password": "new-pass"}
        ).is_success
        renewed = {"Authorization": "Basic " + base64.b64encode(b"rita:new-pass").decode()}
        for _ in range(2):  # the new password works, and the reader's worker caches rita's rights again
            assert one.get(url, headers=renewed).status_code == 200
        for headers in (session, basic):
            assert one.get(url, headers=headers).status_code == 401
            assert one.get(url, headers=headers).status_code == 401


@pytest.mark.parametrize("ended_by", ["logout", "idle timeout"])
def test_an_ended_session_is_refused_by_the_next_get(
    workers: tuple[FastAPI, FastAPI], auth_store: dict[str, str], ended_by: str
) -> None:
    reader, admin = workers
    clocks = [install_clock(app) for app in workers]
    with bare_client(reader) as one, bare_client(admin) as other:
        element = one.post(
            "/api/element/BusinessProcess", json={"name": ["Ended"]}, auth=("system", ADMIN_PASSWORD)
        )
        url = f"/api/element/BusinessProcess/{element.json()['id'][0]}"
        session_id, token = logged_in(one)
        headers = session_headers(session_id)
        assert one.get(url, headers=headers).status_code == 200
        assert_on_the_lane(reader, one, url, headers, auth_store)
        if ended_by == "logout":
            assert (
                other.post("/j_service_logout", headers=session_headers(session_id, token)).status_code == 204
            )
        else:
            idle = reader.state.settings.session_idle_timeout
            for clock in clocks:
                clock.advance(idle + 1)
        assert one.get(url, headers=headers).status_code == 401
        assert one.get(url, headers=headers).status_code == 401


def test_a_due_idle_time_stamp_is_written_once_in_the_background(
    app: FastAPI, client: TestClient, web: TestClient, auth_store: dict[str, str]
) -> None:
    """When a session's idle time stamp is due, the GET is still answered on the lane and one background
    write extends the session (an UPDATE of its row, or with Redis a script that rewrites it)."""
    clock = install_clock(app)
    element = client.post("/api/element/BusinessProcess", json={"name": ["Touched"]}).json()["id"][0]
    url = f"/api/element/BusinessProcess/{element}"
    headers = session_headers(logged_in(web)[0])
    assert web.get(url, headers=headers).status_code == 200
    assert_on_the_lane(app, web, url, headers, auth_store)
    settings = app.state.settings
    clock.advance(settings.session_touch_interval + 1)
    with count_queries(engine_of(app)) as counter:
        assert web.get(url, headers=headers).status_code == 200
        app.state.services.auth.sessions.close()  # waits for the write in flight
    # Answered on the lane from the session (with Redis: the account with the revisions) alone.
    reads = [tables_read(s) for s in counter.statements if s.split()[0] == "SELECT"]
    assert reads == ["app_user" if auth_store else "auth_session"], counter.statements
    writes = [s for s in counter.statements if s.split()[0] in WRITES]
    assert len(writes) == (0 if auth_store else 1) and all("auth_session" in s for s in writes)
    # Extended: valid past the idle timeout counted from the login, and no longer due for a touch.
    clock.advance(settings.session_idle_timeout - settings.session_touch_interval // 2)
    assert web.get(url, headers=headers).status_code == 200


@pytest.mark.parametrize("signed", [False, True])
def test_a_late_touch_never_brings_back_an_ended_session(app: FastAPI, web: TestClient, signed: bool) -> None:
    """The background touch writes a while after the session was read: a logout in between (a deleted
    record, or a signed session's tombstone) stays in force."""
    sessions = app.state.services.auth.sessions
    if signed:
        response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
        session_id, token = cookie_value(response, "JSESSIONID"), cookie_value(response, "XSRF-TOKEN")
        assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 200  # its record
    else:
        session_id, token = logged_in(web)
    read = sessions.store.get(session_key(session_id))
    assert read is not None
    assert web.post("/j_service_logout", headers=session_headers(session_id, token)).status_code == 204
    sessions.store.touch(read, read.last_seen_at + 1, read.last_seen_at + 60)
    assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 401
