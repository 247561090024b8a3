"""Which recorded properties an actor may see: the rule of API.md §6 applied to history and `asOf` reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blockrepo.access.actor import Actor
from blockrepo.history.identities import AttributeIdentities
from blockrepo.metamodel.snapshot import CORE_KEYS, READ_ONLY_KEYS, BlockTypeDef, Metamodel

_VALUE_LISTS = ("old", "new", "added", "removed")


@dataclass(frozen=True)
class PropertyVisibility:
    """Answers "may this actor read property p of type t?" for names found in history.

    Built-ins follow the type permission alone; a user attribute needs read on its attribute group; a
    relation end needs read on the type at its other end. A name the current metamodel no longer knows (a
    deleted attribute or relation type) has no group to check, so only a supervisor sees it.

    An attribute name is read as the attribute that bore it when the change was recorded (`identities`),
    so a rename or deletion never hands its past values to the group of the next attribute of that name:
    a renamed attribute's values follow its group of today, a deleted one's the group it was in then.
    """

    actor: Actor
    metamodel: Metamodel
    identities: AttributeIdentities

    @property
    def sees_everything(self) -> bool:
        """Whether nothing is ever left out for this actor (a changeset without changes is then shown)."""
        return self.actor.supervisor

    def can_read_type(self, type_name: str | None) -> bool:
        if type_name is None:
            return False
        block_type = self.metamodel.type_named(type_name)
        if block_type is None:
            return self.actor.supervisor
        return self.actor.can_type(block_type.id, "read")

    def can_read_property(self, block_type: BlockTypeDef | None, name: str) -> bool:
        if self.actor.supervisor:
            return True
        if block_type is None:
            return False
        if name in CORE_KEYS or name in READ_ONLY_KEYS:
            return True
        prop = block_type.property_named(name)
        if prop is not None:
            return prop.builtin or self.actor.can_read_group(prop.group_id)
        end = block_type.ends.get(name)
        if end is not None:
            return self.actor.can_type(end.other_type_id, "read")
        return False

    def can_read_relation_attribute(self, name: str, revision: int) -> bool:
        if self.actor.supervisor:
            return True
        bearer = self.identities.former(name, revision)
        if bearer is not None:
            return bearer.readable_by(self.actor)
        attribute = self.metamodel.attribute_named(name)
        return attribute is not None and self.actor.can_read_group(attribute.group_id)

    def filter_changes(
        self, type_name: str | None, changes: list[dict[str, Any]], revision: int
    ) -> list[dict[str, Any]]:
        """The property changes of one changeset (recorded at `revision`) that the actor may read,
        relation attributes trimmed.

        A relation entry both removed and added whose only difference was in relation attributes the
        actor may not read is no change for this actor; a relation change left with nothing added or
        removed is left out."""
        if self.actor.supervisor:
            return changes
        block_type = self.metamodel.type_named(type_name) if type_name else None
        visible = []
        for change in changes:
            bearer = self.identities.recorded_attribute(block_type, change, revision)
            if bearer is not None:
                if not bearer.readable_by(self.actor):
                    continue
            elif not self.can_read_property(block_type, change["property"]):
                continue
            trimmed = {
                key: [self.trim_relation_value(v, revision) for v in value] if key in _VALUE_LISTS else value
                for key, value in change.items()
            }
            if "added" in trimmed or "removed" in trimmed:
                added, removed = trimmed.get("added", []), trimmed.get("removed", [])
                trimmed["added"] = [v for v in added if v not in removed]
                trimmed["removed"] = [v for v in removed if v not in added]
                if not trimmed["added"] and not trimmed["removed"] and "order" not in trimmed:
                    continue
            visible.append(trimmed)
        return visible

    def trim_relation_value(self, value: Any, revision: int) -> Any:
        """A relation end value without the relation attributes in groups the actor may not read."""
        if (
            self.actor.supervisor
            or not isinstance(value, dict)
            or not isinstance(value.get("attributes"), dict)
        ):
            return value
        attributes = {
            k: v for k, v in value["attributes"].items() if self.can_read_relation_attribute(k, revision)
        }
        return {**value, "attributes": attributes}
