"""Streams the whole repository (or some types) as one JSON document, element by element in hierarchy
order, from one consistent snapshot; memory holds one batch of elements and the id order of one type.
What it reads is a `Landscape`: main's tables (`StoredLandscape`), or a planning scenario's state
(`massdata.asof.ScenarioLandscape`)."""

from __future__ import annotations

import io
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from typing import Any, Protocol

import orjson
from sqlalchemy.orm import Session

from blockrepo import API_VERSION
from blockrepo.access import repository as access_repository
from blockrepo.elements import repository
from blockrepo.elements.repository import chunks
from blockrepo.elements.service import ElementReader, ElementView
from blockrepo.history.repository import current_revision
from blockrepo.massdata.listing import begin_snapshot
from blockrepo.massdata.transfer.plan import FORMAT, FORMAT_VERSION, ExportPlan, TypePlan, metamodel_section
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.revisions.repository import revision_mark

EXPORT_BATCH = 1000
Progress = Callable[[str, int], None]  # (type name, records done so far in it)
Placement = tuple[int, int | None, int]  # (element id, parent id, position among its siblings)


class Landscape(Protocol):
    """What an export reads, in the session it streams from: the revision of main it shows, the scenario
    it shows or the projection to a date (None: main itself), where each element of a type sits in the
    hierarchy, and the JSON of batches of ids in the shape `ElementReader` gives."""

    @property
    def revision(self) -> int: ...

    @property
    def scenario(self) -> dict[str, Any] | None: ...

    @property
    def projection(self) -> dict[str, Any] | None: ...

    def placements(self, type_def: BlockTypeDef) -> Iterable[Placement]: ...

    def read_batches(
        self, view: ElementView, batches: Iterable[Sequence[int]]
    ) -> Iterator[list[dict[str, Any]]]: ...


# What an export of a landscape other than today's reads it with, given the session it streams from.
LandscapeSource = Callable[[Session], Landscape]


class StoredLandscape:
    """Main as its tables hold it now: the export's plain (and benchmarked) path."""

    scenario: dict[str, Any] | None = None
    projection: dict[str, Any] | None = None

    def __init__(self, db: Session) -> None:
        self.db = db
        self.revision = current_revision(db)

    def placements(self, type_def: BlockTypeDef) -> Iterable[Placement]:
        return repository.placements(self.db, type_def.id)

    def read_batches(
        self, view: ElementView, batches: Iterable[Sequence[int]]
    ) -> Iterator[list[dict[str, Any]]]:
        return ElementReader(view).read_batches(self.db, batches)


def hierarchy_order(placements: Iterable[Placement]) -> list[int]:
    """The element ids depth-first: each root, then its children by position, recursively. An import in
    this order meets every parent before its children and restores the positions."""
    children: dict[int | None, list[tuple[int, int]]] = {}
    for element_id, parent_id, position in placements:
        children.setdefault(parent_id, []).append((position, element_id))
    order: list[int] = []
    stack = sorted(children.get(None, []), reverse=True)
    while stack:
        _, element_id = stack.pop()
        order.append(element_id)
        stack.extend(sorted(children.get(element_id, []), reverse=True))
    return order


def _record(plan: TypePlan, element: dict[str, Any]) -> dict[str, Any]:
    """An element as an export record: scalars for name, description and parent (by name), non-empty
    attribute lists, and source ends as names (with the non-empty relation attributes, if any)."""
    record: dict[str, Any] = {"id": element["id"][0], "name": element["name"][0]}
    if element.get("description"):
        record["description"] = element["description"][0]
    if element.get("parent"):
        record["parent"] = element["parent"][0]["name"]
    for attribute in plan.attributes:
        values = element[attribute.name]
        if values:
            record[attribute.name] = values
    for end in plan.ends:
        entries = element[end.name]
        if not entries:
            continue
        listed: list[Any] = []
        for entry in entries:
            attributes = {name: values for name, values in entry.get("attributes", {}).items() if values}
            listed.append({"name": entry["name"], "attributes": attributes} if attributes else entry["name"])
        record[end.name] = listed
    for end in plan.mirrors:
        if element[end.name]:
            # By name: the order of a target end follows the other side's ids, which differ between
            # repositories holding the same landscape.
            record[end.name] = sorted(entry["name"] for entry in element[end.name])
    return record


