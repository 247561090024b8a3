"""What one actor sees of a type's elements (`ElementView`), and the element JSON rendered from loaded
rows."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from blockrepo.access.actor import Actor
from blockrepo.elements.read.repository import LoadedElement, LoadedRelation, Selection
from blockrepo.elements.values import TypedValue, encode_value
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationEnd

# Keys of the element JSON in their fixed order (properties come between "children" and the stamps).
HEAD_KEYS = ("id", "type", "revision", "name", "description", "parent", "children")
TAIL_KEYS = ("lastModificationTime", "lastModificationUser")


def relation_attributable(end: RelationEnd) -> bool:
    """Relations of the end carry an "attributes" object: the type is attributable or has attributes."""
    return end.relation_type.attributable or bool(end.relation_type.attributes)


@dataclass(frozen=True)
class ElementView:
    """The keys of a type's element JSON that one actor may see (optionally narrowed to `fields`)."""

    type_def: BlockTypeDef
    head: tuple[str, ...]
    properties: tuple[AttributeDef, ...]  # built-ins, then user attributes
    ends: tuple[RelationEnd, ...]
    relation_attributes: dict[int, tuple[AttributeDef, ...]]  # relation type id -> readable attributes
    tail: tuple[str, ...]

    @classmethod
    def build(
        cls,
        metamodel: Metamodel,
        actor: Actor | None,
        type_def: BlockTypeDef,
        fields: Iterable[str] | None = None,
    ) -> ElementView:
        """`actor` None: everything (internal use, e.g. history); `fields` None: every property."""
        wanted = None if fields is None else {"id", *fields}

        def shown(key: str) -> bool:
            return wanted is None or key in wanted

        def readable(attribute: AttributeDef) -> bool:
            return actor is None or attribute.builtin or actor.can_read_group(attribute.group_id)

        head = tuple(
            key
            for key in HEAD_KEYS
            if shown(key) and (type_def.hierarchical or key not in ("parent", "children"))
        )
        properties = tuple(p for p in type_def.properties if shown(p.name) and readable(p))
        ends = tuple(
            end
            for end in type_def.ends.values()
            if shown(end.name) and (actor is None or actor.can_type(end.other_type_id, "read"))
        )
        relation_attributes = {
            end.relation_type.id: tuple(a for a in end.relation_type.attributes if readable(a))
            for end in ends
            if relation_attributable(end)
        }
        tail = tuple(key for key in TAIL_KEYS if shown(key))
        return cls(type_def, head, properties, ends, relation_attributes, tail)

    @cached_property
    def tag(self) -> str:
        """What this view shows, for the element's ETag: empty when it shows every key of the type (so the
        tag of such a reader is the plain revision), else `.` and a digest of the attributes, ends and
        relation attributes it shows. Readers who see different keys get different tags at one revision, so
        neither is ever answered 304 for the other's body; readers who see the same keys share bodies and
        tags. Built once per view (views are cached per snapshot and actor)."""
        type_def = self.type_def
        # A view only ever leaves keys out of the type's own, so equal counts mean every key is shown.
        everything = (
            len(self.head) + len(self.tail)
            == len(HEAD_KEYS) + len(TAIL_KEYS) - (0 if type_def.hierarchical else 2)
            and len(self.properties) == len(type_def.properties)
            and len(self.ends) == len(type_def.ends)
            and all(
                len(self.relation_attributes[end.relation_type.id]) == len(end.relation_type.attributes)
                for end in self.ends
                if relation_attributable(end)
            )
        )
        if everything:
            return ""
        shown = (
            self.head,
            tuple(p.id for p in self.properties),
            tuple(end.name for end in self.ends),
            sorted((rt, tuple(a.id for a in attrs)) for rt, attrs in self.relation_attributes.items()),
            self.tail,
        )
        return "." + hashlib.blake2b(repr(shown).encode(), digest_size=8).hexdigest()

    @property
    def selection(self) -> Selection:
        return Selection(
            children="children" in self.head,
            attribute_ids=frozenset(p.id for p in self.properties),
            ends=self.ends,
            relation_attribute_ids=frozenset(
                a.id for attrs in self.relation_attributes.values() for a in attrs
            ),
        )

    def render(self, element: LoadedElement) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.head:
            if key == "id":
                out["id"] = [element.id]
            elif key == "type":
                out["type"] = [self.type_def.name]
            elif key == "revision":
                out["revision"] = [element.revision]
            elif key == "name":
                out["name"] = [element.name]
            elif key == "description":
                out["description"] = [element.description] if element.description else []
            elif key == "parent":
                out["parent"] = (
                    [{"id": element.parent_id, "name": element.parent_name}]
                    if element.parent_id is not None
                    else []
                )
            else:
                out["children"] = [{"id": child_id, "name": name} for child_id, name in element.children]
        for prop in self.properties:
            out[prop.name] = encode_values(prop, element.values.get(prop.id, ()))
        for end in self.ends:
            attributes = self.relation_attributes.get(end.relation_type.id)
            out[end.name] = [render_relation(item, attributes) for item in element.ends.get(end.name, ())]
        if "lastModificationTime" in self.tail:
            out["lastModificationTime"] = [format_timestamp(element.last_modified_at)]
        if "lastModificationUser" in self.tail:
            out["lastModificationUser"] = [element.last_modified_by]
        return out


# (metamodel, actor or None, type id) -> the view: the snapshots are immutable and cached by revision, so a


def encode_values(attribute: AttributeDef, values: Iterable[TypedValue]) -> list[Any]:
    return [encode_value(attribute, value) for value in values]


def render_relation(item: LoadedRelation, attributes: Sequence[AttributeDef] | None) -> dict[str, Any]:
    """`{"id", "name"}` plus `"attributes"` when the relation type is attributable."""
    out: dict[str, Any] = {"id": item.other_id, "name": item.other_name}
    if attributes is not None:
        out["attributes"] = {a.name: encode_values(a, item.values.get(a.id, ())) for a in attributes}
    return out


def format_timestamp(moment: dt.datetime) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2026-11-22T09:30:00.123Z (SQLite returns naive UTC values)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
