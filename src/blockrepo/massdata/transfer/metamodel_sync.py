"""Brings the repository's metamodel up to what an import document needs, through the metamodel and
attribute administration services (their rules, permissions and history apply): missing attribute groups,
types, relation types and attributes are created, missing activations and literals added; what exists
with another shape (a value type, a relation type's ends) is an error, never silently changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import attributes as attribute_admin
from blockrepo.administration import groups as group_admin
from blockrepo.administration.schemas import AttributeCreate, AttributeGroupCreate, AttributeUpdate
from blockrepo.errors import ErrorItem, ValidationFailed
from blockrepo.massdata.transfer.plan import ATTRIBUTE_SCALARS
from blockrepo.metamodel import service as metamodel_service
from blockrepo.metamodel.repository import load_metamodel
from blockrepo.metamodel.schemas import BlockTypeCreate, RelationTypeCreate
from blockrepo.metamodel.snapshot import AttributeDef, Metamodel
from blockrepo.revisions.recorder import ChangeLog

RELATION_TYPE_KEYS = ("source", "sourceEnd", "target", "targetEnd", "sourceMultiple", "targetMultiple")


def _model(model: type[BaseModel], data: Any, pointer: str, errors: list[ErrorItem]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for problem in exc.errors():
            where = "/".join(str(part) for part in problem.get("loc", ()))
            errors.append(ErrorItem(f"{pointer}/{where}".rstrip("/"), "invalid_metamodel", problem["msg"]))
        return None


def _items(section: dict[str, Any], key: str, errors: list[ErrorItem]) -> list[dict[str, Any]]:
    items = section.get(key, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        errors.append(
            ErrorItem(f"/metamodel/{key}", "invalid_metamodel", f"{key} must be an array of objects")
        )
        return []
    return items


def _literal_names(attribute: AttributeDef) -> list[str]:
    return [lit.name for lit in attribute.literals]


class _Sync:
    def __init__(self, db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog) -> None:
        self.db = db
        self.actor = actor
        self.metamodel = metamodel
        self.changes = changes
        self.errors: list[ErrorItem] = []

    def run(self, service: Callable[..., Any], **arguments: Any) -> None:
        """Call a service with the current metamodel, then re-read it (the change is not committed, so
        the cached snapshots cannot know it)."""
        service(self.db, self.actor, self.metamodel, self.changes, **arguments)
        self.metamodel = load_metamodel(self.db, self.metamodel.revision)

    def groups(self, items: list[dict[str, Any]]) -> None:
        known = {g.name for g in self.metamodel.groups}
        for index, item in enumerate(items):
            if item.get("name") in known:
                continue
            body = _model(
                AttributeGroupCreate,
                {"name": item.get("name"), "description": item.get("description") or ""},
                f"/metamodel/attributeGroups/{index}",
                self.errors,
            )
            if body is not None:
                self.run(group_admin.create_group, body=body)

    def types(self, items: list[dict[str, Any]]) -> None:
        for index, item in enumerate(items):
            pointer = f"/metamodel/types/{index}"
            existing = self.metamodel.type_named(str(item.get("name")))
            if existing is None:
                fields = ("name", "displayName", "abbreviation", "description", "hierarchical", "hidden")
                body = _model(
                    BlockTypeCreate, {k: item[k] for k in fields if k in item}, pointer, self.errors
                )
                if body is None:
                    continue
                self.run(metamodel_service.create_type, body=body)
                existing = self.metamodel.type_named(body.name)
                assert existing is not None
            for builtin in item.get("builtins", []) or []:
                if not isinstance(builtin, dict):
                    continue
                have = next((p for p in existing.builtins if p.name == builtin.get("name")), None)
                if have is None or have.value_type != builtin.get("valueType"):
                    self.errors.append(
                        ErrorItem(
                            f"{pointer}/builtins",
                            "metamodel_mismatch",
                            f"{existing.name} has no built-in {builtin.get('name')!r} of type "
                            f"{builtin.get('valueType')!r} (built-ins cannot be created by an import)",
                        )
                    )
                    continue
                missing = [
                    lit.get("name")
                    for lit in builtin.get("literals", [])
                    if lit.get("name") not in _literal_names(have)
                ]
                if missing:
                    self.errors.append(
                        ErrorItem(
                            f"{pointer}/builtins",
                            "metamodel_mismatch",
                            f"the built-in {existing.name}.{have.name} lacks the literals "
                            + ", ".join(map(str, missing)),
                        )
                    )

    def relation_types(self, items: list[dict[str, Any]]) -> None:
        for index, item in enumerate(items):
            pointer = f"/metamodel/relationTypes/{index}"
            existing = self.metamodel.relation_type_named(str(item.get("name")))
            if existing is not None:
                have = {
                    "source": existing.source_type,
                    "sourceEnd": existing.source_end,
                    "target": existing.target_type,
                    "targetEnd": existing.target_end,
                    "sourceMultiple": existing.source_multiple,
                    "targetMultiple": existing.target_multiple,
                }
                differing = [k for k in RELATION_TYPE_KEYS if k in item and item[k] != have[k]]
                if differing:
                    self.errors.append(
                        ErrorItem(
                            pointer,
                            "metamodel_mismatch",
                            f"relation type {existing.name} differs in {', '.join(differing)}",
                        )
                    )
                continue
            fields = ("name", "description", *RELATION_TYPE_KEYS, "attributable")
            body = _model(RelationTypeCreate, {k: item[k] for k in fields if k in item}, pointer, self.errors)
            if body is not None:
                self.run(metamodel_service.create_relation_type, body=body)

    def attributes(self, items: list[dict[str, Any]]) -> None:
        for index, item in enumerate(items):
            pointer = f"/metamodel/attributes/{index}"
            existing = self.metamodel.attribute_named(str(item.get("name")))
            if existing is None:
                data = {k: item[k] for k in ATTRIBUTE_SCALARS if item.get(k) is not None}
                data["types"] = item.get("types", [])
                data["relationTypes"] = item.get("relationTypes", [])
                data["literals"] = [
                    {k: v for k, v in lit.items() if k in ("name", "description", "color") and v is not None}
                    for lit in item.get("literals", [])
                    if isinstance(lit, dict)
                ]
                body = _model(AttributeCreate, data, pointer, self.errors)
                if body is not None:
                    self.run(attribute_admin.create_attribute, body=body)
                continue
            if item.get("valueType") != existing.value_type:
                self.errors.append(
                    ErrorItem(
                        f"{pointer}/valueType",
                        "metamodel_mismatch",
                        f"attribute {existing.name} is a {existing.value_type}, "
                        f"the file has {item.get('valueType')}",
                    )
                )
                continue
            self._extend(existing, item, pointer)

    def _extend(self, existing: AttributeDef, item: dict[str, Any], pointer: str) -> None:
        """Add the activations and literals the file has and the attribute lacks."""
        metamodel = self.metamodel
        types = [metamodel.type_by_id(t).name for t in sorted(existing.type_ids)]
        relation_types = [metamodel.relation_type_by_id(r).name for r in sorted(existing.relation_type_ids)]
        literals = _literal_names(existing)
        new_types = [t for t in item.get("types", []) if t not in types]
        new_relation_types = [r for r in item.get("relationTypes", []) if r not in relation_types]
        new_literals = [
            lit
            for lit in item.get("literals", [])
            if isinstance(lit, dict) and lit.get("name") not in literals
        ]
        if not (new_types or new_relation_types or new_literals):
            return
        data: dict[str, Any] = {}
        if new_types:
            data["types"] = types + new_types
        if new_relation_types:
            data["relationTypes"] = relation_types + new_relation_types
        if new_literals:
            data["literals"] = [
                {
                    "id": lit.id,
                    "name": lit.name,
                    "description": lit.description,
                    **({"color": lit.color} if lit.color else {}),
                }
                for lit in existing.literals
            ] + [
                {k: v for k, v in lit.items() if k in ("name", "description", "color") and v is not None}
                for lit in new_literals
            ]
        body = _model(AttributeUpdate, data, pointer, self.errors)
        if body is not None:
            self.run(attribute_admin.update_attribute, attribute_id=existing.id, body=body)


def apply_metamodel(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, section: dict[str, Any] | None
) -> Metamodel:
    """The metamodel after creating what `section` (an export's metamodel) has and the repository lacks.
    Service errors (403 without EDIT_METAMODEL / ADMIN_ATTRIBUTES, 409 on clashes) pass through; shape
    differences are collected into one 400."""
    if not section:
        return metamodel
    sync = _Sync(db, actor, metamodel, changes)
    sync.groups(_items(section, "attributeGroups", sync.errors))
    sync.types(_items(section, "types", sync.errors))
    sync.relation_types(_items(section, "relationTypes", sync.errors))
    sync.attributes(_items(section, "attributes", sync.errors))
    if sync.errors:
        raise ValidationFailed(
            f"the file's metamodel does not fit this repository: {sync.errors[0].message}", errors=sync.errors
        )
    return sync.metamodel
