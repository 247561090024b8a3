"""Contract tests generated from the published OpenAPI description: schemathesis with every check it has.

Each operation runs through schemathesis' examples, coverage and fuzzing phases (positive and negative data,
undeclared methods, missing headers), authenticated, against its own freshly seeded repository; the stateful
phase then follows the links schemathesis infers between operations over one repository, where
use-after-free and resource availability apply. Every failure of any check fails the test, with one narrow
exception: a 400 for a schema-valid request is accepted only where KNOWN_REFUSALS lists the operation with
the problem code (and error item codes and pointers) of a rule no JSON Schema can state."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from schemathesis import Case, CheckContext, Response
from schemathesis.config import ProjectConfig
from schemathesis.core.failures import Failure
from schemathesis.engine import events, from_schema
from schemathesis.engine.recorder import Interaction
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance
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


@dataclass(frozen=True)
class KnownRefusal:
    """A 400 that a schema-valid request may get because the rule it breaks is beyond JSON Schema: a name
    that must exist in the repository at run time, iteraQL text that must parse, a cursor the service must
    have issued, a revision that must already exist. The problem must carry `code`, at least one error
    item, and every item must name one of `items`' (item code, pointer prefix) pairs."""

    reason: str
    code: str
    items: tuple[tuple[str, str], ...]

    def explains(self, problem: Any) -> bool:
        if not isinstance(problem, dict) or problem.get("code") != self.code:
            return False
        errors = problem.get("errors")
        if not isinstance(errors, list) or not errors:
            return False
        return all(
            isinstance(error, dict)
            and any(
                error.get("code") == item_code and str(error.get("pointer", "")).startswith(prefix)
                for item_code, prefix in self.items
            )
            for error in errors
        )


