"""Every request body of the published description shows an example for each media type it accepts; each
example is valid against its own schema, and each, sent as it stands to a copy of the demo repository, is
accepted: a 2xx, never a 400 for its body. The few exceptions are listed below with their reasons."""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest
from starlette.testclient import TestClient

from blockrepo.api.openapi import OPERATION_METHODS
from blockrepo.app import create_app
from tests.api.demo_repository import DEMO_PASSWORD, database_url, demo_repository
from tests.conftest import ADMIN_PASSWORD, cloned_database, make_settings

__all__ = ["database_url", "demo_repository"]  # fixtures of the demo landscape

OPENAPI_PATH = "/api/7_4/openapi.json"
FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
WRITE_METHODS = ("post", "put", "patch")
# The only writes that take no body: logging out, and a webhook's pause, resume and test message.
BODYLESS = {
    ("post", "/j_service_logout"),
    ("post", "/api/j_service_logout"),
    ("post", "/api/webhooks/{id}/pause"),
    ("post", "/api/webhooks/{id}/resume"),
    ("post", "/api/webhooks/{id}/test"),
    ("post", "/api/scenarios/{key}/close"),
    ("post", "/api/scenarios/{key}/reopen"),
    ("post", "/api/scenarios/{key}/approvals"),
    ("post", "/api/scenarios/{key}/sync"),
    ("post", "/api/scenarios/{key}/revert"),
}
# The webhook examples deliver to this host; tests have no name server, so it resolves to a public address
# (example.com's) for the target check. Delivery is off in tests: nothing is sent there.
WEBHOOK_HOST = "cmdb.example.com"
PUBLIC_ADDRESS = "93.184.215.14"


@dataclass(frozen=True)
class Sent:
    """One example as a request: the operation, its media type and the example's name."""

    method: str
    path: str
    media_type: str
    name: str
    value: Any

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path} {self.media_type} example {self.name!r}"


def _token(client: TestClient) -> dict[str, object]:
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    response = client.post("/api/tokens", json={"name": "prepared", "expiresAt": expires.isoformat()})
    assert response.status_code == 201, response.text
    return {"id": response.json()["id"]}


def _webhook(client: TestClient) -> dict[str, object]:
    body = {"name": "prepared", "url": f"https://{WEBHOOK_HOST}/hooks", "events": ["element.updated"]}
    response = client.post("/api/webhooks", json=body)
    assert response.status_code == 201, response.text
    return {"id": response.json()["id"]}


def _report(client: TestClient) -> dict[str, object]:
    body = {"name": "prepared", "kind": "list", "type": "InformationSystem"}
    response = client.post("/api/reports", json=body)
    assert response.status_code == 201, response.text
    return {"id": response.json()["id"]}


def _scenario_in_conflict(client: TestClient) -> dict[str, object]:
    """A scenario whose ERP (InformationSystem 128) has a Criticality that main changed too."""
    response = client.post("/api/scenarios", json={"name": "prepared"})
    assert response.status_code == 201, response.text
    key = response.json()["key"]
    erp = "/api/element/InformationSystem/128"
    for params, value in (({"scenario": key}, "low"), ({}, "medium")):
        changed = client.patch(erp, json={"Criticality": [value]}, params=params)
        assert changed.status_code == 200, changed.text
    return {"key": key}


# What each path's parameters are in the demo: an element, type, relation type, account, role, attribute or
# group that exists there (Order handling is BusinessProcess 7; anna is user 2; Business editor role 3;
# Criticality attribute 8; Finance group 3), or one the test makes first (tokens and webhooks: the demo has
# none). A path with a body that is missing here fails the test, so a new operation gets its values.
PATH_VALUES: dict[str, dict[str, object] | Callable[[TestClient], dict[str, object]]] = {
    "/j_service_security_check": {},
    "/api/j_service_security_check": {},
    "/api/element/{type}/{id}": {"type": "BusinessProcess", "id": 7},
    "/api/element/{type}": {"type": "BusinessProcess"},
    "/api/massdata/{type}": {"type": "BusinessProcess"},
    "/api/massdata/query": {},
    "/api/massdata/import": {},
    "/api/exchange/archimate": {},
    "/api/metamodel/types": {},
    "/api/metamodel/types/{type}": {"type": "InformationSystem"},
    "/api/metamodel/relationtypes": {},
    "/api/metamodel/relationtypes/{name}": {"name": "InformationSystem_InfrastructureElement"},
    "/api/administration/users": {},
    "/api/administration/users/{id}": {"id": 2},
    "/api/administration/roles": {},
    "/api/administration/roles/{id}": {"id": 3},
    "/api/administration/attributes": {},
    "/api/administration/attributes/{id}": {"id": 8},
    "/api/administration/attributegroups": {},
    "/api/administration/attributegroups/{id}": {"id": 3},
    "/api/tokens": {},
    "/api/tokens/revocations": {},
    "/api/tokens/{id}": _token,
    "/api/tokens/{id}/rotate": _token,
    "/api/webhooks": {},
    "/api/webhooks/{id}": _webhook,
    "/api/webhooks/{id}/replay": _webhook,
    "/api/webhooks/{id}/secret": _webhook,
    "/api/scenarios": {},
    "/api/scenario-rules": {},
    "/api/scenarios/{key}/resolutions": _scenario_in_conflict,
    "/api/scenarios/{key}/merge": _scenario_in_conflict,
    "/api/scenarios/{key}/review": _scenario_in_conflict,
    "/api/scenarios/{key}/comments": _scenario_in_conflict,
    "/api/scenarios/{key}/shares": _scenario_in_conflict,
    "/api/reports": {},
    "/api/reports/{id}": _report,
    "/api/reports/{id}/shares": _report,
}
# Examples that are not answered 2xx, with the answer they get and why. Both are about the credentials or
# the clock, never the body's shape.
EXPECTED_REFUSALS: dict[tuple[str, str], tuple[int, str, str]] = {
    (method, path): (
        401,
        "unauthenticated",
        "the example's password stands for the one `blockrepo demo` printed; the demo's here is another",
    )
    for method, path in (("post", "/j_service_security_check"), ("post", "/api/j_service_security_check"))
}
# Merging a scenario whose conflict is not settled is refused, as it should be (the dry run answers too).
EXPECTED_REFUSALS[("post", "/api/scenarios/{key}/merge")] = (
    409,
    "scenario_conflicts",
    "the prepared scenario's conflict is not settled: a merge lists it",
)


