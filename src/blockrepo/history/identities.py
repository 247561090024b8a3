"""Which attribute a name recorded in history meant: names pass between attributes, identities do not."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from blockrepo.access.actor import Actor
from blockrepo.metamodel.snapshot import CORE_KEYS, READ_ONLY_KEYS, AttributeDef, BlockTypeDef, Metamodel


@dataclass(frozen=True, slots=True)
class FormerName:
    """A row of `attribute_former_name`: `attribute_id` bore `name` up to `until_revision` (inclusive);
    `group_id` is set on the row of its deletion. `attribute_id` None: deleted before such rows were kept."""

    attribute_id: int | None
    name: str
    until_revision: int
    group_id: int | None


@dataclass(frozen=True, slots=True)
class Bearer:
    """The attribute a former name meant: alive (`attribute` today's definition) or deleted (`attribute`
    None, `group_id` the group it was in when deleted, None if unknown or since deleted too)."""

    attribute: AttributeDef | None
    group_id: int | None

    def readable_by(self, actor: Actor) -> bool:
        if actor.supervisor:
            return True
        group_id = self.attribute.group_id if self.attribute is not None else self.group_id
        return group_id is not None and actor.can_read_group(group_id)


class AttributeIdentities:
    """Resolves an attribute name recorded at a revision to the attribute that bore it then.

    A name no former-name row covers at that revision means what it means today (the attribute, built-in or
    relation end of that name); one a row covers meant the row's attribute, under whatever name it has
    today, or a deleted one, readable only through the group it was in. Names are unique among attributes
    at any one revision, so the row with the smallest `until_revision` at or after the revision is the one.
    """

    __slots__ = ("_bearers", "_until")

    def __init__(self, former_names: Iterable[FormerName], metamodel: Metamodel) -> None:
        former_names = tuple(former_names)
        alive = {attribute.id: attribute for attribute in metamodel.attributes}
        groups = {group.id for group in metamodel.groups}
        removed = {
            row.attribute_id: row.group_id
            for row in former_names
            if row.attribute_id is not None and row.group_id is not None
        }
        spans: dict[str, list[tuple[int, Bearer]]] = {}
        for row in sorted(former_names, key=lambda r: r.until_revision):
            attribute_id = row.attribute_id
            if attribute_id is not None and attribute_id not in removed and attribute_id in alive:
                bearer = Bearer(alive[attribute_id], None)
            else:
                # Deleted (a reused id is not the same attribute): only its group then decides, if it still
                # exists; a group deleted since takes its rules with it, so nobody but a supervisor reads.
                group_id = removed.get(attribute_id) if attribute_id is not None else None
                bearer = Bearer(None, group_id if group_id in groups else None)
            spans.setdefault(row.name, []).append((row.until_revision, bearer))
        self._until = {name: [until for until, _ in rows] for name, rows in spans.items()}
        self._bearers = {name: [bearer for _, bearer in rows] for name, rows in spans.items()}

    @property
    def empty(self) -> bool:
        """No attribute was ever renamed or deleted: every recorded name means what it means today."""
        return not self._until

    def former(self, name: str, revision: int) -> Bearer | None:
        """The attribute `name` meant in a change recorded at `revision`, if that was another name than it
        is today, or another attribute than the one bearing it today (None: read the name as today)."""
        until = self._until.get(name)
        if until is None:
            return None
        index = bisect_left(until, revision)
        return self._bearers[name][index] if index < len(until) else None

    def recorded_attribute(
        self, block_type: BlockTypeDef | None, change: dict[str, Any], revision: int
    ) -> Bearer | None:
        """`former` for the property of one change of an element of `block_type`, when it can be a user
        attribute: the element's own keys and built-ins never are, nor a change of related elements
        (`added`/`removed`: relation ends and `children`)."""
        name = change["property"]
        if name not in self._until or "added" in change or "removed" in change:
            return None
        if name in CORE_KEYS or name in READ_ONLY_KEYS:
            return None
        if block_type is not None:
            prop = block_type.property_named(name)
            if prop is not None and prop.builtin:
                return None
        return self.former(name, revision)


def no_former_names(metamodel: Metamodel) -> AttributeIdentities:
    """Identities for a reader who sees everything whatever it was named (a supervisor)."""
    return AttributeIdentities((), metamodel)