# NUL is refused in every text (API.md section 7: PostgreSQL cannot store it) before anything else is read.
NUL = ("invalid_character", "/")
UNKNOWN_ROLES = KnownRefusal(
    "role names must exist; a password may be neither the login nor a common one (API.md 1.9); no text may "
    "hold NUL",
    "validation_failed",
    (("unknown_role", "/roles/"), ("weak_password", "/password"), NUL),
)
UNKNOWN_GROUP_MEMBERS = KnownRefusal(
    "attribute and role names must exist; no text may hold NUL",
    "validation_failed",
    (("unknown_attribute", "/attributes/"), ("unknown_role", "/permissions/"), NUL),
)
UNKNOWN_ROLE_REFERENCES = KnownRefusal(
    "type and sub-role names must exist; no text may hold NUL",
    "validation_failed",
    (("unknown_type", "/typePermissions/"), ("unknown_role", "/subRoles/"), NUL),
)
UNKNOWN_ATTRIBUTE_SCOPE = KnownRefusal(
    "group, type and relation type names must exist, a number's max may not be below its min; no text may "
    "hold NUL",
    "validation_failed",
    (
        ("out_of_range", "/max"),
        ("unknown_group", "/group"),
        ("unknown_type", "/types/"),
        ("unknown_relation_type", "/relationTypes/"),
        NUL,
    ),
)
UNKNOWN_RELATION_ENDS = KnownRefusal(
    "the types at both ends must exist, and the default name `{source}_{target}` made of them must be a "
    "valid name (an explicit `name` has its pattern in the description); no text may hold NUL",
    "validation_failed",
    (("unknown_type", "/source"), ("unknown_type", "/target"), ("invalid_name", "/name"), NUL),
)
NUL_IN_TEXT = KnownRefusal("no text may hold NUL", "validation_failed", (NUL,))
NUL_IN_QUERY = KnownRefusal(
    "no query parameter may hold NUL", "validation_failed", (("invalid_character", "query:"),)
)
PROJECTED_SCENARIOS = KnownRefusal(
    "a projection applies at most 20 scenarios", "validation_failed", (("too_many", "query:scenarios"),)
)
LIST_PROJECTION = KnownRefusal(
    "a projection is a real date, goes with neither asOf nor a scenario, applies at most 20 scenarios; "
    "scenarios go only with a projection",
    "validation_failed",
    (
        ("invalid_date", "query:projection"),
        ("not_with_projection", "query:asOf"),
        ("not_with_projection", "query:scenario"),
        ("projection_required", "query:scenarios"),
        ("too_many", "query:scenarios"),
    ),
)
QUERY_PROJECTION = KnownRefusal(
    "a query's projection is a real date, goes with neither asOf nor a scenario, applies at most 20 "
    "scenarios; scenarios go only with a projection",
    "validation_failed",
    (
        ("invalid_date", "/projection"),
        ("not_with_projection", "/asOf"),
        ("not_with_projection", "query:asOf"),
        ("not_with_projection", "query:scenario"),
        ("projection_required", "/scenarios"),
        ("too_many", "/scenarios"),
    ),
)
NUMBER_ONLY_SETTINGS = KnownRefusal(
    "unit, min and max apply only to number attributes, and an update without `valueType` keeps the stored "
    "one; no text may hold NUL",
    "validation_failed",
    (("not_applicable", "/unit"), ("not_applicable", "/min"), ("not_applicable", "/max"), NUL),
)
# Which keys an element body may have, and what each value must be, is the metamodel as it stands when the
# request arrives (attributes, their value types, literals, `multiple`, `mandatory`, users and elements
# referred to): the description can only say "arrays under any key".
ELEMENT_VALUE_CODES = (
    "unknown_property",
    "wrong_type",
    "text_value",
    "number_value",
    "bool_value",
    "date_value",
    "bad_date",
    "bad_interval",
    "date_end",
    "empty_value",
    "out_of_range",
    "too_long",
    "too_many_values",
    "unknown_literal",
    "literal_id",
    "unknown_user",
    "unknown_target",
    "duplicate",
    "mandatory",
    "cycle",
    "invalid_character",
)
ELEMENT_BODY = KnownRefusal(
    "element keys and values must fit the metamodel at run time; no text may hold NUL",
    "validation_failed",
    tuple((code, "/") for code in ELEMENT_VALUE_CODES),
)
BULK_ELEMENT_BODIES = KnownRefusal(
    "each element must fit the metamodel at run time; no text may hold NUL",
    "validation_failed",
    (*((code, "/elements/") for code in ELEMENT_VALUE_CODES), NUL),
)
ARCHIMATE_FILE = KnownRefusal(
    "the body must be an ArchiMate exchange file (a <model> of the 3.x or 2.1 namespace) or a zip of "
    "Archi's CSV files; the media type says which, the schema cannot",
    "malformed_body",
    (
        ("malformed_body", "body"),
        ("malformed_body", "elements.csv"),
        ("malformed_body", "relations.csv"),
        ("malformed_body", "properties.csv"),
    ),
)
HISTORY_CURSOR = KnownRefusal(
    "a cursor must be one the service issued for this listing",
    "invalid_cursor",
    (("invalid_cursor", "query:cursor"),),
)
LISTING_CURSOR = KnownRefusal(
    "a cursor must be one the service issued",
    "invalid_cursor",
    (("invalid_cursor", "query:cursor"), ("invalid_cursor", "/cursor")),
)
FUTURE_REVISION = KnownRefusal(
    "an asOf revision must already exist",
    "validation_failed",
    (("future_revision", "query:asOf"), ("future_revision", "/asOf")),
)
# A request names one scenario: by the parameter or the header, not two different ones.
ONE_SCENARIO = KnownRefusal(
    "the scenario parameter and the Blockrepo-Scenario header may not name two scenarios; asOf does not "
    "go with a scenario",
    "validation_failed",
    (
        ("two_scenarios", "query:scenario"),
        ("not_with_scenario", "query:asOf"),
        ("not_with_scenario", "/asOf"),
    ),
)
SCENARIO_BODY = KnownRefusal(
    "a base revision must already exist; no text may hold NUL",
    "validation_failed",
    (("future_revision", "/base"), NUL),
)
SCENARIO_RESOLUTION = KnownRefusal(
    "a resolution settles a conflict the scenario has at run time, in a way its kind allows",
    "validation_failed",
    (("no_conflict", "/field"), ("value_required", "/value"), ("take_not_allowed", "/take"), NUL),
)
SCENARIO_REVIEW = KnownRefusal(
    "reviewers must be enabled accounts, at least as many as the approvals required; no text may hold NUL",
    "validation_failed",
    (("unknown_user", "/reviewers/"), ("out_of_range", "/requiredApprovals"), NUL),
)
SCENARIO_SHARES = KnownRefusal(
    "a scenario is shared with existing roles, each named once; no text may hold NUL",
    "validation_failed",
    (("unknown_role", "/shares/"), ("duplicate_role", "/shares/"), NUL),
)
SCENARIO_COMMENT = KnownRefusal(
    "a comment on a field names its element; no text may hold NUL",
    "validation_failed",
    (("required", "/element"), NUL),
)
DIFF_RANGE = KnownRefusal(
    "a diff's range must run forward to a revision that exists, over a type the caller may read",
    "validation_failed",
    (
        ("after_to", "query:from"),
        ("future_revision", "query:from"),
        ("future_revision", "query:to"),
        ("required", "query:from"),
        ("unknown_type", "query:type"),
    ),
)
TOKEN_BODY = KnownRefusal(
    "a token's expiry must be a time in the future, at most token_max_days ahead (and only earlier when "
    "changed); the types, groups, functions, owner and scenario it names must exist; its networks must parse",
    "validation_failed",
    (
        ("invalid_time", "/expiresAt"),
        ("past_expiry", "/expiresAt"),
        ("expiry_too_far", "/expiresAt"),
        ("later_expiry", "/expiresAt"),
        ("unknown_type", "/types/"),
        ("unknown_group", "/attributeGroups/"),
        ("unknown_permission", "/functions/"),
        ("invalid_network", "/allowedNetworks/"),
        ("empty", "/allowedNetworks"),
        ("unknown_user", "/owner"),
        ("unknown_scenario", "/scenario"),
        NUL,
    ),
)
WEBHOOK_BODY = KnownRefusal(
    "a webhook's URL must resolve to an address it may deliver to (the tests allow none), and the types it "
    "names must exist and be readable",
    "validation_failed",
    (
        ("invalid_url", "/url"),
        ("unresolvable_target", "/url"),
        ("target_not_allowed", "/url"),
        ("unknown_type", "/types/"),
        # A scenario's webhook (`scope: scenario:<key>`) delivers element and relation events only.
        ("not_in_scenario", "/events"),
        NUL,
    ),
)
DELIVERY_STATUS = KnownRefusal(
    "a delivery status is delivered or failed", "validation_failed", (("invalid_status", "query:status"),)
)
SORT_KEY = KnownRefusal(
    "a sort key must be a property of the type",
    "invalid_sort",
    (("invalid_sort", "query:sort"), ("invalid_sort", "/sort")),
)
FILTER_SYNTAX = KnownRefusal(
    "a filter must parse as iteraQL", "query_syntax", (("query_syntax", "query:filter"),)
)
QUERY_SYNTAX = KnownRefusal("a query must parse as iteraQL", "query_syntax", (("query_syntax", "/query"),))
QUERY_NAMES = KnownRefusal(
    "the types and properties a query names must exist", "query_invalid", (("query_invalid", "/query"),)
)
# A saved query (a scenario rule) within the published query limits; the query route states them itself.
QUERY_WITHIN_LIMITS = tuple(
    KnownRefusal("a query stays within the query limits", code, ((code, "/query"),))
    for code in (
        "query_too_long",
        "query_too_many_steps",
        "query_too_deep",
        "query_too_many_operators",
        "query_literal_too_long",
    )
)
QUERY_MEMBER_TWICE = KnownRefusal(
    "`fields`, `limit`, `sort`, `cursor`, `count` and `asOf` of a query go in the URL or in the JSON body, "
    "not in both",
    "validation_failed",
    tuple(
        ("given_twice", f"query:{name}") for name in ("fields", "limit", "sort", "cursor", "count", "asOf")
    ),
)
FIELD_NAMES = KnownRefusal(
    "the fields named in `fields` must be properties of the type",
    "unknown_field",
    (("unknown_field", "query:fields"), ("unknown_field", "/fields")),
)
# A saved report's members: those of its kind alone, the one its kind needs, a diagram configuration that
# can be stored, a type that exists; its filter or query valid iteraQL within the query limits, its sort
# keys and fields properties of the type (checked at save, and again as the caller at run time).
REPORT_BODY = KnownRefusal(
    "a report gives the members of its kind alone, an existing type and a storable configuration; no text "
    "may hold NUL",
    "validation_failed",
    (
        ("not_for_kind", "/"),
        ("mandatory", "/"),
        ("too_large", "/config"),
        ("invalid_value", "/config"),
        ("unknown_type", "/type"),
        NUL,
    ),
)
REPORT_QUERY = tuple(
    KnownRefusal(
        "a report's filter or query is valid iteraQL within the query limits",
        code,
        ((code, "/query"), (code, "/filter"), (code, "query:filter")),
    )
    for code in (
        "query_syntax",
        "query_invalid",
        "query_too_long",
        "query_too_many_steps",
        "query_too_deep",
        "query_too_many_operators",
        "query_literal_too_long",
    )
)
REPORT_SHARES = KnownRefusal(
    "a report is shared with existing roles, each named once; no text may hold NUL",
    "validation_failed",
    (("unknown_role", "/shares/"), ("duplicate_role", "/shares/"), NUL),
)

