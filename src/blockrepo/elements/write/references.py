"""The database checks of many drafts at once: every reference and login resolved in a fixed number of
queries, and single-valued relation partners that are already taken."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from blockrepo.elements import repository
from blockrepo.elements.write.drafts import ElementDraft, Reference
from blockrepo.metamodel.snapshot import Metamodel, RelationEnd


def resolve_references(
    db: Session,
    metamodel: Metamodel,
    drafts: Sequence[ElementDraft],
    known: Mapping[tuple[int, str], int] | None = None,
) -> None:
    """Resolve every reference and login of `drafts` with one query each for ids, names and logins;
    unresolvable ones become errors of their draft. Names in `known` ((type id, name) -> id: elements
    the request wrote itself) are not looked up."""
    ids: set[int] = set()
    names: dict[int, set[str]] = {}
    references = [draft.references() for draft in drafts]
    known = known or {}
    for refs in references:
        for ref in refs:
            if ref.id is not None:
                ids.add(ref.id)
            elif ref.name is not None and (ref.type_id, ref.name) not in known:
                names.setdefault(ref.type_id, set()).add(ref.name)
    by_id = repository.find_by_ids(db, ids)
    by_name = repository.find_by_names(db, names)
    for draft, refs in zip(drafts, references, strict=True):
        for ref in refs:
            if ref.id is None:
                _resolve_name(metamodel, draft, ref, by_name, known)
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
    metamodel: Metamodel,
    draft: ElementDraft,
    ref: Reference,
    by_name: dict[tuple[int, str], int],
    known: Mapping[tuple[int, str], int],
) -> None:
    key = (ref.type_id, ref.name or "")
    element_id = by_name.get(key)
    if element_id is None:
        element_id = known.get(key)
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
