"""iteraQL at its limits: how long queries at every default limit take to run, and how long the hostile
queries of issue 14 take to be refused, over `--elements` information systems with a number attribute and
a twelve-level process hierarchy.

    python bench/iteraql_limits.py                                  # SQLite (a temporary file)
    python bench/iteraql_limits.py --database postgresql://postgres@127.0.0.1:5432/postgres

In-process (Starlette's TestClient, no network), as an editor with MASSDATA. Each query is sent once to
warm up, then `--repeat` times; the table gives the median and the 95th percentile in milliseconds and the
status code. Checks only that each query gets the status it should (200 at the limits, 400 beyond).
"""

from __future__ import annotations

import argparse
import warnings

from harness import latency, scratch_database
from rich.console import Console
from rich.table import Table

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import initialize
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password-1"
EDITOR = ("erika", "bench-password-2")
BATCH = 5000

# A step with two nested counts and 11 operators: eleven of them use 121 of the 128 operators.
ALL_LIMITS_STEP = (
    "/children[count(children[count(children[@id > 1 | @id > 2]) > 0]) > 0 | "
    + "@id != 1 & " * 9
    + "@id > 0]"
)
AT_THE_LIMITS = {
    "12 steps": "BusinessProcess" + "/children" * 11 + ";",
    "12 steps, each filtered": "BusinessProcess[@name = 'Level 0']" + "/children[@id > 0 | @name = 'x']" * 11,
    "128 | of attribute comparisons": "InformationSystem[" + "@Costs = 1 | " * 128 + "@Costs = 5];",
    "128 & of counts": "BusinessProcess[" + "count(children) < 5 & " * 128 + "@id > 0];",
    "nesting 16: ( x15": "InformationSystem[" + "(" * 15 + "@Costs > 700" + ")" * 15 + "];",
    "nesting 16: count(…[ x7": "BusinessProcess[" + "count(children[" * 7 + "@id > 0" + "]) > 0" * 7 + "];",
    "all at once: 12 steps, 121 operators, nesting 5": "BusinessProcess" + ALL_LIMITS_STEP * 11 + ";",
}
REFUSED = {
    "5,000 steps (crashed the worker)": "BusinessProcess" + "/children" * 5000 + ";",
    "100 steps": "BusinessProcess" + "/children" * 100 + ";",
    "1,000 !": "InformationSystem[" + "!" * 1000 + "@Costs = 1];",
    "1,000 &": "InformationSystem[" + "@Costs=1&" * 1000 + "@Costs=1];",
    "2,000 &": "InformationSystem[" + "@Costs = 1 & " * 2000 + "@Costs = 1];",
    "5,000 digits": "InformationSystem[@Costs = " + "9" * 5000 + "];",
    "beyond 64 bits": "InformationSystem[@Costs = 99999999999999999999];",
    "NUL in a string": "InformationSystem[@name = 'a\x00b'];",
}


def populate(client: TestClient, elements: int) -> None:
    def check(response: object, status: int = 200) -> None:
        code = getattr(response, "status_code", None)
        assert code == status, getattr(response, "text", response)

    check(
        client.post(
            "/api/administration/attributes",
            json={"name": "Costs", "valueType": "number", "types": ["InformationSystem"]},
        ),
        201,
    )
    role = {
        "name": "editor",
        "functionalPermissions": ["MASSDATA"],
        "typePermissions": {
            name: ["read", "create", "update"] for name in ("BusinessProcess", "InformationSystem")
        },
    }
    check(client.post("/api/administration/roles", json=role), 201)
    user = {
        "login": EDITOR[0],
        "password": EDITOR[1],
        "firstName": "Erika",
        "lastName": "Bench",
        "email": "erika@example.org",
        "roles": ["editor"],
    }
    check(client.post("/api/administration/users", json=user), 201)
    for first in range(0, elements, BATCH):
        batch = [
            {"name": [f"IS {n:06d}"], "Costs": [n % 1000]} for n in range(first, min(elements, first + BATCH))
        ]
        check(client.post("/api/massdata/InformationSystem", json={"elements": batch}))
    parent: int | None = None
    for level in range(12):
        for sibling in range(max(1, elements // 1200)):
            body: dict[str, list[object]] = {"name": [f"Level {level}" + (f".{sibling}" if sibling else "")]}
            if parent is not None:
                body["parent"] = [parent]
            response = client.post("/api/element/BusinessProcess", json=body)
            check(response, 201)
            if not sibling:
                next_parent = response.json()["id"][0]
        parent = next_parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--database", default=None, help="a PostgreSQL server (default: a temporary SQLite file)"
    )
    args = parser.parse_args()
    console = Console(width=150)
    with scratch_database(args.database, "iteraql_limits") as url:
        settings = Settings(database_url=url, admin_password=PASSWORD)
        initialize(build_engine(url), settings, Passwords(settings))
        app = create_app(settings)
        with TestClient(app, base_url="http://127.0.0.1") as admin:
            admin.auth = ("system", PASSWORD)
            populate(admin, args.elements)
        table = Table(
            title=f"iteraQL at and beyond its limits, {args.elements:,} elements ({url.split(':')[0]})"
        )
        for column in ("query", "characters", "status", "median ms", "p95 ms"):
            table.add_column(column, justify="left" if column == "query" else "right")
        with TestClient(app, base_url="http://127.0.0.1") as editor:
            editor.auth = EDITOR
            for expected, queries in ((200, AT_THE_LIMITS), (400, REFUSED)):
                for label, text in queries.items():
                    statuses: set[int] = set()

                    def send(text: str = text, statuses: set[int] = statuses) -> None:
                        response = editor.post("/api/massdata/query", json={"query": text, "limit": 1000})
                        statuses.add(response.status_code)

                    median, p95 = latency(send, args.repeat)
                    assert statuses == {expected}, (label, statuses)
                    table.add_row(label, f"{len(text):,}", str(expected), f"{median:.1f}", f"{p95:.1f}")
        app.state.services.dispose()
    console.print(table)


if __name__ == "__main__":
    main()
