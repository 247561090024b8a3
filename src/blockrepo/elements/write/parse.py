"""An element body checked and turned into a draft (`BodyParser`), without touching the database: keys,
value types, literals, the cardinality of the element's own ends, permissions per property; references
(relation ends, parent, user logins) are collected for `write.references` to resolve."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from blockrepo.access.actor import Actor
from blockrepo.elements.values import (
    NAME_MAX_LENGTH,
    RICHTEXT_MAX_LENGTH,
    TypedValue,
    ValueProblem,
    check_name,
    check_text,
    json_type,
    value_decoder,
)
from blockrepo.elements.write.drafts import LARGEST_ID, ElementDraft, EndEntry, Reference, pointer
from blockrepo.errors import ErrorItem
from blockrepo.metamodel.snapshot import READ_ONLY_KEYS, AttributeDef, BlockTypeDef, RelationEnd
from blockrepo.name_normalization import InvalidName, normalized_name

_REFERENCE_KEYS = frozenset({"id", "name"})
_END_ENTRY_KEYS = frozenset({"id", "name", "attributes"})


Handler = Callable[["ElementDraft", Any], None]


class BodyParser:
    """Parses the bodies of one type written by one actor: what a key means (a core key, a
    property, a relation end, nothing), whether the actor may write it and how its values decode is
    worked out once per key, the first time a body holds it, rather than for every body of a bulk write
    or an import. Each handler takes the usual shape of its key (one value, references by id) by a short
    path and anything else by the general one, which finds every problem; both give the same draft.
    Kept across requests (`body_parser`), so it holds only what the metamodel bounds: no handler of an
    unknown key, no state of a request."""

    __slots__ = ("_actor", "_handlers", "_mandatory", "_type_def")

    def __init__(self, actor: Actor, type_def: BlockTypeDef) -> None:
        self._actor = actor
        self._type_def = type_def
        self._handlers: dict[str, Handler] = {}
        self._mandatory = _demanded(actor, type_def)

    def parse(self, body: dict[str, Any], *, element_id: int | None) -> ElementDraft:
        """Check a body against the metamodel and the actor's rights without touching the database."""
        draft = ElementDraft(self._type_def, element_id)
        handlers = self._handlers
        for key, raw in body.items():
            handler = handlers.get(key)
            if handler is None:
                handler = self._handler(key)
            handler(draft, raw)
        if element_id is None and "name" not in body:
            draft.error("/name", "mandatory", "name is mandatory")
        if self._mandatory:
            _check_mandatory(draft, self._mandatory, body)
        return draft

    def _handler(self, key: str) -> Handler:
        handler = self._known_key(key)
        if handler is None:
            message = f"{self._type_def.name} has no property {key!r}"
            return _arrays_only(key, partial(_error, ErrorItem(pointer(key), "unknown_property", message)))
        self._handlers[key] = handler
        return handler

    def _known_key(self, key: str) -> Handler | None:
        if key == "id":
            return _check_id
        if key in READ_ONLY_KEYS:
            return _ignore
        type_def, actor = self._type_def, self._actor
        if key == "name":
            return _name_handler
        if key == "description":
            return _arrays_only(key, _parse_description)
        if key == "parent" and type_def.hierarchical:
            return _arrays_only(key, _parse_parent)
        if (prop := type_def.property_named(key)) is not None:
            if prop.builtin or actor.can_write_group(prop.group_id):
                return _values_handler(prop)
            if not actor.can_read_group(prop.group_id):
                # A property the actor may not read is answered as if it did not exist: a 403 would
                # tell that it does (API.md 6).
                return None
            problem = ErrorItem(pointer(key), "forbidden", f"you may not write {key}")
            return _arrays_only(key, partial(_forbid, problem))
        if (end := type_def.ends.get(key)) is not None and actor.can_type(end.other_type_id, "read"):
            # An end to a type the actor may not read is left out of what they read: unknown, too.
            return _end_handler(actor, end)
        return None


def _ignore(draft: ElementDraft, raw: Any) -> None:
    return None


def _forbid(problem: ErrorItem, draft: ElementDraft, raw: Any) -> None:
    draft.forbidden.append(problem)


def _error(problem: ErrorItem, draft: ElementDraft, raw: Any) -> None:
    draft.errors.append(problem)


def _not_an_array(draft: ElementDraft, key: str, raw: Any) -> None:
    draft.error(pointer(key), "not_an_array", f"{key} takes an array of values, got {json_type(raw)}")


def _arrays_only(key: str, handle: Callable[[ElementDraft, list[Any]], None]) -> Handler:
    """`handle` for a key whose value must be an array (every key but id and the read-only ones)."""

    def handler(draft: ElementDraft, raw: Any) -> None:
        if isinstance(raw, list):
            handle(draft, raw)
        else:
            _not_an_array(draft, key, raw)

    return handler


def _name_handler(draft: ElementDraft, raw: Any) -> None:
    # The usual name (one string within the limit that normalises) is taken as `check_name` would take
    # it; anything else goes the general way, which reports the problem.
    if raw.__class__ is list and len(raw) == 1:
        name = raw[0]
        if name.__class__ is str and len(name) <= NAME_MAX_LENGTH:
            try:
                draft.name = normalized_name(name, NAME_MAX_LENGTH)
                return
            except InvalidName:
                pass
    if isinstance(raw, list):
        _parse_name(draft, raw)
    else:
        _not_an_array(draft, "name", raw)


