"""The floor of the bulk import on SQLite: bare sqlite3 writing exactly the rows that a bulk import writes.

    python bench/bulk_floor.py                       # 100,000 elements in batches of 10,000
    python bench/bulk_floor.py --elements 20000      # a quicker run

What `POST /api/massdata/InformationSystem` makes the server write for the load of
bench/massdata_scale.py (the same elements: five attribute values each, a number, an enum, a date, a text
and a boolean, and two `technicalComponents` among `--elements / 50` technical components), written with
nothing around it: the stdlib sqlite3 driver, one executemany per table, no validation, no HTTP, no
SQLAlchemy. The repository is created by the project's own initialisation (migrations and seed, so the
schema, indexes and foreign keys are production's), the attributes and the technical components through
the API in-process; the file is then opened with the server's PRAGMAs (WAL, foreign_keys=ON,
synchronous=NORMAL, cache_size=-65536). Each batch of `--batch` elements is one `BEGIN IMMEDIATE …
COMMIT` holding what one request writes: the element rows with the ids the transaction hands out (the
next id read first, as the server does on SQLite), the value rows (typed columns as SQLAlchemy's bind
processors fill them), the relation rows, the revision (`repository_state` bumped, one `revision` row),
one change row per element with its JSON changes, one mirrored change row per technical component the
batch touched and its revision bump.
Every parameter tuple and every JSON text is made before the clock starts, so the time is SQLite and the
driver's binding only. The rows are bound as the best bare program would bind them: elements as
multi-row INSERTs with their ids, every row without the columns it leaves NULL; the old floor (full rows,
ids read back by name) runs beside it for history. The same load runs again on a copy
of the repository with foreign_keys=OFF, to show what the foreign-key checks cost, and once more with
the value, relation and change rows as multi-row VALUES (as many rows as 30,000 parameters hold) instead
of executemany (as the server writes them, and so the floor massdata_scale.py's share is taken against);
the variants run `--repeat` times in turn, on fresh copies, and the fastest run of each is shown. The table
gives the microseconds per element of each part and the elements per second in all, against the issue's target
(≥ 20,000 elements/s, 50 µs an element): what is left of those 50 µs is all that parsing, validation
and recording in Python may take.
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import itertools
import os
import shutil
import sqlite3
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
from harness import cheap_settings, scratch_database
from massdata_scale import ATTRIBUTES, BATCH, END, TARGET_TYPE, TYPE, element_bodies
from rich.console import Console
from rich.table import Table
from sqlalchemy import Table as SqlTable
from sqlalchemy.dialects import sqlite as sqlite_dialect

from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository
from blockrepo.elements.models import Element, ElementValue
from blockrepo.elements.repository import CHUNK_SIZE
from blockrepo.elements.values import encode_number
from blockrepo.revisions.models import Revision

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"
USER = "system"
TARGET_PER_SECOND = 20_000
PRAGMAS = (  # storage.engine._configure_sqlite, foreign_keys aside
    "PRAGMA journal_mode=WAL",
    "PRAGMA busy_timeout=30000",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA cache_size=-65536",
)
# The statements the server runs (SQLAlchemy's rendering, parameters as qmarks).
INSERT_ELEMENT = (
    "INSERT INTO element (type_id, name, description, parent_id, position, revision, created_at, "
    "last_modified_at, last_modified_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_VALUE = (
    "INSERT INTO element_value (element_id, attribute_id, position, text_value, number_value, date_value, "
    "date_end, bool_value, literal_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_RELATION = (
    "INSERT INTO relation (relation_type_id, source_id, target_id, position) VALUES (?, ?, ?, ?)"
)
INSERT_CHANGE = (
    "INSERT INTO change (revision, entity, operation, type_name, element_id, element_name, subject, "
    "changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
NEXT_REVISION = (
    "UPDATE repository_state SET revision=(repository_state.revision + ?) WHERE repository_state.id = ? "
    "RETURNING repository_state.revision"
)
INSERT_REVISION = "INSERT INTO revision (id, created_at, user_login, request_id) VALUES (?, ?, ?, ?)"
NEXT_ELEMENT_ID = (  # elements.repository._NEXT_ELEMENT_ID
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'element'), 0), "
    "coalesce((SELECT max(id) FROM element), 0)) + 1"
)
# The floor writes what the server writes the way the best bare-sqlite3 program would: element rows as
# multi-row INSERTs with the ids the transaction hands out (as the server does on SQLite: no lookup by
# name, no RETURNING), and
# every row without the columns it leaves NULL (Python 3.11's sqlite3 sends each None through its adapter
# lookup: a value row of 9 columns with 5 NULLs binds about three times slower than its 4 filled ones).
# The old floor (executemany of full rows, ids looked up by name) is kept beside it for history.
ELEMENT_COLUMNS = (
    "type_id, name, description, position, revision, created_at, last_modified_at, last_modified_by"
)
ROWS_PER_VALUES = 7500  # storage.bulk_insert.ROWS_PER_VALUES (here too, to run against older code)
PARAMETERS_PER_STATEMENT = 30_000  # storage.bulk_insert.SQLITE_PARAMETERS_PER_STATEMENT
ELEMENTS_PER_STATEMENT = 30_000 // 9  # storage.bulk_insert.SQLITE_PARAMETERS_PER_STATEMENT
CHANGE_WITHOUT_SUBJECT = (
    "INSERT INTO change (revision, entity, operation, type_name, element_id, element_name, changes) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
VALUE_COLUMNS = ("text_value", "number_value", "date_value", "date_end", "bool_value", "literal_id")
PARTS = (
    ("elements", "BEGIN IMMEDIATE, element rows (floor: the next id read, rows with their ids)"),
    ("ids", f"old floor: their ids read back by name ({CHUNK_SIZE} a query)"),
    ("values", f"value rows ({len(ATTRIBUTES)} an element)"),
    ("relations", "relation rows (2 an element)"),
    ("bumps", f"revision bumps of the touched targets ({CHUNK_SIZE} a statement)"),
    ("revision", "repository_state bumped, revision row"),
    ("changes", "change rows (one an element, one a touched target)"),
    ("commit", "COMMIT (WAL, synchronous=NORMAL)"),
)

_DIALECT = sqlite_dialect.dialect()


def bind(table: Any, column: str) -> Callable[[Any], Any]:
    """How the server stores a value of the column on SQLite: the dialect's bind processor of its type,
    as storage.bulk_insert applies it (dates and time stamps as text, booleans as 0/1)."""
    process = cast(SqlTable, table).c[column].type.dialect_impl(_DIALECT).bind_processor(_DIALECT)
    return process if process is not None else (lambda value: value)


STAMP = bind(Element.__table__, "created_at")
REVISION_STAMP = bind(Revision.__table__, "created_at")
DATE = bind(ElementValue.__table__, "date_value")
BOOLEAN = bind(ElementValue.__table__, "bool_value")
NUMBER = bind(ElementValue.__table__, "number_value")


@dataclass(frozen=True)
class Repository:
    """The ids the load refers to, read from the prepared repository."""

    type_id: int
    relation_type_id: int
    opposite_end: str  # the end on the technical components, named in their mirrored changes
    attribute_ids: dict[str, int]
    literal_ids: dict[str, int]  # Criticality's literals
    targets: dict[int, str]  # technical component id -> name


def prepare(url: str, path: Path, elements: int) -> Repository:
    """Initialise the repository, define the attributes and write the technical components, all through
    the project's own code; return the ids the load needs."""
    settings = cheap_settings(url, PASSWORD)
    initialize_repository(settings)
    target_count = max(10, elements // 50)
    with TestClient(create_app(settings)) as client:
        client.auth = (USER, PASSWORD)
        for attribute in ATTRIBUTES:
            response = client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]})
            if response.status_code != 201:
                raise RuntimeError(f"creating attribute {attribute['name']}: {response.text[:500]}")
        for first in range(0, target_count, BATCH):
            names = [{"name": [f"Component {n:06d}"]} for n in range(first, min(target_count, first + BATCH))]
            response = client.post(f"/api/massdata/{TARGET_TYPE}", json={"elements": names})
            if response.status_code != 200:
                raise RuntimeError(f"writing technical components: {response.text[:500]}")
    connection = sqlite3.connect(path)
    try:
        types = dict(connection.execute("SELECT name, id FROM block_type"))
        relation_type_id, opposite_end = connection.execute(
            "SELECT id, target_end FROM relation_type WHERE source_type_id = ? AND source_end = ? "
            "AND target_type_id = ?",
            (types[TYPE], END, types[TARGET_TYPE]),
        ).fetchone()
        attribute_ids = dict(
            connection.execute("SELECT name, id FROM attribute WHERE builtin_type_id IS NULL")
        )
        literal_ids = dict(
            connection.execute(
                "SELECT name, id FROM attribute_literal WHERE attribute_id = ?",
                (attribute_ids["Criticality"],),
            )
        )
        targets = dict(
            connection.execute(
                "SELECT id, name FROM element WHERE type_id = ? ORDER BY id", (types[TARGET_TYPE],)
            )
        )
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    if len(targets) != target_count:
        raise RuntimeError(f"{len(targets):,} technical components were written, not {target_count:,}")
    return Repository(types[TYPE], relation_type_id, opposite_end, attribute_ids, literal_ids, targets)


