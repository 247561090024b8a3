"""Metamodel rules: what a caller sees of the metamodel, and validated edits of types and relation types.

Reads work on the cached `Metamodel` snapshot (no queries). Edits take the repository_state row lock, check
names against the metamodel as it stands under that lock, write, and record a metamodel change, which bumps
`metamodel_revision` on commit: every process rebuilds its snapshot on its next request.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import (
    Conflict,
    ErrorItem,
    Forbidden,
    NameConflict,
    NotFound,
    UnknownType,
    ValidationFailed,
)
from blockrepo.metamodel import repository
from blockrepo.metamodel.names import clash_on_type, identifier_problem
from blockrepo.metamodel.schemas import (
    AttributeGroupSummary,
    AttributeOut,
    BlockTypeCreate,
    BlockTypeOut,
    BlockTypeUpdate,
    LiteralOut,
    MetamodelOut,
    PropertyOut,
    RelationEndOut,
    RelationTypeCreate,
    RelationTypeOut,
    RelationTypeUpdate,
)
from blockrepo.metamodel.snapshot import (
    AttributeDef,
    BlockTypeDef,
    Metamodel,
    RelationEnd,
    RelationTypeDef,
)
from blockrepo.name_normalization import name_key
from blockrepo.revisions.recorder import ChangeLog


class StoredElements(Protocol):
    """What metamodel edits ask of, and do to, the stored elements. The elements package provides it
    (`elements.edits.metamodel`): the metamodel sits below the elements and does not import them."""

    def type_has_elements(self, db: Session, type_id: int) -> bool: ...

    def type_has_parents(self, db: Session, type_id: int) -> bool: ...

    def end_holds_several(self, db: Session, relation_type_id: int, *, holder_is_source: bool) -> bool: ...

    def remove_relations_of_type(
        self,
        db: Session,
        metamodel: Metamodel,
        changes: ChangeLog,
        relation_type: RelationTypeDef,
        *,
        login: str,
    ) -> None: ...


EDIT_METAMODEL = "EDIT_METAMODEL"
ADMIN_ATTRIBUTES = "ADMIN_ATTRIBUTES"


class MetamodelCache:
    """Keeps the snapshot of the newest metamodel revision seen by this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Metamodel | None = None

    def current(self, revision: int) -> Metamodel | None:
        """The snapshot of `revision` if it is the one held, without touching the database."""
        current = self._current
        return current if current is not None and current.revision == revision else None

    def get(self, db: Session, revision: int) -> Metamodel:
        current = self._current
        if current is not None and current.revision == revision:
            return current
        with self._lock:
            current = self._current
            if current is None or current.revision != revision:
                current = repository.load_metamodel(db, revision)
                if self._current is None or self._current.revision <= revision:
                    self._current = current
            return current


def committed_metamodel(db: Session, cache: MetamodelCache) -> Metamodel:
    """The metamodel as the request's own commit left it (loaded once, then shared via the cache)."""
    return cache.get(db, repository.read_repository_state(db).metamodel_revision)


# --- what a caller sees -------------------------------------------------------------------------------