def _values_handler(prop: AttributeDef) -> Handler:
    """The values of a property the actor may write."""
    decode = value_decoder(prop)
    prop_id = prop.id
    first = pointer(prop.name, 0)
    logins = prop.value_type == "responsibility"

    def handler(draft: ElementDraft, raw: Any) -> None:
        if raw.__class__ is list and len(raw) == 1 and not logins:
            # One value: nothing to compare it with, and its only pointer is made once.
            try:
                value = decode(raw[0])
            except ValueProblem as problem:
                draft.errors.append(ErrorItem(first, problem.code, problem.message))
                return
            draft.values[prop_id] = [value]
        elif not isinstance(raw, list):
            _not_an_array(draft, prop.name, raw)
        elif prop.multiple or not _too_many(draft, prop.name, raw):
            values = _decode_all(draft, prop, decode, raw, (prop.name,))
            if values is not None:
                draft.values[prop_id] = values

    return handler


def _end_handler(actor: Actor, end: RelationEnd) -> Handler:
    """The entries of a relation end whose other type the actor may read."""
    other_type_id = end.other_type_id
    end_pointer = pointer(end.name)  # escaped once: a bulk write parses thousands of entries
    name = end.name

    # The entries' pointers by index, made once for every body; replaced whole when a longer list comes
    # (never changed in place: another thread may be reading the one it took).
    known: list[tuple[str, ...]] = [()]

    def handler(draft: ElementDraft, raw: Any) -> None:
        if not isinstance(raw, list):
            _not_an_array(draft, name, raw)
            return
        if not end.multiple and _too_many(draft, name, raw):
            return
        pointers = known[0]
        if len(pointers) < len(raw):
            pointers = known[0] = tuple(f"{end_pointer}/{index}" for index in range(len(raw)))
        entries: list[EndEntry] = []
        for index, item in enumerate(raw):
            # The usual entries, {"id": n} with n in range and {"name": "…"} (an import's), as
            # `_parse_reference` reads them.
            if item.__class__ is dict and len(item) == 1:
                target = item.get("id")
                if target.__class__ is int and 1 <= target <= LARGEST_ID:
                    entries.append(EndEntry(Reference(pointers[index], other_type_id, target)))
                    continue
                target = item.get("name")
                if target.__class__ is str and len(target) <= NAME_MAX_LENGTH:
                    try:
                        target = normalized_name(target, NAME_MAX_LENGTH)
                    except InvalidName:
                        pass
                    else:
                        entries.append(EndEntry(Reference(pointers[index], other_type_id, name=target)))
                        continue
            entry = _parse_entry(draft, actor, end, item, index, pointers[index])
            if entry is not None:
                entries.append(entry)
        draft.ends[name] = entries

    return handler


def _check_id(draft: ElementDraft, raw: Any) -> None:
    if draft.element_id is None:
        return  # read-only on create: ignored
    value = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
    if isinstance(value, bool) or value != draft.element_id:
        draft.error("/id", "id_mismatch", f"id must be [{draft.element_id}] (the id in the path) or left out")


def _too_many(draft: ElementDraft, key: str, raw: list[Any]) -> bool:
    if len(raw) > 1:
        draft.error(pointer(key, 1), "too_many_values", f"{key} holds at most one value, got {len(raw)}")
        return True
    return False


def _parse_name(draft: ElementDraft, raw: list[Any]) -> None:
    if not raw:
        draft.error("/name", "mandatory", "name is mandatory")
        return
    if _too_many(draft, "name", raw):
        return
    try:
        draft.name = check_name(raw[0])
    except ValueProblem as problem:
        draft.error("/name/0", problem.code, problem.message)


def _parse_description(draft: ElementDraft, raw: list[Any]) -> None:
    if _too_many(draft, "description", raw):
        return
    try:
        draft.description = check_text(raw[0], RICHTEXT_MAX_LENGTH) if raw else ""
    except ValueProblem as problem:
        draft.error("/description/0", problem.code, problem.message)


def _parse_parent(draft: ElementDraft, raw: list[Any]) -> None:
    if _too_many(draft, "parent", raw):
        return
    draft.parent_given = True
    if raw:
        draft.parent = _parse_reference(draft, raw[0], "/parent/0", draft.type_def.id, allow_attributes=False)


def _decode_all(
    draft: ElementDraft,
    prop: AttributeDef,
    decode: Callable[[Any], TypedValue],
    raw: list[Any],
    path: tuple[str | int, ...],
) -> list[TypedValue] | None:
    values: list[TypedValue] = []
    # A set, not `in values`: a 10 MiB body must not cost quadratic time. A single value cannot repeat:
    # spare its hashing.
    seen: set[TypedValue] | None = set() if len(raw) > 1 else None
    ok = True
    for index, item in enumerate(raw):
        try:
            value = decode(item)
        except ValueProblem as problem:
            draft.error(pointer(*path, index), problem.code, problem.message)
            ok = False
            continue
        if seen is not None:
            if value in seen:
                draft.error(pointer(*path, index), "duplicate", f"{prop.name} lists this value twice")
                ok = False
                continue
            seen.add(value)
        if prop.value_type == "responsibility" and value.text is not None:
            draft.logins.append((pointer(*path, index), value.text))
        values.append(value)
    return values if ok else None


