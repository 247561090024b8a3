"""The landscape diff: what changed between two revisions or times of the repository, per element and field.

It folds the change rows of the range, element by element (the same rows `asOf` folds): the value a field
had at the start (`base`) and at the end (`main`), relation ends and children as the entries added and
removed over the range, and one action per element (created, updated, deleted). What changed and changed
back is no difference; an element created and deleted within the range is left out. Its cost grows with
the changes in the range, not with the repository or its history. The shape is the one scenario diffs will
answer (API.md section 11): `{"element", "action", "fields": [{"field", "base", "main", "state"}]}`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import ErrorItem, Forbidden, ValidationFailed
from blockrepo.history import repository
from blockrepo.history.identities import AttributeIdentities
from blockrepo.history.repository import ChangesetRow
from blockrepo.history.service import (
    Limits,
    attribute_identities,
    decode_cursor,
    encode_cursor,
    end_of_moment,
    parse_limit,
    parse_moment,
    property_visibility,
    require_history,
)
from blockrepo.history.visibility import PropertyVisibility
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel

# Elements folded per batch while the summary of a whole range is counted (one query per batch).
_SUMMARY_BATCH = 1000


@dataclass
class EndChanges:
    """A relation end's (or `children`') entries added and removed over the range, by related id."""

    added: dict[Any, Any] = field(default_factory=dict)
    removed: dict[Any, Any] = field(default_factory=dict)

    def apply(self, change: dict[str, Any]) -> None:
        for entry in change.get("removed", []):
            key = entry["id"]
            if key in self.added:
                del self.added[key]  # added within the range: as if it never was
            else:
                self.removed[key] = entry
        for entry in change.get("added", []):
            key = entry["id"]
            before = self.removed.get(key)
            if before is not None and _merged(before, entry) == before:
                del self.removed[key]  # removed and added back as it was
            else:
                # Added, or added back with other relation attributes (a record may name only those it
                # changed): the entry as it now stands.
                self.added[key] = _merged(before, entry) if before is not None else entry


def _merged(before: Any, after: Any) -> Any:
    old_attributes, new_attributes = before.get("attributes"), after.get("attributes")
    if isinstance(old_attributes, dict) and isinstance(new_attributes, dict):
        return {**after, "attributes": {**old_attributes, **new_attributes}}
    return after


@dataclass
class NetChange:
    """One element's changes over the range, folded."""

    element_id: int
    type_name: str
    name: str
    first_operation: str
    last_operation: str = ""
    values: dict[str, list[list[Any]]] = field(default_factory=dict)  # field -> [base, main]
    ends: dict[str, EndChanges] = field(default_factory=dict)

    @property
    def action(self) -> str | None:
        """created, deleted or updated over the range; None: created and deleted within it."""
        if self.first_operation == "created":
            return None if self.last_operation == "deleted" else "created"
        return "deleted" if self.last_operation == "deleted" else "updated"

    def item(self) -> dict[str, Any] | None:
        action = self.action
        if action is None:
            return None  # neither at the start nor at the end
        fields: list[dict[str, Any]] = []
        for name, (base, main) in self.values.items():
            if base != main:
                fields.append({"field": name, "base": base, "main": main, "state": "changed"})
        for name, ends in self.ends.items():
            if ends.added or ends.removed:
                fields.append(
                    {
                        "field": name,
                        "added": list(ends.added.values()),
                        "removed": list(ends.removed.values()),
                        "state": "changed",
                    }
                )
        if action == "updated" and not fields:
            return None  # changed and changed back
        return {
            "element": {"id": self.element_id, "type": self.type_name, "name": self.name},
            "action": action,
            "fields": fields,
        }