def items(elements: int, targets: Sequence[int]) -> Iterator[dict[str, Any]]:
    """The element objects of massdata_scale's bulk requests, in order (one decoded request at a time)."""
    for body in element_bodies(elements, list(targets)):
        yield from orjson.loads(body)["elements"]


@dataclass
class Batch:
    """Every parameter of one request's statements, made before the clock starts."""

    elements: list[tuple[Any, ...]]
    lookups: list[tuple[Any, ...]]  # (type id, 500 names) per query
    values: list[tuple[Any, ...]]
    relations: list[tuple[Any, ...]]
    changes: list[tuple[Any, ...]]
    revision: tuple[Any, ...]
    bumps: list[tuple[Any, ...]]  # (1, stamp, user, 500 ids) per UPDATE
    expected_ids: dict[str, int]
    # The same rows as the best bare program binds them (see ELEMENT_COLUMNS): statement, parameters.
    element_statements: list[tuple[str, tuple[Any, ...]]]
    first_id: int  # the id the server's transaction hands the batch's first element
    value_groups: list[tuple[str, list[tuple[Any, ...]]]]
    changes_without_subject: list[tuple[Any, ...]]


def element_statements(rows: Sequence[tuple[Any, ...]], first_id: int) -> list[tuple[str, tuple[Any, ...]]]:
    """Multi-row INSERTs of the element rows with the ids the transaction hands out (from `first_id`, as
    the server does on SQLite), without parent_id (NULL at the top)."""
    group = "(" + ", ".join("?" * 9) + ")"
    statements = []
    for start in range(0, len(rows), ELEMENTS_PER_STATEMENT):
        chunk = rows[start : start + ELEMENTS_PER_STATEMENT]
        sql = f"INSERT INTO element (id, {ELEMENT_COLUMNS}) VALUES {', '.join([group] * len(chunk))}"
        parameters = tuple(
            value
            for offset, row in enumerate(chunk, first_id + start)
            for value in (offset, *row[:3], *row[4:])
        )
        statements.append((sql, parameters))
    return statements


