"""The single-element rules: read, create, update (partial) and delete, with permissions and history.

Services never commit; the route does. A write checks the type, the lock and If-Match here and hands
the one element to the write core (`elements.write`), which validates the whole body first (every
problem in one 400), writes, bumps the revision of every element whose JSON changed exactly once and
records field-level history in the request's ChangeLog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import repository
from blockrepo.elements.compiled import reader_of, view_of
from blockrepo.elements.read.reader import ElementReader
from blockrepo.elements.read.repository import LoadedElement, load_elements
from blockrepo.elements.read.view import ElementView
from blockrepo.elements.write import persistence, validation
from blockrepo.elements.write.changesets import Changesets
from blockrepo.elements.write.items import WriteItem, Writer
from blockrepo.elements.write.record import ElementRecorder, draft_state
from blockrepo.errors import (
    BlockrepoError,
    Conflict,
    Forbidden,
    HasChildren,
    NameConflict,
    NotFound,
    PreconditionFailed,
    UnknownType,
)
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.revisions.recorder import Change, ChangeLog, ElementState, ElementUpdate

# Other features read elements in the JSON the element API gives (history's `asOf`, mass data's listings
# and exports) with the view and the reader of `elements.read`, named here so that they meet the elements
# through this module.
__all__ = [
    "ChangedElement",
    "ElementReader",
    "ElementView",
    "Writer",
    "create_element",
    "delete_element",
    "ids_named",
    "parents_of",
    "planned_changesets",
    "reader_of",
    "record_changed_elements",
    "stored_ids",
    "stored_ids_after",
    "update_element",
    "update_elements",
    "validated_state",
    "validated_states",
    "view_of",
]

RevisionCheck = Callable[[int], bool]
# An element changed through something else than a write of its own, by its id: its type id, its name, and
# the properties the change concerns as they were and as they are (`record_changed_elements`).
ChangedElement = tuple[int, str, ElementState, ElementState]

# Keys of an element's JSON that a write may send and that concern the element alone, besides its
# properties (its attributes and built-ins other than `name`): no neighbour shows its description.
_OWN_KEYS = frozenset(
    {"id", "type", "revision", "lastModificationTime", "lastModificationUser", "description"}
)


def _serialize_structure(writer: Writer, type_def: BlockTypeDef, body: dict[str, Any] | None) -> None:
    """Take the structure lock (`storage.transactions.lock_structure`) before any row when the write
    may change more than the element's own values: relations, the hierarchy, the name (unique in the
    type; neighbours show it), or a deletion (`body` None). Element writes that change values only run
    side by side on PostgreSQL; these are checked against relations and parents no concurrent write is
    changing (cardinality, cycles)."""
    if body is None or any(
        key == "name" or (key not in _OWN_KEYS and type_def.property_named(key) is None) for key in body
    ):
        repository.lock_structure(writer.db)


def resolve_type(metamodel: Metamodel, actor: Actor, type_name: str, action: str = "read") -> BlockTypeDef:
    """The type, if the actor may read it and perform `action` on its elements (404 / 403 otherwise)."""
    type_def = metamodel.type_named(type_name)
    if type_def is None:
        raise UnknownType(f"there is no building block type {type_name!r}")
    if not actor.can_type(type_def.id, "read") or not actor.can_type(type_def.id, action):
        raise Forbidden(f"you may not {action} {type_name} elements")
    return type_def


def _write_one(
    writer: Writer,
    type_def: BlockTypeDef,
    body: dict[str, Any],
    element_id: int | None,
    before: LoadedElement | None = None,
) -> dict[str, Any]:
    """Validate and write one element through the write core (an update: `before` is the element as it is,
    all properties); its JSON as the actor sees it."""
    item = WriteItem(0, body, element_id)
    items = [item]
    validation.validate(writer, type_def, items)
    if item.error is not None:
        raise item.error
    assert item.draft is not None
    loaded = None if before is None else {before.id: before}
    with concurrent_change_guard(item.draft.name):
        written = persistence.persist(writer, type_def, items, loaded=True, before=loaded)
    written_id = item.written_id
    assert written_id is not None
    return view_of(writer.metamodel, writer.actor, type_def).render(written[written_id])


@contextmanager
def concurrent_change_guard(name: str | None = None) -> Iterator[None]:
    """Validation ran before the writes; a concurrent request can still win a race the checks could not
    see (the same name created in parallel, a target deleted meanwhile). Those surface as constraint
    violations and become 409s instead of 500s."""
    try:
        yield
    except IntegrityError as exc:
        message = str(exc.orig)
        if name is not None and (
            "uq_element_type_id" in message or "element.type_id, element.name" in message
        ):
            raise NameConflict(f"an element named {name!r} was just created by another request") from exc
        raise Conflict("the change conflicts with a concurrent change; retry") from exc


def create_element(writer: Writer, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create an element from a body (name required); returns its JSON as the actor sees it."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "create")
    _serialize_structure(writer, type_def, body)
    return _write_one(writer, type_def, body, None)


def _lock(writer: Writer, type_def: BlockTypeDef, element_id: int, if_match: RevisionCheck | None) -> None:
    revision = repository.lock_elements(writer.db, type_def.id, [element_id]).get(element_id)
    _check_precondition(type_def, element_id, revision, if_match)


def _check_precondition(
    type_def: BlockTypeDef, element_id: int, revision: int | None, if_match: RevisionCheck | None
) -> None:
    """404 when the element does not exist (revision None), 412 when If-Match names another revision."""
    if revision is None:
        raise NotFound(f"there is no {type_def.name} with id {element_id}")
    if if_match is not None and not if_match(revision):
        raise PreconditionFailed(
            f"the element is at revision {revision}; If-Match does not match",
            extra={"currentRevision": revision},
        )


def update_element(
    writer: Writer,
    type_name: str,
    element_id: int,
    body: dict[str, Any],
    *,
    if_match: RevisionCheck | None = None,
) -> dict[str, Any]:
    """Change the properties present in `body` (PUT and PATCH alike); a body that changes nothing writes
    nothing and keeps the revision."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "update")
    _serialize_structure(writer, type_def, body)
    # Read once, locked: the precondition is checked on it and the write core plans against it.
    full = view_of(writer.metamodel, None, type_def)
    before = load_elements(writer.db, type_def.id, [element_id], full.selection, locked=True).get(element_id)
    _check_precondition(type_def, element_id, None if before is None else before.revision, if_match)
    return _write_one(writer, type_def, body, element_id, before)