def fold_changes(
    rows: Iterable[ChangesetRow], visibility: PropertyVisibility, identities: AttributeIdentities
) -> list[NetChange]:
    """The rows (ordered by element, then revision) folded per element, with what the reader may not see
    left out and attributes named as they are named today (their former names fold into one field)."""
    folded: list[NetChange] = []
    current: NetChange | None = None
    for row in rows:
        if row.element_id is None or row.type_name is None:
            continue
        if current is None or current.element_id != row.element_id:
            current = NetChange(row.element_id, row.type_name, row.element_name or "", row.operation)
            folded.append(current)
        current.last_operation = row.operation
        current.name = row.element_name or current.name
        block_type = visibility.metamodel.type_named(row.type_name)
        for change in visibility.filter_changes(row.type_name, row.changes, row.revision):
            name = change["property"]
            bearer = identities.recorded_attribute(block_type, change, row.revision)
            if bearer is not None and bearer.attribute is not None:
                name = bearer.attribute.name
            if "added" in change or "removed" in change:
                current.ends.setdefault(name, EndChanges()).apply(change)
            elif _whole_end(block_type, name, change):
                # A creation or deletion records a relation end's whole list as old/new: in the diff it is
                # entries added or removed, as for an update, so that a client reads one shape per field.
                whole = {"added": change.get("new") or [], "removed": change.get("old") or []}
                current.ends.setdefault(name, EndChanges()).apply(whole)
            elif "old" in change or "new" in change:
                before_and_after = current.values.get(name)
                if before_and_after is None:
                    current.values[name] = [change.get("old", []), change.get("new", [])]
                else:
                    before_and_after[1] = change.get("new", [])
    return folded


def _whole_end(block_type: BlockTypeDef | None, name: str, change: dict[str, Any]) -> bool:
    """Whether the change sets a relation end (or `children`) from nothing or to nothing (a record of a
    creation or a deletion); a reordering, also recorded as old/new, stays a value change."""
    if name != "children" and (block_type is None or name not in block_type.ends):
        return False
    return not change.get("old") or not change.get("new")


@dataclass(frozen=True)
class DiffParameters:
    """The raw query parameters of a landscape diff, as the client sent them."""

    from_: str | None
    to: str | None
    type_name: str | None = None
    limit: str | None = None
    cursor: str | None = None


def _revision_at(db: Session, raw: str, pointer: str, newest: int) -> int:
    moment = parse_moment(raw, pointer)
    if not isinstance(moment, int):
        return repository.last_revision_at(db, end_of_moment(moment))
    if moment > newest:
        raise ValidationFailed(
            f"{pointer.split(':')[-1]} revision {moment} is after the newest revision {newest}",
            errors=[ErrorItem(pointer, "future_revision", f"the newest revision is {newest}")],
        )
    return moment


def _readable_types(actor: Actor, metamodel: Metamodel, type_name: str | None) -> frozenset[str] | None:
    if type_name is not None:
        block_type = metamodel.type_named(type_name)
        if block_type is None:
            raise ValidationFailed(
                f"type must be a building block type, not {type_name!r}",
                errors=[ErrorItem("query:type", "unknown_type", f"no type {type_name!r}")],
            )
        if not actor.can_type(block_type.id, "read"):
            raise Forbidden(f"no read permission on {type_name}")  # as the type's history answers
        return frozenset({type_name})
    if actor.supervisor:
        return None
    return frozenset(t.name for t in metamodel.types if actor.can_type(t.id, "read"))