class MetamodelView:
    """The metamodel as one actor may see it. Editors of the metamodel or of attributes see everything;
    everybody else sees the types they may read, attributes of groups they may read and relation ends
    between readable types (the same rule that shapes element bodies)."""

    def __init__(self, metamodel: Metamodel, actor: Actor) -> None:
        self.metamodel = metamodel
        self.actor = actor
        self.full = actor.can(EDIT_METAMODEL) or actor.can(ADMIN_ATTRIBUTES)

    def sees_type(self, type_id: int) -> bool:
        return self.full or self.actor.can_type(type_id, "read")

    def sees_attribute(self, attribute: AttributeDef) -> bool:
        return attribute.builtin or self.full or self.actor.can_read_group(attribute.group_id)

    def sees_relation_type(self, relation_type: RelationTypeDef) -> bool:
        return self.sees_type(relation_type.source_type_id) and self.sees_type(relation_type.target_type_id)

    def type_named(self, name: str) -> BlockTypeDef:
        block_type = self.metamodel.type_named(name)
        if block_type is None:
            raise UnknownType(f"unknown building block type '{name}'")
        if not self.sees_type(block_type.id):
            raise Forbidden(f"no read permission on type '{name}'")
        return block_type

    def relation_type_named(self, name: str) -> RelationTypeDef:
        relation_type = self.metamodel.relation_type_named(name)
        if relation_type is None:
            raise NotFound(f"unknown relation type '{name}'")
        if not self.sees_relation_type(relation_type):
            raise Forbidden(f"no read permission on a type of relation type '{name}'")
        return relation_type

    def whole(self) -> MetamodelOut:
        mm = self.metamodel
        return MetamodelOut(
            revision=mm.revision,
            types=[self.block_type(t) for t in mm.types if self.sees_type(t.id)],
            relation_types=[self.relation_type(r) for r in mm.relation_types if self.sees_relation_type(r)],
            attributes=[attribute_out(mm, a) for a in mm.attributes if self.sees_attribute(a)],
            attribute_groups=[
                AttributeGroupSummary(
                    id=g.id,
                    name=g.name,
                    description=g.description,
                    position=g.position,
                    attributes=[a.name for a in mm.attributes if a.group_id == g.id],
                    readable=self.actor.can_read_group(g.id),
                    writable=self.actor.can_write_group(g.id),
                )
                for g in mm.groups
                if self.full or self.actor.can_read_group(g.id)
            ],
        )

    def types(self) -> list[BlockTypeOut]:
        return [self.block_type(t) for t in self.metamodel.types if self.sees_type(t.id)]

    def relation_types(self) -> list[RelationTypeOut]:
        return [self.relation_type(r) for r in self.metamodel.relation_types if self.sees_relation_type(r)]

    def block_type(self, block_type: BlockTypeDef) -> BlockTypeOut:
        return BlockTypeOut(
            id=block_type.id,
            name=block_type.name,
            display_name=block_type.display_name,
            abbreviation=block_type.abbreviation,
            description=block_type.description,
            hierarchical=block_type.hierarchical,
            hidden=block_type.hidden,
            position=block_type.position,
            properties=self._properties(block_type),
            relation_ends=[
                self._end(end) for end in block_type.ends.values() if self.sees_type(end.other_type_id)
            ],
        )

    def relation_type(self, relation_type: RelationTypeDef) -> RelationTypeOut:
        return RelationTypeOut(
            id=relation_type.id,
            name=relation_type.name,
            description=relation_type.description,
            source=relation_type.source_type,
            source_end=relation_type.source_end,
            target=relation_type.target_type,
            target_end=relation_type.target_end,
            source_multiple=relation_type.source_multiple,
            target_multiple=relation_type.target_multiple,
            attributable=relation_type.attributable,
            attributes=[a.name for a in relation_type.attributes if self.sees_attribute(a)],
        )

    def _properties(self, block_type: BlockTypeDef) -> list[PropertyOut]:
        def key(
            name: str, value_type: Any, *, read_only: bool, description: str, **extra: Any
        ) -> PropertyOut:
            return PropertyOut(
                name=name,
                value_type=value_type,
                multiple=extra.pop("multiple", False),
                mandatory=extra.pop("mandatory", False),
                read_only=read_only,
                builtin=True,
                description=description,
                **extra,
            )

        result = [
            key("id", "number", read_only=True, description="assigned by the repository"),
            key("type", "text", read_only=True, description="the type's persistent name"),
            key("revision", "number", read_only=True, description="bumped by every change of the element"),
            key("name", "text", read_only=False, mandatory=True, description="unique per type"),
            key("description", "richtext", read_only=False, description=""),
        ]
        if block_type.hierarchical:
            result.append(key("parent", "reference", read_only=False, description="", target=block_type.name))
            result.append(
                key(
                    "children",
                    "reference",
                    read_only=True,
                    multiple=True,
                    description="ordered",
                    target=block_type.name,
                )
            )
        for attribute in block_type.builtins:
            result.append(self._attribute_property(attribute))
        result.extend(self._attribute_property(a) for a in block_type.attributes if self.sees_attribute(a))
        result.append(key("lastModificationTime", "dateTime", read_only=True, description="ISO-8601 UTC"))
        result.append(key("lastModificationUser", "text", read_only=True, description="login"))
        return result

    def _attribute_property(self, attribute: AttributeDef) -> PropertyOut:
        return PropertyOut(
            name=attribute.name,
            value_type=attribute.value_type,  # type: ignore[arg-type]
            multiple=attribute.multiple,
            mandatory=attribute.mandatory,
            group=None if attribute.builtin else attribute.group_name,
            read_only=not attribute.builtin and not self.actor.can_write_group(attribute.group_id),
            builtin=attribute.builtin,
            description=attribute.description,
            literals=literals_out(attribute),
            unit=attribute.unit,
            min=attribute.min_value,
            max=attribute.max_value,
        )

    def _end(self, end: RelationEnd) -> RelationEndOut:
        rt = end.relation_type
        return RelationEndOut(
            name=end.name,
            relation_type=rt.name,
            type=end.other_type,
            multiple=end.multiple,
            opposite=end.opposite_name,
            side="source" if end.holder_is_source else "target",
            attributable=rt.attributable,
            attributes=[a.name for a in rt.attributes if self.sees_attribute(a)],
        )


