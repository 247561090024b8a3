"""The one set of constructors of element history (`Changesets`): the changeset of a created, deleted or
changed element from its states, and, in the same pass, the changesets the elements at the other end of
its relations and parent see (the neighbour mirror). The diff of two states alone: `diff_elements`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.revisions.recorder import (
    UNRECORDED_KEYS,
    Change,
    ElementState,
    ElementUpdate,
    EndChange,
    ValueChange,
    apply_related_change,
)

# The empty side of a created or deleted element's changes: one shared list, as a changeset is turned into
# JSON text as it is recorded and nothing changes its lists in place (a bulk write records thousands).
_NONE: list[Any] = []


def diff_elements(
    type_def: BlockTypeDef, before: ElementState, after: ElementState, *, order_counts: bool = True
) -> list[Change]:
    """Field-level changes between two states of one element: `old`/`new` for values, `added`/`removed`
    for relation ends and children (matched by id, so the same entries in another order add and remove
    nothing; changed relation attributes show the old entry as removed and the new one as added, and
    `order` lists the ids when the end was reordered as well); a pure reordering is recorded as
    `old`/`new`, unless `order_counts` is false (an import: a relation list's order is not a change)."""
    changes: list[Change] = []
    for key in dict.fromkeys([*before, *after]):
        if key in UNRECORDED_KEYS:
            continue
        old, new = before.get(key, []), after.get(key, [])
        if old == new:
            continue
        if key == "children" or key in type_def.ends:
            added, removed = entry_diff(old, new)
            if added or removed:
                change: EndChange = {"property": key, "added": added, "removed": removed}
                new_order = [entry["id"] for entry in new]
                if [entry["id"] for entry in apply_related_change(old, change)] != new_order:
                    change["order"] = new_order  # added and reordered at once: history keeps the order
                changes.append(change)
                continue
            if not order_counts:
                continue
        changes.append({"property": key, "old": old, "new": new})
    return changes


def entry_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(added, removed) between two lists of related entries, matched by id: an entry whose attributes
    changed is in both."""
    old_by_id = {entry["id"]: entry for entry in old}
    new_by_id = {entry["id"]: entry for entry in new}
    return (
        [entry for entry in new if old_by_id.get(entry["id"]) != entry],
        [entry for entry in old if new_by_id.get(entry["id"]) != entry],
    )


class Changesets:
    """Makes the changeset of each element handed in (`created`, `deleted`, `diff`) and collects what
    that changes for the elements at the other end of its relations and parent: one changeset each
    (`neighbours`), added to as elements are handed in one at a time, so that a large import need not
    hold every element's state at once. Elements in `skip` have a record of their own: nothing is
    mirrored to them."""

    def __init__(self, skip: set[int] | None = None) -> None:
        self.skip = set() if skip is None else skip
        self.mirrored: dict[int, dict[str, Any]] = {}
        # Per type id: end name -> (the other type, the end there); a plain dict, looked up for every key
        # of every state (a type's `ends` is a read-only proxy, whose `get` is a method call each time).
        self._ends: dict[int, dict[str, tuple[str, str]]] = {}

    def created(self, type_def: BlockTypeDef, element_id: int, after: ElementState) -> list[ValueChange]:
        """A created element: every recorded property of its state that holds something, as new; each
        relation entry and the parent see it come. One pass over the state (a bulk write's and an
        import's elements come this way)."""
        return self._whole(type_def, element_id, after, True)

    def deleted(self, type_def: BlockTypeDef, element_id: int, before: ElementState) -> list[ValueChange]:
        """A deleted element: every recorded property of its last state that held something, as old; each
        relation entry and the parent see it go."""
        return self._whole(type_def, element_id, before, False)

    def diff(
        self,
        type_def: BlockTypeDef,
        element_id: int,
        before: ElementState,
        after: ElementState,
        *,
        order_counts: bool = True,
    ) -> list[Change]:
        """`diff_elements` of the two states; the entries its ends gained and lost, and its change of
        parent, are mirrored."""
        changes = diff_elements(type_def, before, after, order_counts=order_counts)
        ends = type_def.ends
        parent: ValueChange | None = None
        for change in changes:
            key = change["property"]
            if "added" in change:
                if key in ends:
                    end_change = cast(EndChange, change)
                    other_type, opposite = ends[key].other_type, ends[key].opposite_name
                    self._mirror(other_type, end_change["removed"], opposite, element_id, before, "removed")
                    self._mirror(other_type, end_change["added"], opposite, element_id, after, "added")
            elif key == "parent":
                parent = change
        # A pure reordering of an end (`old`/`new`) mirrors nothing; the parent goes after the ends.
        if parent is not None and type_def.hierarchical:
            self._mirror(type_def.name, parent["old"], "children", element_id, before, "removed")
            self._mirror(type_def.name, parent["new"], "children", element_id, after, "added")
        return changes

    def neighbours(self) -> Iterator[ElementUpdate]:
        """The changesets collected for the elements at the other end, one an element."""
        for other_id, record in self.mirrored.items():
            yield ElementUpdate(record["type"], other_id, record["name"], list(record["changes"].values()))

    def _whole(
        self, type_def: BlockTypeDef, element_id: int, state: ElementState, created: bool
    ) -> list[ValueChange]:
        ends = self._ends.get(type_def.id) or self._ends_of(type_def)
        side = "added" if created else "removed"
        changes: list[ValueChange] = []
        for key, value in state.items():
            if not value or key in UNRECORDED_KEYS:
                continue
            changes.append(
                {"property": key, "old": _NONE, "new": value}
                if created
                else {"property": key, "old": value, "new": _NONE}
            )
            if key in ends:
                other_type, opposite = ends[key]
                self._mirror(other_type, value, opposite, element_id, state, side)
        # After the ends, as a neighbour's changeset lists what it saw in this order.
        parent = state.get("parent")
        if parent and type_def.hierarchical:
            self._mirror(type_def.name, parent, "children", element_id, state, side)
        return changes

    def _ends_of(self, type_def: BlockTypeDef) -> dict[str, tuple[str, str]]:
        ends = self._ends.get(type_def.id)
        if ends is None:
            ends = self._ends[type_def.id] = {
                name: (end.other_type, end.opposite_name) for name, end in type_def.ends.items()
            }
        return ends

    def _mirror(
        self,
        other_type: str,
        others: list[Any],
        prop: str,
        element_id: int,
        state: ElementState,
        side: str,
    ) -> None:
        """The element (`element_id`, named as in `state`) was added to or removed from (`side`) `prop`
        of each element of `other_type` in `others` (entries of its end or its parent, whose relation
        attributes it shares)."""
        if not others:
            return
        mirrored, skip = self.mirrored, self.skip
        # One entry for every neighbour it goes to, unless it carries the relation's attributes: the
        # changesets are turned into JSON text as they are recorded, and nothing changes them in place.
        name = state["name"][0]
        plain = {"id": element_id, "name": name}
        for other in others:
            other_id = other["id"]
            if other_id in skip:
                continue
            me = plain
            if "attributes" in other:
                me = {"id": element_id, "name": name, "attributes": other["attributes"]}
            # get before setdefault: a bulk write mirrors thousands of entries onto a few hundred
            # elements, and a default built per call was mostly thrown away.
            record = mirrored.get(other_id)
            if record is None:
                record = mirrored[other_id] = {"type": other_type, "name": other["name"], "changes": {}}
            changes = record["changes"]
            change = changes.get(prop)
            if change is None:
                change = changes[prop] = {"property": prop, "added": [], "removed": []}
            change[side].append(me)
