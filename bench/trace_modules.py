"""The blockrepo modules one single-element PUT and one JSON import pass through, counted at run time.

    python bench/trace_modules.py            # counts, and the modules of each request
    python bench/trace_modules.py --counts   # counts only

An in-process repository (Starlette's TestClient, SQLite) with bench/massdata_scale.py's attributes gets
a few `TechnicalComponent`s and `InformationSystem`s; then, each after an untraced request of the same
kind (so that what runs once per process is not counted), one `PUT /api/element/InformationSystem/{id}`
changing a value and a relation, and one `POST /api/massdata/import` of a JSON export document creating
and updating elements of both types. A profile function on every thread (`sys.setprofile`,
`threading.setprofile`) notes the module of each Python function entered while a traced request runs;
the count is of distinct `blockrepo` modules. Compare code versions by running it with different
`PYTHONPATH`s. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
import warnings
from types import FrameType
from typing import Any

import orjson
from harness import cheap_settings, scratch_database
from massdata_scale import ATTRIBUTES, END, TARGET_TYPE, TYPE

import blockrepo
from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"


class ModuleTrace:
    """The blockrepo modules whose functions run while `recording` is set, on any thread."""

    def __init__(self) -> None:
        self.recording = False
        self.modules: set[str] = set()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.recording and event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("blockrepo"):
                self.modules.add(name)

    def traced(self, call: Any) -> set[str]:
        self.modules = set()
        self.recording = True
        try:
            call()
        finally:
            self.recording = False
        return self.modules


def check(response: Any, status: int) -> Any:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
        )
    return response.json() if response.content else None


def import_document(round_number: int, systems: list[dict[str, Any]]) -> bytes:
    """An export document: two new components, two new systems listing them, and the stored `systems`
    renamed (updates matched by name need the old name: they change a value instead)."""
    components = [{"id": 100 + n, "name": f"Component {round_number}-{n}"} for n in range(2)]
    new_systems = [
        {
            "id": 200 + n,
            "name": f"System {round_number}-{n}",
            "Owner": [f"Team {n}"],
            END: [c["name"] for c in components],
        }
        for n in range(2)
    ]
    updated = [
        {"id": 300 + n, "name": s["name"][0], "Owner": [f"Team r{round_number}"]}
        for n, s in enumerate(systems)
    ]
    document = {
        "format": "blockrepo-export",
        "elements": {TARGET_TYPE: components, TYPE: [*new_systems, *updated]},
    }
    return orjson.dumps(document)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", action="store_true", help="print the counts only")
    arguments = parser.parse_args()
    print(f"blockrepo from {blockrepo.__file__}", file=sys.stderr)
    trace = ModuleTrace()
    results: dict[str, set[str]] = {}
    with scratch_database(None, "trace_modules") as url:
        settings = cheap_settings(url, PASSWORD)
        initialize_repository(settings)
        app = create_app(settings)
        sys.setprofile(trace)
        threading.setprofile(trace)
        try:
            with TestClient(app) as client:
                client.auth = ("system", PASSWORD)
                for attribute in ATTRIBUTES:
                    check(
                        client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]}),
                        201,
                    )
                components = [
                    check(client.post(f"/api/element/{TARGET_TYPE}", json={"name": [f"Component {n}"]}), 201)
                    for n in range(3)
                ]
                systems = [
                    check(
                        client.post(
                            f"/api/element/{TYPE}",
                            json={"name": [f"System {n}"], END: [{"id": components[0]["id"][0]}]},
                        ),
                        201,
                    )
                    for n in range(2)
                ]
                for round_number, system in enumerate(systems):
                    body = {
                        "Owner": [f"Team {round_number}"],
                        END: [{"id": components[round_number + 1]["id"][0]}],
                    }

                    def put(system: dict[str, Any] = system, body: dict[str, Any] = body) -> None:
                        check(client.put(f"/api/element/{TYPE}/{system['id'][0]}", json=body), 200)

                    if round_number == 0:
                        put()
                    else:
                        results["PUT /api/element/{type}/{id}"] = trace.traced(put)
                for round_number in range(2):
                    document = import_document(round_number, systems)

                    def load(document: bytes = document) -> None:
                        headers = {"Content-Type": "application/json"}
                        check(client.post("/api/massdata/import", content=document, headers=headers), 200)

                    if round_number == 0:
                        load()
                    else:
                        results["POST /api/massdata/import (JSON)"] = trace.traced(load)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    for request, modules in results.items():
        print(f"{request}: {len(modules)} blockrepo modules")
        if not arguments.counts:
            for module in sorted(modules):
                print(f"    {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