def _parse_entry(
    draft: ElementDraft, actor: Actor, end: RelationEnd, item: Any, index: int, item_pointer: str
) -> EndEntry | None:
    """One entry of a relation end: a reference and, if given, its relation attributes."""
    reference = _parse_reference(draft, item, item_pointer, end.other_type_id, allow_attributes=True)
    if reference is None:
        return None
    entry = EndEntry(reference)
    if isinstance(item, dict) and "attributes" in item:
        if not (end.relation_type.attributable or end.relation_type.attributes):
            draft.error(
                item_pointer + "/attributes",
                "not_attributable",
                f"relations of {end.relation_type.name} carry no attributes",
            )
            return None
        entry.attributes = _parse_relation_attributes(
            draft, actor, end, item["attributes"], (end.name, index, "attributes")
        )
    return entry


def _parse_relation_attributes(
    draft: ElementDraft, actor: Actor, end: RelationEnd, raw: Any, path: tuple[str | int, ...]
) -> dict[int, list[TypedValue]]:
    result: dict[int, list[TypedValue]] = {}
    if not isinstance(raw, dict):
        draft.error(pointer(*path), "wrong_type", f"attributes must be an object, got {json_type(raw)}")
        return result
    by_name = {a.name: a for a in end.relation_type.attributes}
    for name, values in raw.items():
        where = pointer(*path, name)
        attribute = by_name.get(name)
        if attribute is None or not actor.can_read_group(attribute.group_id):
            # One the actor may not read is answered as if it did not exist.
            draft.error(
                where, "unknown_property", f"relations of {end.relation_type.name} have no attribute {name!r}"
            )
            continue
        if not actor.can_write_group(attribute.group_id):
            draft.forbidden.append(ErrorItem(where, "forbidden", f"you may not write {name}"))
            continue
        if not isinstance(values, list):
            draft.error(where, "not_an_array", f"{name} takes an array of values, got {json_type(values)}")
            continue
        if not attribute.multiple and len(values) > 1:
            draft.error(pointer(*path, name, 1), "too_many_values", f"{name} holds at most one value")
            continue
        decoded = _decode_all(draft, attribute, value_decoder(attribute), values, (*path, name))
        if decoded is not None:
            result[attribute.id] = decoded
    return result


def _parse_reference(
    draft: ElementDraft, raw: Any, where: str, type_id: int, *, allow_attributes: bool
) -> Reference | None:
    """An id, `{"id": n}` or `{"name": "…"}`; with both id and name (as GET returns them) the id counts."""
    if isinstance(raw, dict):
        allowed = _END_ENTRY_KEYS if allow_attributes else _REFERENCE_KEYS
        if not raw.keys() <= allowed:
            unknown = sorted(set(raw) - allowed)
            draft.error(where, "wrong_type", f"unexpected key(s) {', '.join(unknown)} in a reference")
            return None
        if "id" in raw:
            return _id_reference(draft, raw["id"], where, type_id)
        if "name" in raw:
            try:
                name = check_name(raw["name"])
            except ValueProblem as problem:
                draft.error(where + "/name", problem.code, problem.message)
                return None
            return Reference(where, type_id, name=name)
    elif not isinstance(raw, bool) and isinstance(raw, int):
        return _id_reference(draft, raw, where, type_id)
    draft.error(where, "wrong_type", f'expected an id, {{"id": n}} or {{"name": "…"}}, got {json_type(raw)}')
    return None


def _id_reference(draft: ElementDraft, raw: Any, where: str, type_id: int) -> Reference | None:
    if isinstance(raw, bool) or not isinstance(raw, int):
        draft.error(where, "wrong_type", f"an id is a positive integer, got {json_type(raw)}")
        return None
    if not 1 <= raw <= LARGEST_ID:
        draft.error(where, "unknown_target", f"there is no element {raw}")
        return None
    return Reference(where, type_id, id=raw)


def _demanded(actor: Actor, type_def: BlockTypeDef) -> tuple[AttributeDef, ...]:
    """The mandatory properties of the type that the actor is asked for. A property the actor may not
    write is not demanded of them (naming it would also reveal a group they may not read)."""
    return tuple(
        prop for prop in type_def.mandatory_properties if prop.builtin or actor.can_write_group(prop.group_id)
    )


def _check_mandatory(draft: ElementDraft, demanded: Sequence[AttributeDef], body: dict[str, Any]) -> None:
    """On create every mandatory property (of `demanded`) needs a value; on update those the body
    clears."""
    for prop in demanded:
        values = draft.values.get(prop.id)
        if (draft.creating and prop.name not in body) or (values is not None and not values):
            draft.error(pointer(prop.name), "mandatory", f"{prop.name} is mandatory")