def iterate_records(
    landscape: Landscape, plan: TypePlan, *, batch: int = EXPORT_BATCH
) -> Generator[list[dict[str, Any]], None, None]:
    """The type's export records in hierarchy order, a batch at a time."""
    order = hierarchy_order(landscape.placements(plan.type_def))
    for elements in landscape.read_batches(plan.view, chunks(order, batch)):
        yield [_record(plan, element) for element in elements]


def responsible_logins(plan: TypePlan, records: list[dict[str, Any]]) -> set[str]:
    names = [a.name for a in plan.attributes if a.value_type == "responsibility"]
    return {login for record in records for name in names for login in record.get(name, ())}


def users_section(db: Session, logins: set[str]) -> list[dict[str, str]]:
    """The accounts that responsibility values name (login and names only: no roles, no secrets), so
    that an import into another repository can keep those values."""
    users = [
        {"login": login, "firstName": first, "lastName": last}
        for login, first, last in access_repository.user_names(db, logins)
    ]
    return sorted(users, key=lambda u: u["login"])


def json_chunks(
    db: Session, plan: ExportPlan, progress: Progress | None = None, landscape: Landscape | None = None
) -> Iterator[bytes]:
    """The export document as JSON, in pieces: a header, the metamodel, each type's records (one per line,
    so that two exports diff well), then the users that responsibility values name. Of main now, or of
    `landscape` (a scenario's: the header's `scenario` names it, `revision` is its base)."""
    landscape = landscape or StoredLandscape(db)
    revision = landscape.revision
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "apiVersion": API_VERSION,
        "revision": revision,
        # Whose ids the records carry: imported where this revision has this mark, an id says which
        # element a record describes (`revisions.repository.revision_mark`).
        "revisionMark": revision_mark(db, revision),
    }
    if landscape.scenario is not None:
        header["scenario"] = landscape.scenario
    if landscape.projection is not None:
        header["projection"] = landscape.projection
    logins: set[str] = set()
    yield (
        orjson.dumps(header)[:-1]
        + b',"metamodel":'
        + orjson.dumps(metamodel_section(plan))
        + b',"elements":{'
    )
    for index, type_plan in enumerate(plan.types):
        yield (b",\n" if index else b"\n") + orjson.dumps(type_plan.type_def.name) + b":["
        done = 0
        batches = iterate_records(landscape, type_plan)
        with closing(batches):  # explicitly, if the download ends early (see `listing.stream_ndjson`)
            for records in batches:
                if not records:
                    continue
                logins |= responsible_logins(type_plan, records)
                # One buffer, each record's bytes freed at once (as `listing.stream_ndjson` does).
                chunk = io.BytesIO()
                write = chunk.write
                separator = b",\n" if done else b"\n"  # the type's first record opens its array
                for record in records:
                    write(separator)
                    write(orjson.dumps(record))
                    separator = b",\n"
                yield chunk.getvalue()
                done += len(records)
                if progress is not None:
                    progress(type_plan.type_def.name, done)
        yield b"]"
    yield b'},\n"users":' + orjson.dumps(users_section(db, logins)) + b"}\n"


def stream_json(
    open_session: Callable[[], Session],
    plan: ExportPlan,
    landscape: Callable[[Session], Landscape] | None = None,
) -> Iterator[bytes]:
    """`json_chunks` from one snapshot in a session of its own (the request's is gone by then); with
    `landscape`, of what it reads in that session (a planning scenario's state)."""
    with open_session() as db:
        begin_snapshot(db)
        yield from json_chunks(db, plan, landscape=None if landscape is None else landscape(db))
