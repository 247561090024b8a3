"""What a metamodel snapshot compiles per actor and type, in one cache the snapshot owns: element views and
write body parsers.

Both cost more to build than a single read or write needs to run. The snapshot (`Metamodel`) and the
actor are immutable and cached per revision (`MetamodelCache`, `ActorCache`), so an object built for them
stays right as long as they live: a metamodel change brings a new snapshot with an empty cache, an access
change a new actor (a miss). Entries hold their actor, so no other actor can have its id while one exists.
"""

from __future__ import annotations

import threading
from typing import cast

from blockrepo.access.actor import Actor
from blockrepo.elements.read.view import ElementView
from blockrepo.elements.write.parse import BodyParser
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel

# Per snapshot: actors of one snapshot are few, but an access change that keeps the metamodel makes new
# ones; the cache is emptied when full (rebuilding is cheap, keeping the objects of old actors is not).
MAX_ENTRIES = 1024
_KEY = "elements.compiled"


class Compiled:
    """The views and body parsers of one snapshot, per (actor, type); `actor` None: everything (history)."""

    __slots__ = ("_lock", "_parsers", "_views")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[tuple[int, int], tuple[Actor | None, ElementView]] = {}
        self._parsers: dict[tuple[int, int], tuple[Actor, BodyParser]] = {}

    def view(self, metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementView:
        """`ElementView.build(metamodel, actor, type_def)` (every field), built once."""
        key = (id(actor), type_def.id)
        entry = self._views.get(key)
        if entry is not None and entry[0] is actor:
            return entry[1]
        view = ElementView.build(metamodel, actor, type_def)
        with self._lock:
            if len(self._views) >= MAX_ENTRIES:
                self._views.clear()
            self._views[key] = (actor, view)
        return view

    def parser(self, actor: Actor, type_def: BlockTypeDef) -> BodyParser:
        """The `BodyParser` of the type and the actor, built once: a single write builds no handlers again."""
        key = (id(actor), type_def.id)
        entry = self._parsers.get(key)
        if entry is not None and entry[0] is actor:
            return entry[1]
        parser = BodyParser(actor, type_def)
        with self._lock:
            if len(self._parsers) >= MAX_ENTRIES:
                self._parsers.clear()
            self._parsers[key] = (actor, parser)
        return parser


def compiled(metamodel: Metamodel) -> Compiled:
    """The cache of `metamodel`, made on first use and kept with the snapshot."""
    found = metamodel.derived.get(_KEY)
    if found is None:
        found = metamodel.derived.setdefault(_KEY, Compiled())
    return cast(Compiled, found)


def view_of(metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementView:
    """The view of every field `actor` may see of the type's elements, from the snapshot's cache."""
    return compiled(metamodel).view(metamodel, actor, type_def)


def body_parser(metamodel: Metamodel, actor: Actor, type_def: BlockTypeDef) -> BodyParser:
    """The body parser of the type for `actor`, from the snapshot's cache."""
    return compiled(metamodel).parser(actor, type_def)