def landscape_diff(
    db: Session, actor: Actor, metamodel: Metamodel, limits: Limits, parameters: DiffParameters
) -> dict[str, Any]:
    """What changed between `from` and `to` (revisions or times; `to` defaults to the newest revision),
    a page of elements in id order; the first page also counts every element of the range by type and
    action (`summary`)."""
    require_history(actor)
    if parameters.from_ is None:
        raise ValidationFailed(
            "from is required: the revision or time to compare from",
            errors=[ErrorItem("query:from", "required", "a revision number or an ISO-8601 time")],
        )
    newest = repository.current_revision(db)
    start = _revision_at(db, parameters.from_, "query:from", newest)
    end = newest if parameters.to is None else _revision_at(db, parameters.to, "query:to", newest)
    if start > end:
        raise ValidationFailed(
            f"from (revision {start}) is after to (revision {end})",
            errors=[ErrorItem("query:from", "after_to", f"revision {start} is after revision {end}")],
        )
    limit = parse_limit(parameters.limit, limits)
    types = _readable_types(actor, metamodel, parameters.type_name)
    scope = f"d{start}-{end}-{parameters.type_name or ''}"
    after = decode_cursor(parameters.cursor, scope)[0] if parameters.cursor is not None else 0
    visibility = property_visibility(db, actor, metamodel)
    identities = attribute_identities(db, metamodel)

    def items_of(element_ids: list[int]) -> list[dict[str, Any]]:
        rows = repository.element_changesets_between(db, element_ids, start, end)
        return [
            item for net in fold_changes(rows, visibility, identities) if (item := net.item()) is not None
        ]

    page: dict[str, Any] = {"from": {"revision": start}, "to": {"revision": end}}
    items: list[dict[str, Any]] = []
    more = False
    if parameters.cursor is None:
        # The first page counts the whole range; its items come from the same fold.
        summary: dict[str, dict[str, int]] = {}
        element_ids = repository.changed_element_ids(db, start, end, types)
        for batch_start in range(0, len(element_ids), _SUMMARY_BATCH):
            for item in items_of(element_ids[batch_start : batch_start + _SUMMARY_BATCH]):
                counts = summary.setdefault(item["element"]["type"], {})
                counts[item["action"]] = counts.get(item["action"], 0) + 1
                if len(items) < limit:
                    items.append(item)
                else:
                    more = True
        page["summary"] = summary
    else:
        # Elements whose changes net out leave nothing: read on until the page is full or the range ends.
        while len(items) <= limit:
            element_ids = repository.changed_element_ids(
                db, start, end, types, after_element=after, limit=limit + 1
            )
            if not element_ids:
                break
            items.extend(items_of(element_ids))
            after = element_ids[-1]
        more = len(items) > limit
        items = items[:limit]
    page["items"] = items
    page["nextCursor"] = encode_cursor(scope, items[-1]["element"]["id"], 0) if more and items else None
    return page


@dataclass(frozen=True)
class Folding:
    """Folds change rows per element for one reader (what `actor` may not see left out, attributes under
    today's names): given rows, or main's rows of some elements over a range of revisions."""

    visibility: PropertyVisibility
    identities: AttributeIdentities

    def fold(self, rows: Iterable[ChangesetRow]) -> list[NetChange]:
        return fold_changes(rows, self.visibility, self.identities)

    def between(self, db: Session, element_ids: list[int], start: int, end: int) -> list[NetChange]:
        """Main's changes of `element_ids` in (`start`, `end`], folded."""
        if start >= end or not element_ids:
            return []
        return self.fold(repository.element_changesets_between(db, element_ids, start, end))

    def of_revision(self, db: Session, revision: int) -> list[NetChange]:
        """What one revision of main did to each element it changed."""
        element_ids = repository.changed_element_ids(db, revision - 1, revision, None)
        return self.between(db, element_ids, revision - 1, revision)


def folding(db: Session, actor: Actor, metamodel: Metamodel) -> Folding:
    return Folding(property_visibility(db, actor, metamodel), attribute_identities(db, metamodel))


def revisions_since(db: Session, base: int, newest: int) -> int:
    """How many revisions main has had after `base` up to `newest`."""
    return repository.revisions_between(db, base, newest)


def newest_revision(db: Session) -> int:
    """The newest revision of main that history shows."""
    return repository.current_revision(db)


def element_changesets_of(db: Session, revision: int) -> list[ChangesetRow]:
    """Every element changeset one revision recorded, by element."""
    element_ids = repository.changed_element_ids(db, revision - 1, revision, None)
    return (
        repository.element_changesets_between(db, element_ids, revision - 1, revision) if element_ids else []
    )