def literals_out(attribute: AttributeDef) -> list[LiteralOut]:
    return [
        LiteralOut(id=lit.id, name=lit.name, description=lit.description, color=lit.color)
        for lit in attribute.literals
    ]


def attribute_out(metamodel: Metamodel, attribute: AttributeDef) -> AttributeOut:
    return AttributeOut(
        id=attribute.id,
        name=attribute.name,
        description=attribute.description,
        value_type=attribute.value_type,  # type: ignore[arg-type]
        multiple=attribute.multiple,
        mandatory=attribute.mandatory,
        group=attribute.group_name,
        types=[t.name for t in metamodel.types if t.id in attribute.type_ids],
        relation_types=[r.name for r in metamodel.relation_types if r.id in attribute.relation_type_ids],
        literals=literals_out(attribute),
        unit=attribute.unit,
        min=attribute.min_value,
        max=attribute.max_value,
    )


# --- edits ----------------------------------------------------------------------------------------------


def _require_editor(actor: Actor) -> None:
    if not actor.can(EDIT_METAMODEL):
        raise Forbidden("editing the metamodel needs the EDIT_METAMODEL permission")


def _name_errors(pointer: str, name: str) -> list[ErrorItem]:
    problem = identifier_problem(name)
    return [ErrorItem(pointer, "invalid_name", problem)] if problem else []


def _type_name_taken(metamodel: Metamodel, name: str) -> str | None:
    for existing in metamodel.types:
        if name_key(existing.name) == name_key(name):
            return existing.name
    return None


def create_type(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, body: BlockTypeCreate
) -> str:
    """Create a building block type; returns its name."""
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    errors = _name_errors("/name", body.name)
    if errors:
        raise ValidationFailed(f"invalid type name '{body.name}'", errors=errors)
    taken = _type_name_taken(metamodel, body.name)
    if taken:
        raise NameConflict(f"a type named '{taken}' already exists")
    values = {
        "name": body.name,
        "display_name": body.display_name or body.name,
        "abbreviation": body.abbreviation,
        "description": body.description,
        "hierarchical": body.hierarchical,
        "hidden": body.hidden,
    }
    repository.insert_type(db, values)
    changes.metamodel(
        "created",
        f"type {body.name}",
        [{"property": _camel(k), "old": [], "new": [v]} for k, v in values.items() if v not in ("", None)],
    )
    return body.name


