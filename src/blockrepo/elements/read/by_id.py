"""GET by id: one element as an actor sees it, through the `ElementReader` the snapshot's compiled cache
keeps per actor and type (`elements.compiled`), and the rendered bodies of recent reads.

A reader holds the actor's view of the type and its statements compiled to SQL once; building both
costs more than the database needs to answer the read. The `Actor` and `Metamodel` objects are cached by
revision (`repository_state`), so a metamodel or permission change made by any process gives new objects
and a new reader on the next request. A rendered body is kept with the revisions it was read at and
served only while they are the current ones, which the request reads anyway: any write, by any process,
makes every body a miss. Nothing is cached by time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.access.repository import Revisions
from blockrepo.elements.compiled import reader_of, view_of
from blockrepo.errors import Forbidden, NotFound, UnknownType
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel


def readable_type(metamodel: Metamodel, actor: Actor, type_name: str) -> BlockTypeDef:
    """The type, if the actor may read its elements (404 unknown type, 403 not readable)."""
    type_def = metamodel.type_named(type_name)
    if type_def is None:
        raise UnknownType(f"there is no building block type {type_name!r}")
    if not actor.can_type(type_def.id, "read"):
        raise Forbidden(f"you may not read {type_name} elements")
    return type_def


def read_element(
    db: Session | Connection,
    metamodel: Metamodel,
    actor: Actor,
    type_name: str,
    element_id: int,
) -> dict[str, Any]:
    """The element JSON as `actor` may see it; a fixed number of statements (see `ElementReader.fetch`).

    The dict shares its empty lists with other reads: serialize it, never change it."""
    type_def = readable_type(metamodel, actor, type_name)
    found = reader_of(metamodel, actor, type_def).read(db, [element_id])
    if not found:
        raise NotFound(f"there is no {type_name} with id {element_id}")
    return found[0]


def view_tag(metamodel: Metamodel, actor: Actor, type_def: BlockTypeDef) -> str:
    """What `actor` sees of the type's elements, as the part of their ETags after the revision
    (`ElementView.tag`: empty for a reader who sees every key)."""
    return view_of(metamodel, actor, type_def).tag


@dataclass(frozen=True, slots=True)
class RenderedElement:
    """An element's JSON body as one set of rights renders it, with the element's revision and the view's
    tag (together its ETag)."""

    body: bytes
    revision: int
    view_tag: str


class RenderedElements:
    """Bodies per (type, element, rights), each valid for exactly the repository revisions it was read at.

    Rights are the actor's roles, supervisor flag and restriction (an API token's): under one access
    revision they fix what an actor may read, so users with the same roles share entries. Bounded in
    entries and in bytes (emptied when full: a write anywhere makes every entry stale anyway);
    thread-safe."""

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 2**20) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[Any, ...], tuple[Revisions, RenderedElement]] = {}
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0

    def cached(
        self, actor: Actor, type_def: BlockTypeDef, element_id: int, revisions: Revisions
    ) -> RenderedElement | None:
        """The body read at exactly `revisions` for the rights of `actor`, if it is held."""
        entry = self._entries.get(
            (type_def.id, element_id, actor.supervisor, actor.role_ids, actor.restriction)
        )
        return entry[1] if entry is not None and entry[0] == revisions else None

    def read(
        self,
        db: Connection,
        metamodel: Metamodel,
        actor: Actor,
        type_def: BlockTypeDef,
        element_id: int,
        revisions: Revisions,
        *,
        keep: bool = True,
    ) -> RenderedElement | None:
        """Read and keep the body of the element as `actor` sees it; `db` must read one snapshot at
        `revisions`, and `metamodel` and `actor` be those of the same revisions (`keep` False: a write
        up to `revisions` may still commit, so read without keeping). None if there is no such
        element."""
        reader = reader_of(metamodel, actor, type_def)
        found = reader.read(db, [element_id])
        if not found:
            return None
        element = found[0]
        rendered = RenderedElement(
            orjson.dumps(element, option=orjson.OPT_NON_STR_KEYS), element["revision"][0], reader.view.tag
        )
        if not keep:
            return rendered
        with self._lock:
            if len(self._entries) >= self._max_entries or self._bytes + len(rendered.body) > self._max_bytes:
                self._entries.clear()
                self._bytes = 0
            key = (type_def.id, element_id, actor.supervisor, actor.role_ids, actor.restriction)
            replaced = self._entries.get(key)
            self._bytes += len(rendered.body) - (0 if replaced is None else len(replaced[1].body))
            self._entries[key] = (revisions, rendered)
        return rendered


def read_elements(
    db: Session | Connection, metamodel: Metamodel, actor: Actor, type_name: str, element_ids: list[int]
) -> dict[int, dict[str, Any]]:
    """The JSON of those of `element_ids` that exist, as `actor` may see them, by id (nothing for a type
    the actor may not read); one batch of statements per 1,000 ids."""
    type_def = metamodel.type_named(type_name)
    if type_def is None or not actor.can_type(type_def.id, "read"):
        return {}
    found = reader_of(metamodel, actor, type_def).read(db, element_ids)
    return {int(element["id"][0]): element for element in found}  # the API gives every value as a list
