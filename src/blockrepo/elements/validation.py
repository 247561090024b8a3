"""Turns an element body into a normalized draft with every problem listed, separate from persistence.

Three steps, each usable for one element or a whole bulk batch:
1. `body_parser(...).parse`: pure; checks keys, value types, literals, cardinality of the element's own ends,
   permissions per property; collects references (relation targets, parent, user logins).
2. `resolve_references`: looks up every reference of many drafts in a fixed number of queries.
3. `check_partners` (and, in the service, name, hierarchy and lock checks): rules that need the database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import repository
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
from blockrepo.errors import ErrorItem
from blockrepo.metamodel.snapshot import READ_ONLY_KEYS, AttributeDef, BlockTypeDef, Metamodel, RelationEnd
from blockrepo.name_normalization import InvalidName, normalized_name

LARGEST_ID = 2**31 - 1
_REFERENCE_KEYS = frozenset({"id", "name"})
_END_ENTRY_KEYS = frozenset({"id", "name", "attributes"})


def pointer(*parts: str | int) -> str:
    """A JSON pointer (RFC 6901) from its unescaped parts."""
    out = ""
    for part in parts:
        text = str(part)
        # Escaping is rare (names hold no "/"), and a bulk write builds several pointers per element.
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        out += "/" + text
    return out


@dataclass(slots=True)
class Reference:
    """An element named by id or by name in an expected type, resolved by `resolve_references`."""

    pointer: str
    type_id: int
    id: int | None = None
    name: str | None = None
    resolved_id: int | None = None
    resolved_name: str | None = None


@dataclass(slots=True)
class EndEntry:
    """One value of a relation end: the other element and, if given, new relation attribute values
    (each attribute present replaces its list; None: keep what an existing relation has)."""

    reference: Reference
    attributes: dict[int, list[TypedValue]] | None = None


@dataclass(slots=True)
class ElementDraft:
    """A write of one element, normalized: only keys present in the body are set."""

    type_def: BlockTypeDef
    element_id: int | None  # None: the element is created
    name: str | None = None
    description: str | None = None
    parent_given: bool = False
    parent: Reference | None = None
    values: dict[int, list[TypedValue]] = field(default_factory=dict)
    ends: dict[str, list[EndEntry]] = field(default_factory=dict)
    errors: list[ErrorItem] = field(default_factory=list)
    forbidden: list[ErrorItem] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)  # (pointer, login) to verify

    @property
    def creating(self) -> bool:
        return self.element_id is None

    def references(self) -> list[Reference]:
        refs = [entry.reference for entries in self.ends.values() for entry in entries]
        if self.parent is not None:
            refs.insert(0, self.parent)
        return refs

    def error(self, where: str, code: str, message: str) -> None:
        self.errors.append(ErrorItem(where, code, message))


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


_PARSERS: dict[tuple[int, int], tuple[BlockTypeDef, Actor, BodyParser]] = {}
_MAX_PARSERS = 256


def body_parser(actor: Actor, type_def: BlockTypeDef) -> BodyParser:
    """The `BodyParser` of the type and the actor, made once while both stay the same objects: the
    compiled metamodel and the actor are cached per revision, so a single write does not build its
    handlers again, and a metamodel or access change brings new objects and a new parser."""
    key = (id(type_def), id(actor))
    entry = _PARSERS.get(key)
    # An entry holds its type and actor, so no other object can have their ids while it exists.
    if entry is not None and entry[0] is type_def and entry[1] is actor:
        return entry[2]
    parser = BodyParser(actor, type_def)
    if len(_PARSERS) >= _MAX_PARSERS:
        _PARSERS.clear()
    _PARSERS[key] = (type_def, actor, parser)
    return parser


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


def resolve_references(db: Session, metamodel: Metamodel, drafts: Sequence[ElementDraft]) -> None:
    """Resolve every reference and login of `drafts` with one query each for ids, names and logins;
    unresolvable ones become errors of their draft."""
    ids: set[int] = set()
    names: dict[int, set[str]] = {}
    references = [draft.references() for draft in drafts]
    for refs in references:
        for ref in refs:
            if ref.id is not None:
                ids.add(ref.id)
            elif ref.name is not None:
                names.setdefault(ref.type_id, set()).add(ref.name)
    by_id = repository.find_by_ids(db, ids)
    by_name = repository.find_by_names(db, names)
    for draft, refs in zip(drafts, references, strict=True):
        for ref in refs:
            if ref.id is None:
                _resolve_name(metamodel, draft, ref, by_name)
                continue
            found = by_id.get(ref.id)
            if found is not None and found[0] == ref.type_id:
                ref.resolved_id, ref.resolved_name = ref.id, found[1]
            elif found is None:
                draft.error(ref.pointer, "unknown_target", f"there is no element {ref.id}")
            else:
                actual, expected = metamodel.type_by_id(found[0]).name, metamodel.type_by_id(ref.type_id).name
                draft.error(ref.pointer, "wrong_type", f"element {ref.id} is a {actual}, not a {expected}")
    named = [draft for draft in drafts if draft.logins]
    logins = repository.existing_logins(db, (login for draft in named for _, login in draft.logins))
    for draft in named:
        for where, login in draft.logins:
            if login not in logins:
                draft.error(where, "unknown_user", f"there is no user {login!r}")
    for draft in drafts:
        _check_resolved_ends(draft)


def _resolve_name(
    metamodel: Metamodel, draft: ElementDraft, ref: Reference, by_name: dict[tuple[int, str], int]
) -> None:
    element_id = by_name.get((ref.type_id, ref.name or ""))
    if element_id is None:
        expected = metamodel.type_by_id(ref.type_id).name
        draft.error(ref.pointer, "unknown_target", f"there is no {expected} named {ref.name!r}")
    else:
        ref.resolved_id, ref.resolved_name = element_id, ref.name


def _check_resolved_ends(draft: ElementDraft) -> None:
    creating = draft.element_id is None
    for end_name, entries in draft.ends.items():
        if creating and len(entries) < 2:
            continue  # one entry cannot repeat, and a created element cannot be listed already
        end = draft.type_def.ends[end_name]
        seen: set[int] = set()
        for entry in entries:
            other = entry.reference.resolved_id
            if other is None:
                continue
            if other in seen:
                draft.error(entry.reference.pointer, "duplicate", f"{end_name} lists element {other} twice")
            seen.add(other)
            if (
                other == draft.element_id
                and end.relation_type.source_type_id == end.relation_type.target_type_id
            ):
                draft.error(
                    entry.reference.pointer, "self_reference", "an element cannot be related to itself"
                )
    if draft.parent is not None and draft.parent.resolved_id is not None:  # noqa: SIM102
        if draft.parent.resolved_id == draft.element_id:
            draft.error(draft.parent.pointer, "cycle", "an element cannot be its own parent")


def check_partners(db: Session, drafts: Sequence[ElementDraft]) -> None:
    """Relations whose opposite end holds one value: a new partner must not already have another one.

    Example: listing flow F in an information system's `outgoingFlows` while F's `sourceSystem` is another
    system is rejected (the client must clear F's `sourceSystem` first) rather than silently moving F."""
    checks: list[tuple[ElementDraft, RelationEnd, repository.PartnerCheck]] = []
    single_ends: dict[int, frozenset[str]] = {}  # type id -> its ends whose opposite holds one value
    for draft in drafts:
        type_def = draft.type_def
        singles = single_ends.get(type_def.id)
        if singles is None:
            singles = single_ends[type_def.id] = frozenset(
                name
                for name, end in type_def.ends.items()
                if not (
                    end.relation_type.target_multiple
                    if end.holder_is_source
                    else end.relation_type.source_multiple
                )
            )
        if singles.isdisjoint(draft.ends):
            continue
        for end_name, entries in draft.ends.items():
            if end_name not in singles:
                continue
            end = type_def.ends[end_name]
            others = tuple(e.reference.resolved_id for e in entries if e.reference.resolved_id is not None)
            checks.append(
                (
                    draft,
                    end,
                    repository.PartnerCheck(
                        end.relation_type.id, end.holder_is_source, draft.element_id, others
                    ),
                )
            )
    if not checks:
        return
    taken = repository.taken_partners(db, [check for _, _, check in checks])
    if not taken:
        return
    for draft, end, _ in checks:
        for entry in draft.ends[end.name]:
            other = entry.reference.resolved_id
            partner = (
                taken.get((end.relation_type.id, end.holder_is_source, other)) if other is not None else None
            )
            if partner is not None:
                draft.error(
                    entry.reference.pointer,
                    "cardinality",
                    f"{end.other_type} {entry.reference.resolved_name!r} already has {end.opposite_name} "
                    f"{partner}; it holds one value, so clear it there first",
                )