# The only operations whose schema-valid requests may be answered 400, and only with these problems.
KNOWN_REFUSALS: dict[tuple[str, str], tuple[KnownRefusal, ...]] = {
    ("POST", "/api/administration/users"): (UNKNOWN_ROLES,),
    ("PUT", "/api/administration/users/{id}"): (UNKNOWN_ROLES,),
    ("POST", "/api/administration/attributegroups"): (UNKNOWN_GROUP_MEMBERS,),
    ("PUT", "/api/administration/attributegroups/{id}"): (UNKNOWN_GROUP_MEMBERS,),
    ("POST", "/api/administration/roles"): (UNKNOWN_ROLE_REFERENCES,),
    ("PUT", "/api/administration/roles/{id}"): (UNKNOWN_ROLE_REFERENCES,),
    ("POST", "/api/administration/attributes"): (UNKNOWN_ATTRIBUTE_SCOPE,),
    ("PUT", "/api/administration/attributes/{id}"): (UNKNOWN_ATTRIBUTE_SCOPE, NUMBER_ONLY_SETTINGS),
    ("POST", "/api/metamodel/relationtypes"): (UNKNOWN_RELATION_ENDS,),
    ("PUT", "/api/metamodel/relationtypes/{name}"): (NUL_IN_TEXT,),
    ("POST", "/api/metamodel/types"): (NUL_IN_TEXT,),
    ("PUT", "/api/metamodel/types/{type}"): (NUL_IN_TEXT,),
    ("GET", "/api/projection"): (HISTORY_CURSOR, NUL_IN_QUERY, PROJECTED_SCENARIOS),
    ("GET", "/api/projection/diff"): (HISTORY_CURSOR, NUL_IN_QUERY, PROJECTED_SCENARIOS),
    ("GET", "/api/history"): (HISTORY_CURSOR, NUL_IN_QUERY),
    ("GET", "/api/history/diff"): (DIFF_RANGE, HISTORY_CURSOR, NUL_IN_QUERY),
    ("GET", "/api/history/{type}"): (HISTORY_CURSOR, NUL_IN_QUERY, ONE_SCENARIO),
    ("GET", "/api/history/{type}/{id}"): (HISTORY_CURSOR, NUL_IN_QUERY, ONE_SCENARIO),
    ("GET", "/api/element/{type}/{id}"): (FUTURE_REVISION, ONE_SCENARIO),
    ("DELETE", "/api/element/{type}/{id}"): (ONE_SCENARIO,),
    ("POST", "/api/scenarios"): (SCENARIO_BODY,),
    ("POST", "/api/scenarios/{key}/resolutions"): (SCENARIO_RESOLUTION,),
    ("POST", "/api/scenarios/{key}/review"): (SCENARIO_REVIEW,),
    ("PUT", "/api/scenarios/{key}/shares"): (SCENARIO_SHARES,),
    ("POST", "/api/scenario-rules"): (QUERY_SYNTAX, QUERY_NAMES, NUL_IN_TEXT, *QUERY_WITHIN_LIMITS),
    ("POST", "/api/scenarios/{key}/comments"): (SCENARIO_COMMENT,),
    ("GET", "/api/scenarios/{key}/diff"): (HISTORY_CURSOR,),
    ("GET", "/api/massdata/{type}"): (
        ONE_SCENARIO,
        FUTURE_REVISION,
        LISTING_CURSOR,
        SORT_KEY,
        FILTER_SYNTAX,
        FIELD_NAMES,
        NUL_IN_QUERY,
        LIST_PROJECTION,
    ),
    ("POST", "/api/massdata/query"): (
        ONE_SCENARIO,
        QUERY_PROJECTION,
        FUTURE_REVISION,
        LISTING_CURSOR,
        SORT_KEY,
        QUERY_SYNTAX,
        QUERY_NAMES,
        QUERY_MEMBER_TWICE,
        FIELD_NAMES,
        NUL_IN_TEXT,
    ),
    ("POST", "/api/massdata/import"): (NUL_IN_TEXT, NUL_IN_QUERY),
    ("GET", "/api/massdata/export"): (ONE_SCENARIO, LIST_PROJECTION, NUL_IN_QUERY),
    ("GET", "/api/exchange/archimate"): (FUTURE_REVISION, ONE_SCENARIO, NUL_IN_QUERY),
    ("POST", "/api/exchange/archimate"): (ARCHIMATE_FILE, NUL_IN_QUERY),
    ("POST", "/api/element/{type}"): (ELEMENT_BODY, ONE_SCENARIO),
    ("PUT", "/api/element/{type}/{id}"): (ELEMENT_BODY, ONE_SCENARIO),
    ("PATCH", "/api/element/{type}/{id}"): (ELEMENT_BODY, ONE_SCENARIO),
    ("POST", "/api/massdata/{type}"): (BULK_ELEMENT_BODIES, ONE_SCENARIO, NUL_IN_QUERY),
    ("POST", "/api/tokens"): (TOKEN_BODY,),
    ("PATCH", "/api/tokens/{id}"): (TOKEN_BODY,),
    ("POST", "/api/webhooks"): (WEBHOOK_BODY,),
    ("PATCH", "/api/webhooks/{id}"): (WEBHOOK_BODY,),
    ("GET", "/api/webhooks/{id}/deliveries"): (DELIVERY_STATUS,),
    ("POST", "/api/reports"): (REPORT_BODY, *REPORT_QUERY, SORT_KEY, FIELD_NAMES),
    ("PATCH", "/api/reports/{id}"): (REPORT_BODY, *REPORT_QUERY, SORT_KEY, FIELD_NAMES),
    ("PUT", "/api/reports/{id}/shares"): (REPORT_SHARES,),
    ("GET", "/api/reports/{id}/run"): (LISTING_CURSOR, NUL_IN_QUERY, *REPORT_QUERY, SORT_KEY, FIELD_NAMES),
}


