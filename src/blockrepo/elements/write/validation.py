"""Validation of a write's items: each body parsed, references resolved in one go (those to elements
that other items create set aside until they exist), then the rules across items."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from blockrepo.elements import repository
from blockrepo.elements.compiled import body_parser
from blockrepo.elements.write.drafts import Reference
from blockrepo.elements.write.items import NewKey, TypeItems, WriteItem, Writer, forbidden, invalid
from blockrepo.elements.write.references import check_partners, resolve_references
from blockrepo.errors import ErrorItem, NameConflict
from blockrepo.metamodel.snapshot import BlockTypeDef, RelationEnd

K = TypeVar("K", bound=Hashable)


def validate(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Parse and check every item that has not failed yet; an item with a problem is marked failed (403
    when it writes what the actor may not, 400 for an invalid body, 409 for a name taken). A reference by
    name may name an element that an earlier item creates."""
    validate_types(writer, [TypeItems(type_def, list(items))])


def validate_types(writer: Writer, groups: Sequence[TypeItems], *, forward: bool = False) -> None:
    """`validate` for the items of several types as one write, with the same number of statements as for
    one type. With `forward`, a reference by name may name an element that any item of the write creates,
    of any type, listed before or after it (an import's file); else only one an earlier item of the same
    type creates (a bulk write)."""
    for group in groups:
        _parse(writer, group.type_def, group.items)
    creators: dict[tuple[int, str], WriteItem] = {}
    if forward:
        for group in groups:
            for item in group.items:
                if item.draft is not None and item.draft.creating and item.draft.name is not None:
                    creators.setdefault((group.type_def.id, item.draft.name), item)
    for group in groups:
        _set_aside(group.type_def, group.items, creators, forward=forward)
    drafts = [item.draft for group in groups for item in group.items if item.draft is not None]
    resolve_references(writer.db, writer.metamodel, drafts, writer.known_names)
    check_partners(writer.db, drafts)
    for group in groups:
        for item in group.items:
            if item.aside_ends or item.aside_parent is not None:
                _restore(item)
    for group in groups:
        _check_across_items(writer, group.type_def, group.items)
    for group in groups:
        _decide(writer, group.type_def, group.items)