def update_type(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    name: str,
    body: BlockTypeUpdate,
    *,
    elements: StoredElements,
) -> None:
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    block_type = _existing_type(metamodel, name)
    if body.name is not None and body.name != block_type.name:
        raise ValidationFailed(
            "persistent names never change",
            errors=[ErrorItem("/name", "immutable", "the persistent name of a type cannot change")],
        )
    current = {
        "display_name": block_type.display_name,
        "abbreviation": block_type.abbreviation,
        "description": block_type.description,
        "hidden": block_type.hidden,
        "hierarchical": block_type.hierarchical,
    }
    sent = body.model_dump(include=set(current), exclude_unset=True)
    values = {k: v for k, v in sent.items() if v is not None and v != current[k]}
    if values.get("hierarchical") is False and elements.type_has_parents(db, block_type.id):
        raise Conflict(
            f"elements of '{name}' have parents; clear them before making the type flat", code="in_use"
        )
    if not values:
        return
    repository.update_type(db, block_type.id, values)
    changes.metamodel(
        "updated",
        f"type {name}",
        [{"property": _camel(k), "old": [current[k]], "new": [v]} for k, v in values.items()],
    )


def delete_type(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    name: str,
    *,
    elements: StoredElements,
) -> None:
    """Delete a type that has no elements, with its relation types (which then hold no relations)."""
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    block_type = _existing_type(metamodel, name)
    if elements.type_has_elements(db, block_type.id):
        raise Conflict(f"type '{name}' still has elements", code="in_use")
    for relation_type in metamodel.relation_types:
        if block_type.id in (relation_type.source_type_id, relation_type.target_type_id):
            changes.metamodel(
                "deleted", f"relationType {relation_type.name}", _relation_type_record(relation_type)
            )
    repository.delete_type(db, block_type.id)
    changes.metamodel(
        "deleted",
        f"type {name}",
        [
            {"property": "name", "old": [name], "new": []},
            {"property": "attributes", "old": [a.name for a in block_type.attributes], "new": []},
        ],
    )


def create_relation_type(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, body: RelationTypeCreate
) -> str:
    """Create a relation type between two existing types; returns its name."""
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    name = body.name or f"{body.source}_{body.target}"
    errors = _name_errors("/name", name)
    errors += _name_errors("/sourceEnd", body.source_end) + _name_errors("/targetEnd", body.target_end)
    source = metamodel.type_named(body.source)
    target = metamodel.type_named(body.target)
    if source is None:
        errors.append(ErrorItem("/source", "unknown_type", f"unknown building block type '{body.source}'"))
    if target is None:
        errors.append(ErrorItem("/target", "unknown_type", f"unknown building block type '{body.target}'"))
    if source is not None and source == target and name_key(body.source_end) == name_key(body.target_end):
        errors.append(
            ErrorItem("/targetEnd", "duplicate", "the two ends of a self relation need different names")
        )
    if errors:
        raise ValidationFailed("invalid relation type", errors=errors)
    assert source is not None and target is not None
    clashes: list[ErrorItem] = []
    for existing in metamodel.relation_types:
        if name_key(existing.name) == name_key(name):
            clashes.append(ErrorItem("/name", "name_conflict", f"relation type '{existing.name}' exists"))
    for pointer, holder, end in (
        ("/sourceEnd", source, body.source_end),
        ("/targetEnd", target, body.target_end),
    ):
        clash = clash_on_type(metamodel, holder.name, end)
        if clash:
            clashes.append(ErrorItem(pointer, "name_conflict", clash))
    if clashes:
        raise NameConflict("; ".join(c.message for c in clashes), errors=clashes)
    repository.insert_relation_type(
        db,
        {
            "name": name,
            "description": body.description,
            "source_type_id": source.id,
            "source_end": body.source_end,
            "target_type_id": target.id,
            "target_end": body.target_end,
            "source_multiple": body.source_multiple,
            "target_multiple": body.target_multiple,
            "attributable": body.attributable,
        },
    )
    changes.metamodel(
        "created",
        f"relationType {name}",
        [
            {"property": "source", "old": [], "new": [body.source]},
            {"property": "sourceEnd", "old": [], "new": [body.source_end]},
            {"property": "target", "old": [], "new": [body.target]},
            {"property": "targetEnd", "old": [], "new": [body.target_end]},
            {"property": "sourceMultiple", "old": [], "new": [body.source_multiple]},
            {"property": "targetMultiple", "old": [], "new": [body.target_multiple]},
            {"property": "attributable", "old": [], "new": [body.attributable]},
        ],
    )
    return name