def known_refusal(method: str, path: str, status_code: int, problem: Any) -> KnownRefusal | None:
    """The entry of KNOWN_REFUSALS that explains this answer to a schema-valid request, if any."""
    if status_code != 400:
        return None
    refusals = KNOWN_REFUSALS.get((method.upper(), path), ())
    return next((refusal for refusal in refusals if refusal.explains(problem)), None)


def _problem(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


@schemathesis.check
def positive_data_acceptance_beyond_known_refusals(
    ctx: CheckContext, response: Response, case: Case
) -> bool | None:
    """schemathesis' own positive_data_acceptance, except for the 400s KNOWN_REFUSALS explains."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        operation = case.operation
        if known_refusal(operation.method, operation.path, response.status_code, _problem(response)):
            return None
        raise


# The live change stream never ends by itself, and an in-process client waits for the whole body:
# `tests/e2e/test_change_stream_live.py` checks its answers (stream, 400, 401, 403, 404) on a live server.
ENDLESS = ("get", "/api/history/stream")


def _operations() -> list[tuple[str, str]]:
    # Building the description connects to nothing, so collection needs no database.
    document = create_app(Settings(database_url="sqlite:///:memory:")).openapi()
    return [
        (method, path)
        for path, item in sorted(document["paths"].items())
        for method in HTTP_METHODS
        if method in item and (method, path) != ENDLESS
    ]


def contract_schema(
    app: FastAPI, *, phases: tuple[str, ...], openapi_path: str = OPENAPI_PATH, login: str = "system"
) -> BaseSchema:
    """The published description, loaded from `app`, set up to run `phases` with every check."""
    schema = schemathesis.openapi.from_asgi(openapi_path, app).exclude(
        method=ENDLESS[0].upper(), path=ENDLESS[1]
    )
    config: ProjectConfig = schema.config
    # In-process requests on a busy CI machine may take long; a slow answer is no contract failure.
    config.update(basic_auth=(login, ADMIN_PASSWORD), workers=1, request_timeout=REQUEST_TIMEOUT)
    # Every check schemathesis has (its CLI's `--checks all`); the response time limit is no check of the
    # contract but a timing, which tests here never assert. positive_data_acceptance runs inside its
    # wrapper above, so it is not run a second time on its own.
    config.checks.update(
        included_check_names=["all"],
        excluded_check_names=["max_response_time", positive_data_acceptance.__name__],
    )
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


class Person(BaseModel):
    roles: list[str]


def _refusing_app(item_code: str) -> FastAPI:
    """A service with one operation of KNOWN_REFUSALS that refuses every body with `item_code`."""
    refusing = FastAPI()

    @refusing.post("/api/administration/users", status_code=201)
    def create_user(body: Person) -> JSONResponse:
        problem = {
            "type": "about:blank",
            "title": "Validation Failed",
            "status": 400,
            "code": "validation_failed",
            "errors": [{"pointer": "/roles/0", "code": item_code, "message": "refused"}],
        }
        return JSONResponse(problem, status_code=400, media_type="application/problem+json")

    return refusing


def _rejections(app: FastAPI) -> list[ContractFailure]:
    schema = contract_schema(app, phases=PER_OPERATION_PHASES, openapi_path="/openapi.json")
    return [item for item in run_failures(schema) if isinstance(item.failure, RejectedPositiveData)]


def test_known_refusal_lets_its_own_400_pass() -> None:
    assert _rejections(_refusing_app("unknown_role")) == []


def test_known_refusal_still_fails_a_400_with_another_code() -> None:
    rejections = _rejections(_refusing_app("string_too_short"))
    assert rejections, "a 400 with a code the table does not list must fail positive_data_acceptance"


@pytest.mark.parametrize(
    "problem",
    [
        {"code": "validation_failed", "errors": [{"pointer": "/roles/0", "code": "unknown_attribute"}]},
        {"code": "validation_failed", "errors": [{"pointer": "/login", "code": "unknown_role"}]},
        {"code": "validation_failed", "errors": []},
        {"code": "query_syntax", "errors": [{"pointer": "/roles/0", "code": "unknown_role"}]},
        {
            "code": "validation_failed",
            "errors": [
                {"pointer": "/roles/0", "code": "unknown_role"},
                {"pointer": "/login", "code": "string_pattern_mismatch"},
            ],
        },
        None,
    ],
)
def test_known_refusal_needs_the_listed_code_item_and_pointer(problem: Any) -> None:
    assert known_refusal("POST", "/api/administration/users", 400, problem) is None


def test_known_refusal_applies_only_to_400_of_the_listed_operation() -> None:
    problem = {"code": "validation_failed", "errors": [{"pointer": "/roles/1", "code": "unknown_role"}]}
    assert known_refusal("post", "/api/administration/users", 400, problem) is UNKNOWN_ROLES
    assert known_refusal("POST", "/api/administration/users", 422, problem) is None
    assert known_refusal("POST", "/api/administration/roles", 400, problem) is None


def test_published_description_is_openapi_3_1_of_version_7_4(anon: TestClient) -> None:
    document = anon.get(OPENAPI_PATH).json()
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "7.4"