def _parse(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Parse every body into a draft (403 at once for what the actor may not write)."""
    parse = body_parser(writer.metamodel, writer.actor, type_def).parse
    for item in items:
        if item.error is not None or item.body is None:
            continue
        draft = parse(item.body, element_id=item.element_id)
        # The draft holds what the body says: let the body go, so that an import's bodies and drafts of
        # every record are not held at once.
        item.body = None
        if draft.forbidden:
            item.fail(forbidden(draft.forbidden))
            continue
        item.draft = draft


def _set_aside(
    type_def: BlockTypeDef,
    items: Sequence[WriteItem],
    creators: dict[tuple[int, str], WriteItem],
    *,
    forward: bool,
) -> None:
    """Set aside references to elements that items of this write create (they resolve once those
    exist), so that the rest resolve against the database in one go. Without `forward`, `creators` is
    filled here in item order, so only earlier items count."""

    def creator_of(reference: Reference) -> WriteItem | None:
        if reference.id is not None or reference.name is None:
            return None
        if not forward and reference.type_id != type_def.id:
            return None
        return creators.get((reference.type_id, reference.name))

    for item in items:
        draft = item.draft
        if item.error is not None or draft is None:
            continue
        for end_name, entries in draft.ends.items():
            for entry in entries:
                if entry.reference.id is None:
                    break
            else:
                continue  # every entry names an id: none is created by this write
            kept = []
            for entry in entries:
                creator = creator_of(entry.reference)
                if creator is None:
                    kept.append(entry)
                else:
                    item.pending.append((entry.reference, creator))
            if len(kept) != len(entries):
                item.aside_ends[end_name] = entries
                draft.ends[end_name] = kept
        if draft.parent is not None and (creator := creator_of(draft.parent)) is not None:
            item.pending.append((draft.parent, creator))
            item.aside_parent = draft.parent
            draft.parent = None
        if not forward and draft.creating and draft.name is not None:
            creators.setdefault((type_def.id, draft.name), item)


def _restore(item: WriteItem) -> None:
    """Put the set-aside references back in their places."""
    draft = item.draft
    if draft is None:
        return
    if item.aside_ends:
        draft.ends.update(item.aside_ends)
    if item.aside_parent is not None:
        draft.parent = item.aside_parent


_NO_PENDING: dict[int, NewKey] = {}  # only read


def _pending_keys(item: WriteItem) -> dict[int, NewKey]:
    return {id(reference): ("new", creator.index) for reference, creator in item.pending}


def _key_of(reference: Reference, pending: dict[int, NewKey]) -> int | NewKey | None:
    return pending.get(id(reference), reference.resolved_id)


def _holder_key(item: WriteItem) -> int | NewKey:
    return item.element_id if item.element_id is not None else ("new", item.index)


def _opposite_multiple(end: RelationEnd) -> bool:
    return end.relation_type.target_multiple if end.holder_is_source else end.relation_type.source_multiple


def _check_across_items(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Rules that span items: the same new element listed twice, one single-valued partner claimed by two
    holders, and moves that would close a cycle in the hierarchy."""
    claims: dict[tuple[int, bool, int | NewKey], int | NewKey] = {}
    new_parents: dict[NewKey, int | NewKey] = {}  # a created element -> its parent
    moves: dict[int, int | NewKey | None] = {}  # id of an updated element -> its new parent
    movers: list[WriteItem] = []
    for item in items:
        draft = item.draft
        if item.error is not None or draft is None:
            continue
        pending = _pending_keys(item) if item.pending else _NO_PENDING
        for end_name, entries in draft.ends.items():
            end = type_def.ends[end_name]
            if _opposite_multiple(end) and (not pending or len(entries) < 2):
                # Nothing to check: duplicates are looked for among pending references only, and one
                # entry cannot repeat (an import's systems list their components by name).
                continue
            seen: set[int | NewKey] = set()
            for entry in entries:
                key = _key_of(entry.reference, pending)
                if key is None:
                    continue
                if id(entry.reference) in pending and key in seen:
                    draft.error(
                        entry.reference.pointer,
                        "duplicate",
                        f"{end_name} lists {entry.reference.name!r} twice",
                    )
                seen.add(key)
                if _opposite_multiple(end):
                    continue
                claim = (end.relation_type.id, end.holder_is_source, key)
                holder = claims.setdefault(claim, _holder_key(item))
                if holder != _holder_key(item):
                    draft.error(
                        entry.reference.pointer,
                        "cardinality",
                        f"{end.other_type} {entry.reference.name or key!r} holds one {end.opposite_name}, "
                        "which an earlier element of this request already takes",
                    )
        parent = _key_of(draft.parent, pending) if draft.parent is not None else None
        if item.creating and parent is not None:
            new_parents[("new", item.index)] = parent
        elif not item.creating and draft.parent_given:
            assert item.element_id is not None
            moves[item.element_id] = parent
            movers.append(item)
    # A created element can close a cycle only when its parent is created by the write as well (an
    # import may list a parent after its child).
    checked = movers
    if new_parents:
        checked = movers + [
            item
            for item in items
            if item.creating and isinstance(new_parents.get(("new", item.index)), tuple)
        ]
    if not checked:
        return
    starts = [p for p in (*new_parents.values(), *moves.values()) if isinstance(p, int)]
    stored = repository.parent_chains(writer.db, starts)

    def parent_of(key: int | NewKey) -> int | NewKey | None:
        if isinstance(key, tuple):
            return new_parents.get(key)
        return moves[key] if key in moves else stored.get(key)

    looped = loops([_holder_key(item) for item in checked], parent_of)
    for item in checked:
        assert item.draft is not None
        key = _holder_key(item)
        if looped.get(key) == key:
            reference = item.aside_parent or item.draft.parent
            item.draft.error(
                reference.pointer if reference else "/parent",
                "cycle",
                "the parent is the element itself or one of its descendants",
            )


def loops(starts: Iterable[K], parent_of: Callable[[K], K | None]) -> dict[K, K]:
    """start -> the first element its chain of parents reaches a second time, for every start whose chain
    runs into a loop (an element is in a loop when the answer is itself). Chains known to end at a root
    are walked once, however many starts share them."""
    rooted: set[K] = set()
    found: dict[K, K] = {}
    for start in starts:
        path: list[K] = []
        on_path: set[K] = set()
        current: K | None = start
        while current is not None and current not in rooted and current not in on_path:
            on_path.add(current)
            path.append(current)
            current = parent_of(current)
        if current is not None and current in on_path:
            found[start] = current
        else:
            rooted.update(path)
    return found


def _decide(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """In item order: an item fails on its own problems, on a name another element has, or when an
    element it refers to was to be created by an item that failed."""
    names = {item.draft.name for item in items if item.draft is not None and item.draft.name is not None}
    owners = repository.ids_by_name(writer.db, type_def.id, names)
    claimed: dict[str, int] = {}
    for item in items:
        draft = item.draft
        if item.error is not None or draft is None:
            continue
        if draft.errors:
            item.fail(invalid(draft.errors))
            continue
        broken = (
            [(reference, creator) for reference, creator in item.pending if creator.failed]
            if item.pending
            else None
        )
        if broken:
            item.fail(
                invalid(
                    [
                        ErrorItem(
                            reference.pointer,
                            "failed_dependency",
                            f"{reference.name!r} was to be created by element {creator.index}, which failed",
                        )
                        for reference, creator in broken
                    ]
                )
            )
            continue
        if draft.name is None:
            continue
        owner = owners.get(draft.name)
        if owner is not None and owner != item.element_id:
            message = f"another {type_def.name} is named {draft.name!r} (id {owner})"
            conflict = NameConflict(message, extra={"conflictingId": owner})
            item.fail(conflict, [ErrorItem("/name/0", "name_conflict", message)])
        elif draft.name in claimed:
            message = f"element {claimed[draft.name]} of this request is named {draft.name!r} already"
            item.fail(NameConflict(message), [ErrorItem("/name/0", "name_conflict", message)])
        else:
            claimed[draft.name] = item.index