def update_relation_type(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    name: str,
    body: RelationTypeUpdate,
    *,
    elements: StoredElements,
) -> None:
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    relation_type = _existing_relation_type(metamodel, name)
    fixed = {
        "name": relation_type.name,
        "source": relation_type.source_type,
        "source_end": relation_type.source_end,
        "target": relation_type.target_type,
        "target_end": relation_type.target_end,
    }
    errors = [
        ErrorItem("/" + _camel(key), "immutable", f"'{_camel(key)}' of a relation type cannot change")
        for key, value in fixed.items()
        if getattr(body, key) is not None and getattr(body, key) != value
    ]
    if errors:
        raise ValidationFailed("the names and types of a relation type never change", errors=errors)
    current = {
        "description": relation_type.description,
        "source_multiple": relation_type.source_multiple,
        "target_multiple": relation_type.target_multiple,
        "attributable": relation_type.attributable,
    }
    sent = body.model_dump(include=set(current), exclude_unset=True)
    values = {k: v for k, v in sent.items() if v is not None and v != current[k]}
    if values.get("source_multiple") is False and elements.end_holds_several(
        db, relation_type.id, holder_is_source=True
    ):
        raise Conflict(
            f"some {relation_type.source_type} holds several '{relation_type.source_end}'", code="in_use"
        )
    if values.get("target_multiple") is False and elements.end_holds_several(
        db, relation_type.id, holder_is_source=False
    ):
        raise Conflict(
            f"some {relation_type.target_type} holds several '{relation_type.target_end}'", code="in_use"
        )
    if values.get("attributable") is False and relation_type.attributes:
        raise Conflict(
            "attributes are activated for this relation type; deactivate them first",
            code="in_use",
            errors=[
                ErrorItem("/attributable", "in_use", ", ".join(a.name for a in relation_type.attributes))
            ],
        )
    if not values:
        return
    repository.update_relation_type(db, relation_type.id, values)
    changes.metamodel(
        "updated",
        f"relationType {name}",
        [{"property": _camel(k), "old": [current[k]], "new": [v]} for k, v in values.items()],
    )


def delete_relation_type(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    name: str,
    *,
    elements: StoredElements,
) -> None:
    """Delete a relation type and its relations; each element that loses relations gets an "updated"
    change in history and a new revision."""
    _require_editor(actor)
    metamodel = repository.lock_current_metamodel(db, metamodel)
    relation_type = _existing_relation_type(metamodel, name)
    elements.remove_relations_of_type(db, metamodel, changes, relation_type, login=actor.login)
    repository.delete_relation_type(db, relation_type.id)
    changes.metamodel("deleted", f"relationType {name}", _relation_type_record(relation_type))


def _relation_type_record(relation_type: RelationTypeDef) -> list[dict[str, Any]]:
    return [
        {"property": "source", "old": [relation_type.source_type], "new": []},
        {"property": "sourceEnd", "old": [relation_type.source_end], "new": []},
        {"property": "target", "old": [relation_type.target_type], "new": []},
        {"property": "targetEnd", "old": [relation_type.target_end], "new": []},
    ]


def _existing_type(metamodel: Metamodel, name: str) -> BlockTypeDef:
    block_type = metamodel.type_named(name)
    if block_type is None:
        raise UnknownType(f"unknown building block type '{name}'")
    return block_type


def _existing_relation_type(metamodel: Metamodel, name: str) -> RelationTypeDef:
    relation_type = metamodel.relation_type_named(name)
    if relation_type is None:
        raise NotFound(f"unknown relation type '{name}'")
    return relation_type


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)
