"""Planning scenarios (issue 25): reads, writes, the diff and the merge inside a scenario, each beside main's
own figure in the same run.

    python bench/scenarios.py                           # 10,000 and 100,000 elements, SQLite
    python bench/scenarios.py --sizes 10000             # a quicker run
    python bench/scenarios.py --database postgresql://postgres@127.0.0.1:5432/postgres
    python bench/scenarios.py --sizes 10000 --profile merge     # a py-spy profile of the merge (or diff, …)

In-process (the ASGI app through Starlette's TestClient, as `bulk_cpu.py`). For each size, that many
`InformationSystem`s with a number attribute `Costs` are written in bulk (10,000 a request); then three
scenarios are made from main as it is (the base), and main changes on: 1,000 elements get a new `Costs`
in bulk updates (some of them are elements the scenarios change, in another field: they merge without
conflict). The scenarios get 100, 1,000 and 10,000 changed elements (a new `description` each): the 100
through `PATCH /api/element/…?scenario=` one by one (timed, alternating with the same PATCH in main), the
larger ones as the change rows those PATCHes record, inserted directly (the scenario's write path is
what the 100 measure). Measured, each the median of several calls:

- GET of an element by id in the 1,000-change scenario (one it changed, one it did not) and in main,
  alternating; list pages of 100 (`GET /api/massdata/…?scenario=`, by id, and by name descending with a
  filter and the count) in the same scenario and in main.
- `GET /api/scenarios/{key}/diff` (first page of 100 with the summary), against main and against the base.
- `POST /api/scenarios/{key}/merge` of the 10,000-change scenario, with `dryRun` and for real (once).
- A bulk update of 5,000 descriptions (`POST /api/massdata/…?scenario=`) in a new scenario, taking turns
  with the same bulk update in main; the rate in elements a second.

Prints a table; asserts nothing. With `--profile`, py-spy samples the named step at the largest size and
the functions with the largest share of the busy samples are printed (`pip install py-spy`; it needs
ptrace rights over this process).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from harness import cheap_settings, scratch_database
from sqlalchemy import insert, select

import blockrepo
from blockrepo import interpreter
from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository
from blockrepo.elements.models import Element
from blockrepo.scenarios.models import Scenario, ScenarioChange

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"
TYPE = "InformationSystem"
BATCH = 10_000
MAIN_CHANGES = 1_000
CHANGES = (100, 1_000, 10_000)
READS = 200
DIFF_READS = 5
LIST_READS = 40
BULK_ELEMENTS = 5_000
BULK_WRITES = 3
HEADERS = {"Content-Type": "application/json"}
PROFILE_STEPS = ("read", "write", "diff", "merge", "bulk")
IDLE = ("acquire", "wait (threading", "select (selectors", "_worker (concurrent", "run_forever")


def check(response: Any, status: int = 200) -> Any:
    if response.status_code != status:
        request = response.request
        raise RuntimeError(
            f"{request.method} {request.url} answered {response.status_code}: {response.text[:1000]}"
        )
    return response.json() if response.content else None


def load(client: TestClient, elements: int) -> list[int]:
    ids: list[int] = []
    for first in range(0, elements, BATCH):
        batch = [
            {"name": [f"System {n:07d}"], "Costs": [n]} for n in range(first, min(elements, first + BATCH))
        ]
        body = orjson.dumps({"elements": batch})
        result = check(client.post(f"/api/massdata/{TYPE}", content=body, headers=HEADERS))
        if result["created"] != len(batch):
            raise RuntimeError(f"the bulk write created {result['created']} elements, not {len(batch)}")
        ids += [item["id"] for item in result["results"]]
    return ids


def change_main(client: TestClient, ids: list[int]) -> None:
    """A new `Costs` for each of `ids` in main, in bulk updates of 1,000."""
    for first in range(0, len(ids), 1_000):
        batch = [{"id": [i], "Costs": [i + 0.5]} for i in ids[first : first + 1_000]]
        body = orjson.dumps({"elements": batch})
        check(client.post(f"/api/massdata/{TYPE}", content=body, headers=HEADERS))


def insert_changes(app: Any, key: str, ids: list[int]) -> None:
    """The change rows a PATCH of `description` in scenario `key` records, for each of `ids` (their names
    are those `load` gave them; none has a description at the base)."""
    engine = app.state.services.engine
    with engine.begin() as connection:
        scenario_id, base = connection.execute(
            select(Scenario.id, Scenario.base_revision).where(Scenario.key == key)
        ).one()
        names = dict(connection.execute(select(Element.id, Element.name).where(Element.id.in_(ids))).all())
        created = dt.datetime.now(dt.UTC)
        rows = [
            {
                "scenario_id": scenario_id,
                "element_id": i,
                "type_name": TYPE,
                "element_name": names[i],
                "operation": "updated",
                "changes": [{"property": "description", "old": [], "new": [f"planned {i}"]}],
                "main_revision": base,
                "created_at": created,
                "user_login": "system",
                "request_id": secrets.token_hex(16),
            }
            for i in ids
        ]
        for first in range(0, len(rows), 5_000):
            connection.execute(insert(ScenarioChange), rows[first : first + 5_000])


def median_ms(call: Callable[[], object], repeat: int) -> float:
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def alternating(calls: dict[str, Callable[[int], object]], repeat: int) -> dict[str, float]:
    """Median milliseconds of each call, the calls taking turns (call(n) for n in 0..repeat-1)."""
    samples: dict[str, list[float]] = {label: [] for label in calls}
    for call in calls.values():
        call(-1)  # warm-up
    for n in range(repeat):
        for label, call in calls.items():
            started = time.perf_counter()
            call(n)
            samples[label].append((time.perf_counter() - started) * 1000)
    return {label: statistics.median(values) for label, values in samples.items()}


@contextmanager
def profiled(enabled: bool, label: str) -> Iterator[None]:
    """While enabled, py-spy samples this process (every thread: the app runs in TestClient's threads, out
    of cProfile's sight); then the functions with the largest share of the samples are printed."""
    if not enabled:
        yield
        return
    output = Path(tempfile.mkdtemp(prefix="scenario-profile-")) / "stacks.txt"
    beside = Path(sys.executable).parent / "py-spy"
    command = [
        str(beside) if beside.exists() else "py-spy",
        "record",
        "--pid",
        str(os.getpid()),
        "--rate",
        "250",
        "--format",
        "raw",
    ]
    spy = subprocess.Popen([*command, "--output", str(output)], stdout=subprocess.DEVNULL)
    time.sleep(1.5)  # attached
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        print_profile(output, label)
        output.unlink()
        output.parent.rmdir()


def print_profile(stacks: Path, label: str, top: int = 40) -> None:
    """Inclusive share of the samples of blockrepo's functions and own share of any function, from py-spy's
    collapsed stacks; samples outside blockrepo (the client, the event loop) and idle ones are left out."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    ours: set[str] = set()
    total = 0
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        raw = stack.split(";")
        if not raw or any(idle in raw[-1] for idle in IDLE) or not any("(blockrepo/" in f for f in raw):
            continue
        frames = [f.replace("(blockrepo/", "(") for f in raw]
        ours.update(short for short, f in zip(frames, raw, strict=True) if "(blockrepo/" in f)
        samples = int(count)
        total += samples
        for frame in set(frames):
            inclusive[frame] += samples
        own[frames[-1]] += samples
    print(f"\n--- py-spy: {label}, {total} busy samples ---", file=sys.stderr)
    print("inclusive  own  function", file=sys.stderr)
    listed = [(frame, samples) for frame, samples in inclusive.most_common() if frame in ours]
    for frame, samples in listed[:top]:
        print(f"{samples / total:8.1%} {own[frame] / total:5.1%}  {frame}", file=sys.stderr)
    print("most own time:", file=sys.stderr)
    for frame, samples in own.most_common(15):
        print(f"{samples / total:8.1%}  {frame}", file=sys.stderr)


def run_size(size: int, database: str | None, profile: str | None) -> list[tuple[str, str, str]]:
    """(measure, scenario figure, main figure) rows for a repository of `size` elements."""
    rows: list[tuple[str, str, str]] = []
    label = f"{size // 1000}k"
    with scratch_database(database, f"scen{size}") as url:
        settings = cheap_settings(url, PASSWORD)
        initialize_repository(settings)
        app = create_app(settings)
        # As a served worker has it: the collector's thresholds change what large reads cost.
        interpreter.settle_after_startup()
        with TestClient(app) as client:
            client.auth = ("system", PASSWORD)
            attribute = {"name": "Costs", "valueType": "number", "types": [TYPE]}
            check(client.post("/api/administration/attributes", json=attribute), 201)
            started = time.perf_counter()
            ids = load(client, size)
            print(
                f"{label}: loaded {size:,} elements in {time.perf_counter() - started:.1f} s", file=sys.stderr
            )
            counts = [c for c in CHANGES if c <= size]
            keys = {
                c: check(client.post("/api/scenarios", json={"name": f"bench {c}"}), 201)["key"]
                for c in counts
            }
            # Main moves on after the base: elements the scenarios change (another field) and others.
            change_main(client, ids[: MAIN_CHANGES // 2] + ids[-MAIN_CHANGES // 2 :])
            # Scenario writes (100 PATCHes) against the same PATCH in main, taking turns.
            small = keys[100]
            main_targets = ids[size // 2 : size // 2 + 101]
            scenario_targets = ids[:101]

            def patch_main(n: int) -> None:
                element = main_targets[n + 1]
                check(client.patch(f"/api/element/{TYPE}/{element}", json={"Costs": [n + 0.25]}))

            def patch_scenario(n: int) -> None:
                element = scenario_targets[n + 1]
                body = {"description": [f"planned {element}"]}
                check(client.patch(f"/api/element/{TYPE}/{element}", json=body, params={"scenario": small}))

            writes = alternating({"scenario": patch_scenario, "main": patch_main}, 100)
            with profiled(profile == "write", f"300 scenario PATCHes, {label}"):
                for n in range(300):
                    again = {"description": [f"planned {n % 2}"]}
                    path = f"/api/element/{TYPE}/{scenario_targets[0]}"
                    check(client.patch(path, json=again, params={"scenario": small}))
            expected = {count: count for count in counts} | {100: len(scenario_targets)}
            rows.append(
                (f"{label}: PATCH one element (ms)", f"{writes['scenario']:.2f}", f"{writes['main']:.2f}")
            )
            for count in counts[1:]:
                insert_changes(app, keys[count], ids[:count])
            # Reads in the 1,000-change scenario (or the largest there is).
            reading = keys.get(1_000, small)
            changed, untouched = ids[5], ids[size // 2 + 500]
            for what, element in (("changed", changed), ("unchanged", untouched)):
                path = f"/api/element/{TYPE}/{element}"

                def get_scenario(_n: int, p: str = path) -> None:
                    check(client.get(p, params={"scenario": reading}))

                def get_main(_n: int, p: str = path) -> None:
                    check(client.get(p))

                reads = alternating({"scenario": get_scenario, "main": get_main}, READS)
                with profiled(profile == "read" and what == "changed", f"500 scenario GETs, {label}"):
                    for n in range(500):
                        get_scenario(n)
                rows.append(
                    (
                        f"{label}: GET by id, element {what} in the scenario (ms)",
                        f"{reads['scenario']:.2f}",
                        f"{reads['main']:.2f}",
                    )
                )

            # List pages of 100 in the same scenario: main's stored elements for those that do not
            # diverge, the scenario's fold (kept between reads) for those that do, merged in order. By id
            # (the first page is all elements the scenario changed), and by name from the end with a
            # filter and the count (elements main changed after the base among stored ones).
            for what, listing in (
                ("list page of 100", {"limit": 100}),
                (
                    "list page of 100 by -name, filtered, counted",
                    {"limit": 100, "sort": "-name", "filter": '!@name.startsWith("x")', "count": True},
                ),
            ):

                def list_scenario(_n: int, p: dict[str, Any] = listing) -> None:
                    check(client.get(f"/api/massdata/{TYPE}", params={**p, "scenario": reading}))

                def list_main(_n: int, p: dict[str, Any] = listing) -> None:
                    check(client.get(f"/api/massdata/{TYPE}", params=p))

                lists = alternating({"scenario": list_scenario, "main": list_main}, LIST_READS)
                rows.append((f"{label}: {what} (ms)", f"{lists['scenario']:.1f}", f"{lists['main']:.1f}"))
            # The diff's first page (100 elements, and the summary that folds the whole scenario).
            for count, key in keys.items():
                for against in ("main", "base"):
                    params = {"against": against, "limit": 100}

                    def read_diff(k: str = key, p: dict[str, Any] = params, c: int = expected[count]) -> None:
                        page = check(client.get(f"/api/scenarios/{k}/diff", params=p))
                        total = sum(sum(v.values()) for v in page["summary"].values())
                        if total != c:
                            raise RuntimeError(f"the diff of {c} changes counted {page['summary']}")

                    with profiled(
                        profile == "diff" and against == "main" and count == max(counts),
                        f"diff of {count} changes against main, {label}",
                    ):
                        ms = median_ms(read_diff, DIFF_READS)
                    rows.append(
                        (f"{label}: diff of {count:,} changes against {against} (ms)", f"{ms:.1f}", "")
                    )
            # The merge of the largest scenario: a dry run, then for real (once).
            big = keys[max(counts)]
            dry = median_ms(
                lambda: check(client.post(f"/api/scenarios/{big}/merge", json={"dryRun": True})), 3
            )
            rows.append((f"{label}: merge dryRun of {max(counts):,} changes (ms)", f"{dry:.0f}", ""))
            with profiled(profile == "merge", f"merge of {max(counts)} changes, {label}"):
                started = time.perf_counter()
                merged = check(client.post(f"/api/scenarios/{big}/merge", json={}))
                seconds = time.perf_counter() - started
            if merged["counts"]["update"] != max(counts):
                raise RuntimeError(f"the merge counted {merged['counts']}")
            # Main's own equivalent: the same 10,000 descriptions as one bulk update (10,000 a request).
            batch = [{"id": [i], "description": [f"again {i}"]} for i in ids[: max(counts)]]
            body = orjson.dumps({"elements": batch})
            started = time.perf_counter()
            check(client.post(f"/api/massdata/{TYPE}", content=body, headers=HEADERS))
            bulk = time.perf_counter() - started
            rows.append(
                (f"{label}: merge of {max(counts):,} changed elements (s)", f"{seconds:.2f}", f"{bulk:.2f}")
            )
            # Bulk writes of the same kind in a new scenario and in main, taking turns: a new description
            # on each of `BULK_ELEMENTS` elements, one request (elements/s).
            fresh = check(client.post("/api/scenarios", json={"name": "bulk"}), 201)["key"]
            targets = ids[: min(BULK_ELEMENTS, size)]

            def bulk_body(n: int) -> bytes:
                return orjson.dumps(
                    {"elements": [{"id": [i], "description": [f"bulk {n} {i}"]} for i in targets]}
                )

            def bulk_scenario(n: int) -> None:
                response = client.post(
                    f"/api/massdata/{TYPE}", content=bulk_body(n), headers=HEADERS, params={"scenario": fresh}
                )
                if check(response)["updated"] != len(targets):
                    raise RuntimeError(f"the scenario's bulk write answered {response.text[:300]}")

            def bulk_main(n: int) -> None:
                check(client.post(f"/api/massdata/{TYPE}", content=bulk_body(n), headers=HEADERS))

            with profiled(profile == "bulk", f"bulk writes of {len(targets)} in a scenario, {label}"):
                bulks = alternating({"scenario": bulk_scenario, "main": bulk_main}, BULK_WRITES)
            rates = {side: len(targets) / (ms / 1000) for side, ms in bulks.items()}
            rows.append(
                (
                    f"{label}: bulk update of {len(targets):,} elements (elements/s)",
                    f"{rates['scenario']:,.0f}",
                    f"{rates['main']:,.0f}",
                )
            )
        app.state.services.dispose()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a fresh SQLite file)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--profile", choices=PROFILE_STEPS, help="profile one step at the largest size (py-spy)"
    )
    args = parser.parse_args()
    print(f"blockrepo from {blockrepo.__file__}", file=sys.stderr)
    rows: list[tuple[str, str, str]] = []
    for size in args.sizes:
        profile = args.profile if size == max(args.sizes) else None
        rows += run_size(size, args.database, profile)
    kind = "PostgreSQL" if args.database else "SQLite"
    print(
        f"\nPlanning scenarios on {kind}, in-process; medians (GET {READS}, PATCH 100, diff {DIFF_READS})\n"
    )
    width = max(len(r[0]) for r in rows)
    header = f"{'measure':<{width}} {'scenario':>10} {'main':>10}"
    print(header)
    print("-" * len(header))
    for measure, scenario, main_figure in rows:
        print(f"{measure:<{width}} {scenario:>10} {main_figure:>10}")
    print(
        "\nmain's column: the same GET or PATCH in main; for the merge, the same 10,000 descriptions as one "
        "bulk update (POST /api/massdata)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