def update_elements(writer: Writer, type_name: str, updates: Sequence[tuple[int, dict[str, Any]]]) -> None:
    """Change many elements of one type, each body as `update_element` takes it, in one pass of the write
    core (a fixed number of statements per chunk, nothing rendered). Every body is checked first; the first
    element refused raises its error, which names it (`extra["elementId"]`), and nothing is written."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "update")
    for _, body in updates:
        if any(
            key == "name" or (key not in _OWN_KEYS and type_def.property_named(key) is None) for key in body
        ):
            repository.lock_structure(writer.db)
            break
    ids = [element_id for element_id, _ in updates]
    found = repository.lock_elements(writer.db, type_def.id, ids)
    for element_id in ids:
        if element_id not in found:
            raise NotFound(f"there is no {type_name} with id {element_id}", extra={"elementId": element_id})
    items = [WriteItem(index, body, element_id) for index, (element_id, body) in enumerate(updates)]
    validation.validate(writer, type_def, items)
    for item in items:
        if item.error is not None:
            item.error.extra = {**item.error.extra, "elementId": item.element_id}
            raise item.error
    with concurrent_change_guard():
        persistence.persist(writer, type_def, items)


def delete_element(
    writer: Writer,
    type_name: str,
    element_id: int,
    *,
    recursive: bool = False,
    if_match: RevisionCheck | None = None,
) -> None:
    """Delete an element (with `recursive`, its whole subtree) and its relations; the other ends of those
    relations and the parent get a new revision and a history entry."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    _serialize_structure(writer, type_def, None)
    _lock(writer, type_def, element_id, if_match)
    ids = repository.subtrees(writer.db, [element_id])
    if len(ids) > 1 and not recursive:
        raise HasChildren(
            f"{type_def.name} {element_id} has children; delete them first or pass ?recursive=true",
            extra={"children": len(ids) - 1},
        )
    with concurrent_change_guard():
        persistence.delete(writer, type_def, ids)