def _within_token_lifetime(body: dict[str, Any]) -> dict[str, Any]:
    # A token lives at most `token_max_days`: a fixed date in the description leaves that window as time
    # passes, so the test sends the example a month ahead of today, everything else as it stands.
    return {**body, "expiresAt": (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).isoformat()}


ADJUSTED: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("post", "/api/tokens"): _within_token_lifetime,
}


def _binary_upload(content: dict[str, Any]) -> bool:
    """A file upload: no example can hold its bytes, so its schema says what to send instead."""
    schema = content.get("schema", {})
    return schema.get("format") == "binary" and bool(schema.get("description"))


def request_examples(document: dict[str, Any]) -> Iterator[Sent]:
    """Every example of every request body, and a failure for a media type that has none."""
    for path, item in document["paths"].items():
        for method in OPERATION_METHODS:
            body = item.get(method, {}).get("requestBody")
            if body is None:
                continue
            for media_type, content in body["content"].items():
                if "example" in content:
                    yield Sent(method, path, media_type, "example", content["example"])
                for name, example in content.get("examples", {}).items():
                    yield Sent(method, path, media_type, name, example["value"])
                if "example" not in content and not content.get("examples"):
                    assert _binary_upload(content), f"{method.upper()} {path} {media_type}: no example"


@pytest.fixture
def document(anon: TestClient) -> dict[str, Any]:
    return anon.get(OPENAPI_PATH).json()  # type: ignore[no-any-return]


@pytest.fixture
def example_host_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == WEBHOOK_HOST:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_ADDRESS, port))]
        return resolve(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_every_request_body_has_examples_valid_against_its_schema(document: dict[str, Any]) -> None:
    examples = list(request_examples(document))
    without_body = {
        (method, path)
        for path, item in document["paths"].items()
        for method in WRITE_METHODS
        if method in item and "requestBody" not in item[method]
    }
    assert without_body == BODYLESS
    problems = []
    for sent in examples:
        content = document["paths"][sent.path][sent.method]["requestBody"]["content"][sent.media_type]
        # The schema is checked with the description's components beside it, so its `$ref`s resolve.
        validator = jsonschema_rs.Draft202012Validator(
            {**content["schema"], "components": document["components"]}
        )
        problems += [f"{sent}: {error.message}" for error in validator.iter_errors(sent.value)]
    assert not problems, "\n".join(problems)


def _send(client: TestClient, sent: Sent, path: str) -> Any:
    if sent.media_type == FORMS[0]:
        return client.post(path, data=sent.value, auth=None)
    if sent.media_type == FORMS[1]:
        fields = {name: (None, str(value)) for name, value in sent.value.items()}
        return client.post(path, files=fields, auth=None)
    value = ADJUSTED.get((sent.method, sent.path), lambda body: body)(sent.value)
    # Text (an iteraQL query, an ArchiMate file) as it is; JSON encoded.
    content = (
        value.encode() if isinstance(value, str) and "json" not in sent.media_type else orjson.dumps(value)
    )
    return client.request(sent.method, path, content=content, headers={"Content-Type": sent.media_type})


@pytest.mark.usefixtures("example_host_resolves")
def test_every_request_example_is_accepted_by_the_demo(
    document: dict[str, Any], demo_repository: str, tmp_path: Path
) -> None:
    examples = list(request_examples(document))
    assert {sent.path for sent in examples} <= set(PATH_VALUES), "give PATH_VALUES the new paths"
    failures = []
    for sent in examples:
        # Each example gets its own copy of the demo: one example's write never decides another's answer.
        with cloned_database(demo_repository, tmp_path) as url:
            app = create_app(make_settings(url, demo_password=DEMO_PASSWORD, webhook_public_targets=True))
            try:
                with TestClient(app, base_url="http://127.0.0.1") as client:
                    client.auth = ("system", ADMIN_PASSWORD)
                    values = PATH_VALUES[sent.path]
                    parameters = values(client) if callable(values) else values
                    response = _send(client, sent, sent.path.format(**parameters))
            finally:
                app.state.services.dispose()
        expected = EXPECTED_REFUSALS.get((sent.method, sent.path))
        if expected is None and not 200 <= response.status_code < 300:
            failures.append(f"{sent}: {response.status_code} {response.text}")
        elif expected is not None and (response.status_code, response.json().get("code")) != expected[:2]:
            failures.append(f"{sent}: expected {expected[:2]} ({expected[2]}), got {response.text}")
    assert not failures, "\n".join(failures)
