"""Bulk writes of one type (`POST/DELETE /api/massdata/{type}`): the envelope, the targets and the
per-item results around the element write core (`elements.write`), which validates every item with the
element rules and writes them set-based.

1. targets: ids given, or names looked up (`match: "name"`); updated rows are locked;
2. the core validates all items at once (rules across items included);
3. atomic: any failure -> 400 with every item's problems (403 when an item writes what the caller may
   not), nothing written; perItem: the good ones go on;
4. the core writes them and records their history.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from blockrepo.elements import repository
from blockrepo.elements import service as element_service
from blockrepo.elements.values import NAME_MAX_LENGTH
from blockrepo.elements.write import persistence, validation
from blockrepo.elements.write.drafts import LARGEST_ID, pointer
from blockrepo.elements.write.items import WriteItem, Writer, forbidden, invalid
from blockrepo.errors import (
    BlockrepoError,
    ErrorItem,
    Forbidden,
    HasChildren,
    NotFound,
    PayloadTooLarge,
    ValidationFailed,
)
from blockrepo.json_integers import integral_number_as_int
from blockrepo.massdata.listing import require_massdata
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.name_normalization import InvalidName, normalized_name

MODES = ("atomic", "perItem")
MATCHES = ("id", "name")


@dataclass
class BulkRequest:
    elements: list[Any]
    mode: str = "atomic"
    dry_run: bool = False
    match: str = "id"


def parse_request(body: dict[str, Any], max_elements: int) -> BulkRequest:
    """The envelope of a bulk write; 413 beyond `max_elements` items, 400 for anything malformed."""
    errors: list[ErrorItem] = []
    elements = body.get("elements")
    if not isinstance(elements, list):
        errors.append(
            ErrorItem("/elements", "mandatory", "elements (an array of element objects) is mandatory")
        )
        elements = []
    elif len(elements) > max_elements:
        raise PayloadTooLarge(f"at most {max_elements} elements per request, got {len(elements)}")
    mode = body.get("mode", "atomic")
    if mode not in MODES:
        errors.append(ErrorItem("/mode", "wrong_value", f"mode is one of {', '.join(MODES)}"))
    match = body.get("match", "id")
    if match not in MATCHES:
        errors.append(ErrorItem("/match", "wrong_value", f"match is one of {', '.join(MATCHES)}"))
    dry_run = body.get("dryRun", False)
    if not isinstance(dry_run, bool):
        errors.append(ErrorItem("/dryRun", "wrong_type", "dryRun is true or false"))
    for key in body:
        if key not in ("elements", "mode", "match", "dryRun"):
            errors.append(ErrorItem(pointer(key), "unknown_property", f"a bulk write has no member {key!r}"))
    if errors:
        raise ValidationFailed("; ".join(f"{e.pointer}: {e.message}" for e in errors), errors=errors)
    return BulkRequest(elements, str(mode), bool(dry_run), str(match))


def _result(item: WriteItem, dry_run: bool) -> dict[str, Any]:
    # One dict literal an item, fields read once (a bulk write answers 10,000 of them).
    error, element_id = item.error, item.element_id
    if error is not None:
        status = error.status
    else:
        if element_id is None:
            status, element_id = 201, None if dry_run else item.new_id
        else:
            status = 200
    errors = item.errors
    return {
        "index": item.index,
        "status": status,
        "id": element_id,
        "errors": [e.as_dict() for e in errors] if errors else [],
    }


@dataclass(frozen=True)
class BulkOutcome:
    created: int
    updated: int
    failed: int
    results: list[dict[str, Any]]
    dry_run: bool

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"created": self.created, "updated": self.updated, "failed": self.failed}
        if self.dry_run:
            body["dryRun"] = True
        body["results"] = self.results
        return body


def bulk_write(writer: Writer, type_name: str, request: BulkRequest) -> BulkOutcome:
    """Create and update many elements of one type; see the module docstring. Needs MASSDATA."""
    require_massdata(writer.actor)
    type_def = element_service.resolve_type(writer.metamodel, writer.actor, type_name)
    repository.plan_with_parameters(writer.db)
    items = [WriteItem(i, raw if isinstance(raw, dict) else None) for i, raw in enumerate(request.elements)]
    for item in items:
        if item.body is None:
            item.fail(invalid([ErrorItem("", "wrong_type", "an element is a JSON object")]))
    _assign_targets(writer, type_def, items, request.match)
    validation.validate(writer, type_def, items)
    failed = [item for item in items if item.error is not None]
    if request.mode == "atomic" and failed:
        raise refused(
            len(items),
            [(item.index, item.error, item.errors) for item in failed],
            [_result(item, request.dry_run) for item in items],
        )
    good = [item for item in items if item.error is None] if failed else items
    if not request.dry_run:
        persistence.persist(writer, type_def, good)
    results = [_result(item, request.dry_run) for item in items]
    return BulkOutcome(
        created=sum(1 for item in good if item.creating),
        updated=sum(1 for item in good if not item.creating),
        failed=len(failed),
        results=results,
        dry_run=request.dry_run,
    )


def refused(
    count: int, failed: Sequence[tuple[int, BlockrepoError | None, Sequence[ErrorItem]]], results: list[Any]
) -> BlockrepoError:
    """What an atomic bulk write of `count` items raises when some failed ((index, error, problems) each):
    400 with every item's problems and `results`, nothing written."""
    errors = [
        ErrorItem(f"/elements/{index}{e.pointer}", e.code, e.message)
        for index, _, problems in failed
        for e in problems
    ]
    detail = f"{len(failed)} of {count} element(s) failed; nothing was written"
    if any(isinstance(error, Forbidden) for _, error, _ in failed):
        # Writing what the caller may not write is 403, as in the element API, with every problem.
        return Forbidden(detail, errors=errors, extra={"results": results})
    return ValidationFailed(detail, errors=errors, extra={"results": results})