def record_changed_elements(
    db: Session, metamodel: Metamodel, changes: ChangeLog, login: str, changed: Mapping[int, ChangedElement]
) -> None:
    """Record elements changed through something else than a write of theirs (a removed or renamed value,
    a removed relation type), the elements at both ends of each changed relation among them: each gets its
    "updated" change and one new revision, as a write's would (`ElementRecorder.changed`)."""
    ElementRecorder(db, changes, login).changed(
        (metamodel.type_by_id(type_id), element_id, {"name": [name], **before}, {"name": [name], **after})
        for element_id, (type_id, name, before, after) in changed.items()
    )


# Keys of an element's JSON that no write sets (a body may carry them; they are not part of a state it
# validates): the element's identity and stamps, and `children` (each child names its parent).
READ_ONLY_KEYS = frozenset(
    {"id", "type", "revision", "children", "lastModificationTime", "lastModificationUser"}
)


def validated_state(
    writer: Writer, type_def: BlockTypeDef, body: dict[str, Any], element_id: int | None
) -> ElementState:
    """Check `body` as a write of the element (`element_id` None: a new one) would, against the stored
    elements and with the actor's rights, and give the state it describes (the properties `body` names;
    writes nothing). The body must hold the name. 403 / 400 / 409 as the write would answer."""
    item = WriteItem(0, {key: value for key, value in body.items() if key not in READ_ONLY_KEYS}, element_id)
    validation.validate(writer, type_def, [item])
    if item.error is not None:
        raise item.error
    return draft_state(view_of(writer.metamodel, None, type_def), item)


def validated_states(
    writer: Writer, type_def: BlockTypeDef, bodies: Sequence[tuple[dict[str, Any], int | None]]
) -> list[ElementState | BlockrepoError]:
    """`validated_state` of many bodies (each with the element it writes, None: a new one) in one pass of
    the validation, rules across them included: per body the state it describes, or the error a write
    of it alone would raise."""
    items = [
        WriteItem(index, {key: value for key, value in body.items() if key not in READ_ONLY_KEYS}, element_id)
        for index, (body, element_id) in enumerate(bodies)
    ]
    validation.validate(writer, type_def, items)
    view = view_of(writer.metamodel, None, type_def)
    for item in items:
        if item.error is not None and not item.error.errors:
            item.error.errors = list(item.errors)  # the item's problems, as a bulk write reports them
    return [item.error if item.error is not None else draft_state(view, item) for item in items]


def planned_changesets(
    type_def: BlockTypeDef, element_id: int, before: ElementState | None, after: ElementState | None
) -> tuple[list[Change], list[ElementUpdate]]:
    """What a write from `before` to `after` (None: the element is not there) records: the element's own
    changes, and the changesets of the elements at the other end of its relations and of its parents."""
    changesets = Changesets(skip={element_id})
    own: list[Change]
    if before is None:
        assert after is not None
        own = list(changesets.created(type_def, element_id, after))
    elif after is None:
        own = list(changesets.deleted(type_def, element_id, before))
    else:
        own = changesets.diff(type_def, element_id, before, after)
    return own, list(changesets.neighbours())


def ids_named(db: Session, type_def: BlockTypeDef, names: Iterable[str]) -> dict[str, int]:
    """name -> id of the stored elements of the type among `names`."""
    return repository.ids_by_name(db, type_def.id, names)


def parents_of(db: Session, ids: Iterable[int]) -> dict[int, int | None]:
    """id -> parent id of the stored elements `ids` and of all their ancestors."""
    return repository.parent_chains(db, ids)


def stored_ids_after(db: Session, type_id: int, after: int, limit: int) -> list[int]:
    """Up to `limit` ids of the stored elements of a type above `after`, ascending."""
    return repository.ids_after(db, type_id, after, limit)


def stored_ids(db: Session, ids: Iterable[int]) -> set[int]:
    """Those of `ids` that are stored elements now."""
    return set(repository.find_by_ids(db, ids))