def value_groups(rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The value rows grouped by the typed columns they fill, each group's INSERT naming only those."""
    groups: dict[tuple[int, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        filled = tuple(index for index in range(3, 9) if row[index] is not None)
        groups.setdefault(filled, []).append((*row[:3], *(row[index] for index in filled)))
    statements = []
    for filled, group in groups.items():
        columns = ["element_id", "attribute_id", "position", *(VALUE_COLUMNS[index - 3] for index in filled)]
        sql = f"INSERT INTO element_value ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        statements.append((sql, group))
    return statements


def lookup_sql(count: int) -> str:
    return (
        f"SELECT element.name, element.id FROM element WHERE element.type_id = ? "
        f"AND element.name IN ({', '.join('?' * count)})"
    )


def bump_sql(count: int) -> str:
    return (
        "UPDATE element SET revision=(element.revision + ?), last_modified_at=?, last_modified_by=? "
        f"WHERE element.id IN ({', '.join('?' * count)})"
    )


def build_batch(
    repository: Repository, chunk: list[dict[str, Any]], first_id: int, first_position: int, revision: int
) -> Batch:
    """The rows of one request: ids, positions and the revision are the ones SQLite will hand out (checked
    after the batch), so that the change texts can be made before the clock starts."""
    now = dt.datetime.now(dt.UTC)  # one time stamp a request, as ChangeLog.now
    stamp = STAMP(now)
    attribute = repository.attribute_ids
    element_rows: list[tuple[Any, ...]] = []
    value_rows: list[tuple[Any, ...]] = []
    relation_rows: list[tuple[Any, ...]] = []
    created: list[tuple[Any, ...]] = []
    mirrored: dict[int, list[dict[str, Any]]] = {}  # target id -> the elements now pointing at it
    expected: dict[str, int] = {}
    for offset, item in enumerate(chunk):
        element_id = first_id + offset
        name = item["name"][0]
        expected[name] = element_id
        element_rows.append(
            (repository.type_id, name, "", None, first_position + offset, 1, stamp, stamp, USER)
        )
        costs, criticality = item["Costs"][0], item["Criticality"][0]
        golive, owner, cloud = item["Go-live"][0], item["Owner"][0], item["Cloud"][0]
        literal, golive_date = repository.literal_ids[criticality], dt.date.fromisoformat(golive)
        value_rows += [
            (element_id, attribute["Costs"], 0, None, NUMBER(float(costs)), None, None, None, None),
            (element_id, attribute["Criticality"], 0, None, None, None, None, None, literal),
            (element_id, attribute["Go-live"], 0, None, None, DATE(golive_date), None, None, None),
            (element_id, attribute["Owner"], 0, owner, None, None, None, None, None),
            (element_id, attribute["Cloud"], 0, None, None, None, None, BOOLEAN(cloud), None),
        ]
        ends = []
        for position, reference in enumerate(item[END]):
            target = reference["id"]
            relation_rows.append((repository.relation_type_id, element_id, target, position))
            ends.append({"id": target, "name": repository.targets[target]})
            mirrored.setdefault(target, []).append({"id": element_id, "name": name})
        changes = [
            {"property": "name", "old": [], "new": [name]},
            {"property": "Costs", "old": [], "new": [encode_number(float(costs))]},
            {"property": "Criticality", "old": [], "new": [criticality]},
            {"property": "Go-live", "old": [], "new": [golive]},
            {"property": "Owner", "old": [], "new": [owner]},
            {"property": "Cloud", "old": [], "new": [cloud]},
            {"property": END, "old": [], "new": ends},
        ]
        created.append(
            (revision, "element", "created", TYPE, element_id, name, None, orjson.dumps(changes).decode())
        )
    for target, added in mirrored.items():
        changes = [{"property": repository.opposite_end, "added": added, "removed": []}]
        created.append(
            (
                revision, "element", "updated", TARGET_TYPE, target, repository.targets[target], None,
                orjson.dumps(changes).decode(),
            )
        )  # fmt: skip
    names = [row[1] for row in element_rows]
    touched = sorted(mirrored)
    return Batch(
        elements=element_rows,
        lookups=[(repository.type_id, *names[i : i + CHUNK_SIZE]) for i in range(0, len(names), CHUNK_SIZE)],
        values=value_rows,
        relations=relation_rows,
        changes=created,
        revision=(revision, REVISION_STAMP(now), USER, uuid.uuid4().hex),
        bumps=[(1, stamp, USER, *touched[i : i + CHUNK_SIZE]) for i in range(0, len(touched), CHUNK_SIZE)],
        expected_ids=expected,
        element_statements=element_statements(element_rows, first_id),
        first_id=first_id,
        value_groups=value_groups(value_rows),
        changes_without_subject=[(*row[:6], row[7]) for row in created],
    )


@dataclass
class Result:
    seconds: dict[str, float] = field(default_factory=lambda: {key: 0.0 for key, _ in PARTS})
    rows: dict[str, int] = field(default_factory=lambda: {key: 0 for key, _ in PARTS})
    cpu_seconds: float = 0.0  # the process's CPU time in the transactions (less moved by a busy machine)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def many_rows(connection: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """The rows of an `INSERT … VALUES (?, …)` as multi-row VALUES statements of as many rows as 30,000
    parameters hold, at most ROWS_PER_VALUES (as storage.bulk_insert writes them): Python 3.11's sqlite3
    steps and resets a statement once per row of an executemany."""
    head, _, group = sql.partition(" VALUES ")
    per_statement = min(ROWS_PER_VALUES, PARAMETERS_PER_STATEMENT // group.count("?"))
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        values = ", ".join([group] * len(chunk))
        connection.execute(f"{head} VALUES {values}", list(itertools.chain.from_iterable(chunk)))


def write(
    connection: sqlite3.Connection, batch: Batch, old: bool, multirow: bool = False
) -> tuple[dict[str, float], dict[str, int], int]:
    """One request's writes in one transaction, in the server's order (the history is flushed last), as
    the floor binds them or, `old`, as the old floor did; returns the seconds of each part, the ids read
    back and the revision SQLite handed out."""
    clock = time.perf_counter
    seconds: dict[str, float] = {}
    last = clock()

    def lap(part: str) -> None:
        nonlocal last
        now = clock()
        seconds[part], last = now - last, now

    def insert(sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if multirow:
            many_rows(connection, sql, rows)
        else:
            connection.executemany(sql, rows)

    connection.execute("BEGIN IMMEDIATE")
    ids: dict[str, int] = {}
    if old:
        connection.executemany(INSERT_ELEMENT, batch.elements)
        lap("elements")
        for parameters in batch.lookups:
            ids.update(connection.execute(lookup_sql(len(parameters) - 1), parameters).fetchall())
        lap("ids")
        connection.executemany(INSERT_VALUE, batch.values)
    else:
        # The server's way on SQLite: the next id read in the transaction, the rows written with their ids.
        (first_id,) = connection.execute(NEXT_ELEMENT_ID).fetchone()
        for sql, parameters in batch.element_statements:
            connection.execute(sql, parameters)
        ids = batch.expected_ids if first_id == batch.first_id else {}
        lap("elements")
        lap("ids")
        for sql, rows in batch.value_groups:
            insert(sql, rows)
    lap("values")
    insert(INSERT_RELATION, batch.relations)
    lap("relations")
    for parameters in batch.bumps:
        connection.execute(bump_sql(len(parameters) - 3), parameters)
    lap("bumps")
    revision = connection.execute(NEXT_REVISION, (1, 1)).fetchone()[0]
    connection.execute(INSERT_REVISION, batch.revision)
    lap("revision")
    if old:
        connection.executemany(INSERT_CHANGE, batch.changes)
    else:
        insert(CHANGE_WITHOUT_SUBJECT, batch.changes_without_subject)
    lap("changes")
    connection.execute("COMMIT")
    lap("commit")
    return seconds, ids, int(revision)


@dataclass(frozen=True)
class Variant:
    """How a run writes: the floor's way or the old floor's, with foreign-key checks or without."""

    label: str
    foreign_keys: bool
    old: bool
    multirow: bool = False  # multi-row VALUES instead of executemany


FLOOR = Variant("floor (FK on)", foreign_keys=True, old=False)
OLD_FLOOR = Variant("old floor (FK on)", foreign_keys=True, old=True)
FLOOR_WITHOUT_FK = Variant("floor, FK off", foreign_keys=False, old=False)
MULTIROW_FLOOR = Variant("floor, multi-row VALUES (FK on)", foreign_keys=True, old=False, multirow=True)


def load(path: Path, repository: Repository, elements: int, batch_size: int, variant: Variant) -> Result:
    """Write the elements into the repository at `path`, `batch_size` a transaction."""
    connection = sqlite3.connect(path, isolation_level=None)  # transactions as the server runs them
    for pragma in PRAGMAS:
        connection.execute(pragma)
    connection.execute(f"PRAGMA foreign_keys={'ON' if variant.foreign_keys else 'OFF'}")
    result = Result()
    source = items(elements, list(repository.targets))
    try:
        while chunk := list(itertools.islice(source, batch_size)):
            # What SQLite will hand out (the server reads the positions in the transaction; ids and the
            # revision it gets from the writes themselves).
            first_id = connection.execute("SELECT seq FROM sqlite_sequence WHERE name = 'element'").fetchone()
            last_position = connection.execute(
                "SELECT max(position) FROM element WHERE type_id = ? AND parent_id IS NULL",
                (repository.type_id,),
            ).fetchone()[0]
            revision = connection.execute("SELECT revision FROM repository_state WHERE id = 1").fetchone()[0]
            batch = build_batch(
                repository,
                chunk,
                (first_id[0] if first_id else 0) + 1,
                0 if last_position is None else last_position + 1,
                revision + 1,
            )
            gc.collect()
            gc.disable()
            cpu_before = time.process_time()
            try:
                seconds, ids, written_revision = write(connection, batch, variant.old, variant.multirow)
            finally:
                result.cpu_seconds += time.process_time() - cpu_before
                gc.enable()
            if ids != batch.expected_ids or written_revision != batch.revision[0]:
                raise RuntimeError("SQLite handed out other ids or another revision than the rows name")
            for key, value in seconds.items():
                result.seconds[key] += value
            result.rows["elements"] += len(batch.elements)
            result.rows["ids"] += len(ids)
            result.rows["values"] += len(batch.values)
            result.rows["relations"] += len(batch.relations)
            result.rows["bumps"] += sum(len(parameters) - 3 for parameters in batch.bumps)
            result.rows["revision"] += 2
            result.rows["changes"] += len(batch.changes)
            result.rows["commit"] += 1
        problems = connection.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"{len(problems):,} rows break a foreign key, e.g. {problems[:3]}")
    finally:
        connection.close()
    return result


def measure(
    elements: int, batch_size: int, repeat: int, variants: Sequence[Variant]
) -> dict[Variant, list[Result]]:
    """Prepare a repository once and load it `repeat` times with each of `variants`, alternated, each
    time on a fresh copy: variant -> the results of its runs."""
    results: dict[Variant, list[Result]] = {variant: [] for variant in variants}
    with scratch_database(None, "floor_template") as url:
        template = Path(url.removeprefix("sqlite:///"))
        repository = prepare(url, template, elements)
        for _ in range(repeat):
            for variant in variants:  # alternated: a busy spell of the machine hits each
                copy = template.with_name("floor.db")
                shutil.copyfile(template, copy)
                results[variant].append(load(copy, repository, elements, batch_size, variant))
                for path in template.parent.glob("floor.db*"):
                    path.unlink()
    return results


def floors_per_second(
    elements: int, batch_size: int = BATCH, repeat: int = 1
) -> dict[Variant, tuple[float, float]]:
    """Elements per second of the floor with multi-row VALUES (the way the server binds its rows), of the
    floor with executemany and of the old floor (foreign keys on, as the server runs), by the clock and by
    the CPU time it took: the fastest of `repeat` runs each."""
    results = measure(elements, batch_size, repeat, (MULTIROW_FLOOR, FLOOR, OLD_FLOOR))
    return {
        variant: (
            elements / min(result.total for result in runs),
            elements / min(result.cpu_seconds for result in runs),
        )
        for variant, runs in results.items()
    }


def micro(seconds: float, elements: int) -> str:
    return f"{seconds * 1e6 / elements:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=100_000, help="InformationSystem elements to write")
    parser.add_argument("--batch", type=int, default=BATCH, help="elements per transaction (one request)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each variant; the fastest is shown")
    args = parser.parse_args()
    elements, batch_size = args.elements, args.batch
    console = Console(width=140)
    load_before = os.getloadavg()[0]
    variants = (FLOOR, OLD_FLOOR, FLOOR_WITHOUT_FK, MULTIROW_FLOOR)
    results = measure(elements, batch_size, args.repeat, variants)
    # The fastest run of each variant (its parts, so that they add up to its total).
    on, old, off, multi = (min(results[variant], key=lambda result: result.total) for variant in variants)
    budget = 1e6 / TARGET_PER_SECOND
    table = Table(
        title=f"Bulk import floor on SQLite: bare sqlite3, {elements:,} {TYPE} elements, "
        f"{batch_size:,} a transaction; µs an element, fastest of {args.repeat} runs"
    )
    table.add_column("part")
    table.add_column("rows", justify="right")
    table.add_column("floor", justify="right")
    table.add_column("old floor", justify="right")
    table.add_column("floor, FK off", justify="right")
    table.add_column("FK checks", justify="right")
    table.add_column("floor, multi-row VALUES", justify="right")
    for key, label in PARTS:
        table.add_row(
            label,
            f"{on.rows[key]:,}",
            micro(on.seconds[key], elements),
            micro(old.seconds[key], elements),
            micro(off.seconds[key], elements),
            micro(on.seconds[key] - off.seconds[key], elements),
            micro(multi.seconds[key], elements),
        )
    table.add_section()
    table.add_row(
        "total",
        "",
        micro(on.total, elements),
        micro(old.total, elements),
        micro(off.total, elements),
        micro(on.total - off.total, elements),
        micro(multi.total, elements),
    )
    table.add_row(
        "elements/s",
        "",
        *(f"{elements / result.total:,.0f}" for result in (on, old, off)),
        "",
        f"{elements / multi.total:,.0f}",
    )
    table.add_row(
        "CPU µs an element",
        "",
        *(micro(result.cpu_seconds, elements) for result in (on, old, off)),
        "",
        micro(multi.cpu_seconds, elements),
    )
    table.add_row(
        f"left for Python at {TARGET_PER_SECOND:,} elements/s ({budget:.0f} µs an element)",
        "",
        *(f"{budget - result.total * 1e6 / elements:.1f}" for result in (on, old, off)),
        "",
        f"{budget - multi.total * 1e6 / elements:.1f}",
    )
    console.print(
        f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}; {max(10, elements // 50):,} "
        f"{TARGET_TYPE} targets; {os.cpu_count()} CPUs, load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
