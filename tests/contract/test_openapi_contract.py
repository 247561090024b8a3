"""Contract tests generated from the published OpenAPI description: schemathesis with every check it has.

Each operation runs through schemathesis' examples, coverage and fuzzing phases (positive and negative data,
undeclared methods, missing headers), authenticated, against its own freshly seeded repository; the stateful
phase then follows the links schemathesis infers between operations over one repository, where
use-after-free and resource availability apply. Every failure of any check fails the test."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import pytest
import schemathesis
from fastapi import FastAPI
from schemathesis.config import ProjectConfig
from schemathesis.core.failures import Failure
from schemathesis.engine import events, from_schema
from schemathesis.engine.recorder import Interaction
from schemathesis.schemas import BaseSchema
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.conftest import ADMIN_PASSWORD

EXAMPLES = int(os.environ.get("BLOCKREPO_CONTRACT_EXAMPLES", "25"))
OPENAPI_PATH = "/api/7_4/openapi.json"
HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head")
PER_OPERATION_PHASES = ("examples", "coverage", "fuzzing")
PASSWORD_CHANGE = ("put", "/api/administration/users/{id}")
REQUEST_TIMEOUT = 300.0


def _operations() -> list[tuple[str, str]]:
    # Building the description connects to nothing, so collection needs no database.
    document = create_app(Settings(database_url="sqlite:///:memory:")).openapi()
    return [
        (method, path)
        for path, item in sorted(document["paths"].items())
        for method in HTTP_METHODS
        if method in item
    ]


def contract_schema(
    app: FastAPI, *, phases: tuple[str, ...], openapi_path: str = OPENAPI_PATH, login: str = "system"
) -> BaseSchema:
    """The published description, loaded from `app`, set up to run `phases` with every check."""
    schema = schemathesis.openapi.from_asgi(openapi_path, app)
    config: ProjectConfig = schema.config
    # In-process requests on a busy CI machine may take long; a slow answer is no contract failure.
    config.update(basic_auth=(login, ADMIN_PASSWORD), workers=1, request_timeout=REQUEST_TIMEOUT)
    # Every check schemathesis has (its CLI's `--checks all`); the response time limit is no check of the
    # contract but a timing, which tests here never assert.
    config.checks.update(included_check_names=["all"], excluded_check_names=["max_response_time"])
    config.generation.update(max_examples=EXAMPLES, deterministic=True, database="none")
    for name in ("examples", "coverage", "fuzzing", "stateful"):
        config.phases.get_by_name(name=name).enabled = name in phases
    config.seed = 0
    return schema


@dataclass(frozen=True)
class ContractFailure:
    """One failed check with the request that made it (as curl) and the start of the response."""

    failure: Failure
    request: str
    response: str

    def __str__(self) -> str:
        failure = self.failure
        return f"--- {failure.operation}: {failure.title}\n{failure.message}\n{self.request}\n{self.response}"


def _response_text(interaction: Interaction | None) -> str:
    if interaction is None or interaction.response is None:
        return "(no response)"
    response = interaction.response
    body = response.content.decode(errors="replace")
    return f"[{response.status_code}] {body[:300]}"


def run_failures(schema: BaseSchema) -> list[ContractFailure]:
    """Every failed check of one schemathesis run; an error of the run (an exception) fails at once."""
    failures: list[ContractFailure] = []
    errors: list[str] = []
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            recorder = event.recorder
            for case_id, nodes in recorder.checks.items():
                failures.extend(
                    ContractFailure(
                        node.failure_info.failure,
                        node.failure_info.code_sample,
                        _response_text(recorder.interactions.get(case_id)),
                    )
                    for node in nodes
                    if node.failure_info is not None
                )
        elif isinstance(event, events.NonFatalError):
            errors.append(f"{event.label}: {event.value!r}")
        elif isinstance(event, events.FatalError):
            errors.append(repr(event.exception))
    if errors:
        raise AssertionError("schemathesis errors:\n" + "\n".join(errors))
    return failures


def describe(failures: list[ContractFailure], per_check: int = 3) -> str:
    """Counts by check, then the first few failures of each check on each operation."""
    counts = Counter(f"{item.failure.code} {item.failure.title}" for item in failures)
    lines = [f"{count} x {title}" for title, count in sorted(counts.items())]
    shown: Counter[tuple[str | None, str]] = Counter()
    for item in failures:
        key = (item.failure.operation, item.failure.title)
        shown[key] += 1
        if shown[key] <= per_check:
            lines.append(str(item))
    return "\n".join(lines)


@pytest.mark.parametrize(("method", "path"), _operations())
def test_operation_honours_its_contract(app: FastAPI, method: str, path: str) -> None:
    schema = contract_schema(app, phases=PER_OPERATION_PHASES).include(method=method.upper(), path=path)
    if (method, path) == PASSWORD_CHANGE:
        # Changing a password (or disabling, demoting) the user the run authenticates as would make every
        # later request of the run fail, so this operation changes a user of its own.
        schema.config.update(parameters={"path.id": _own_user(app)})
    failures = run_failures(schema)
    assert not failures, describe(failures)


def _own_user(app: FastAPI) -> int:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        response = client.post(
            "/api/administration/users",
            json={"login": "contract-target", "password": "contract-target-password", "roles": []},
            auth=("system", ADMIN_PASSWORD),
        )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_stateful_sequences_honour_the_contract(app: FastAPI) -> None:
    failures = run_failures(contract_schema(app, phases=("stateful",)))
    assert not failures, describe(failures)


def test_contract_check_catches_a_server_error() -> None:
    """The harness itself must be able to fail."""
    broken = FastAPI()

    @broken.get("/items/{item_id}")
    def read_item(item_id: int) -> dict[str, int]:
        if item_id > 10:
            raise RuntimeError("boom")
        return {"id": item_id}

    with pytest.raises(AssertionError, match="boom"):
        run_failures(contract_schema(broken, phases=PER_OPERATION_PHASES, openapi_path="/openapi.json"))


def test_published_description_is_openapi_3_1_of_version_7_4(anon: TestClient) -> None:
    document = anon.get(OPENAPI_PATH).json()
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "7.4"