# --- validation ----------------------------------------------------------------------------------------


def element_id_of(raw: Any) -> int | None:
    """The element id an item's `id` gives (`n` or `[n]`), None if it gives none."""
    value = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST_ID:
        return None
    return value


def _assign_targets(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem], match: str) -> None:
    """Which element each item updates: its `id`, or (match by name) the element of that name."""
    by_id: list[WriteItem] = []
    by_name: dict[str, list[WriteItem]] = {}
    for item in items:
        if item.body is None:
            continue
        if "id" in item.body:
            element_id = element_id_of(item.body["id"])
            if element_id is None:
                item.fail(invalid([ErrorItem("/id", "wrong_type", "id is a positive integer (or [n])")]))
                continue
            item.element_id = element_id
            by_id.append(item)
        elif match == "name":
            raw = item.body.get("name")
            if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], str):
                # Matched as stored: normalised (a name that cannot be is reported by the parse).
                with suppress(InvalidName):
                    by_name.setdefault(normalized_name(raw[0], NAME_MAX_LENGTH), []).append(item)
    found = repository.ids_by_name(writer.db, type_def.id, by_name)
    for name, named in by_name.items():
        for item in named:
            item.element_id = found.get(name)
            if item.element_id is not None:
                by_id.append(item)
    existing = repository.lock_elements(writer.db, type_def.id, (item.element_id or 0 for item in by_id))
    seen: dict[int, int] = {}
    for item in sorted(by_id, key=lambda i: i.index):
        assert item.element_id is not None
        if item.element_id not in existing:
            message = f"there is no {type_def.name} with id {item.element_id}"
            item.fail(NotFound(message, errors=[ErrorItem("/id", "not_found", message)]))
        elif item.element_id in seen:
            message = f"element {item.element_id} is already written by item {seen[item.element_id]}"
            item.fail(invalid([ErrorItem("/id", "duplicate", message)]))
        else:
            seen[item.element_id] = item.index
    may = {action: writer.actor.can_type(type_def.id, action) for action in ("create", "update")}
    if all(may.values()):
        return
    for item in items:
        if item.failed:
            continue
        action = "create" if item.creating else "update"
        if not may[action]:
            item.fail(
                forbidden([ErrorItem("", "forbidden", f"you may not {action} {type_def.name} elements")])
            )


# --- bulk delete ---------------------------------------------------------------------------------------


def parse_delete(body: dict[str, Any], max_elements: int) -> list[int]:
    ids = body.get("ids")
    errors: list[ErrorItem] = []
    if not isinstance(ids, list):
        errors.append(ErrorItem("/ids", "mandatory", "ids (an array of element ids) is mandatory"))
        ids = []
    elif len(ids) > max_elements:
        raise PayloadTooLarge(f"at most {max_elements} ids per request, got {len(ids)}")
    ids = list(map(integral_number_as_int, ids))
    for index, raw in enumerate(ids):
        if element_id_of(raw) is None or isinstance(raw, list):
            errors.append(ErrorItem(f"/ids/{index}", "wrong_type", "an id is a positive integer"))
    for key in body:
        if key != "ids":
            errors.append(ErrorItem(pointer(key), "unknown_property", f"a bulk delete has no member {key!r}"))
    if errors:
        raise ValidationFailed("; ".join(f"{e.pointer}: {e.message}" for e in errors), errors=errors)
    return [int(i) for i in ids]


def bulk_delete(writer: Writer, type_name: str, ids: Sequence[int], *, recursive: bool = False) -> int:
    """Delete elements of one type (all or nothing) with their relations; with `recursive`, their
    descendants too. Returns how many elements were deleted. Needs MASSDATA."""
    require_massdata(writer.actor)
    type_def = element_service.resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    db = writer.db
    wanted = list(dict.fromkeys(ids))
    existing = repository.lock_elements(db, type_def.id, wanted)
    missing = [(index, i) for index, i in enumerate(ids) if i not in existing]
    if missing:
        errors = [
            ErrorItem(f"/ids/{index}", "not_found", f"there is no {type_name} with id {i}")
            for index, i in missing
        ]
        raise NotFound(f"{len(missing)} id(s) name no {type_name}; nothing was deleted", errors=errors)
    doomed = repository.subtrees(db, wanted)
    descendants = [i for i in doomed if i not in existing]
    if descendants and not recursive:
        raise HasChildren(
            f"{len(descendants)} element(s) below the given ones would be left without parent; delete them "
            "too or pass ?recursive=true",
            extra={"children": descendants[:100]},
        )
    persistence.delete(writer, type_def, doomed)
    return len(doomed)
