"""What a metamodel snapshot compiles per actor and type, in one cache the snapshot owns: element views,
column-oriented readers (with their statements compiled to SQL) and write body parsers.

Each costs more to build than a single read or write needs to run. The snapshot (`Metamodel`) and the
actor are immutable and cached per revision (`MetamodelCache`, `ActorCache`), so an object built for them
stays right as long as they live: a metamodel change brings a new snapshot with an empty cache, an access
change a new actor (a miss). Entries hold their actor, so no other actor can have its id while one exists.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from blockrepo.access.actor import Actor
from blockrepo.elements.read.reader import ElementReader
from blockrepo.elements.read.view import ElementView
from blockrepo.elements.write.parse import BodyParser
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel

# Per snapshot: actors of one snapshot are few, but an access change that keeps the metamodel makes new
# ones; the cache is emptied when full (rebuilding is cheap, keeping the objects of old actors is not).
MAX_ENTRIES = 1024
_KEY = "elements.compiled"
_Built = TypeVar("_Built")


class Compiled:
    """The views, readers and body parsers of one snapshot, per (actor, type); `actor` None: everything
    (history)."""

    __slots__ = ("_lock", "_parsers", "_readers", "_views")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (id of the actor, type id) -> (the actor, what was built for it).
        self._views: dict[tuple[int, int], tuple[Any, ElementView]] = {}
        self._readers: dict[tuple[int, int], tuple[Any, ElementReader]] = {}
        self._parsers: dict[tuple[int, int], tuple[Any, BodyParser]] = {}

    def view(self, metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementView:
        """`ElementView.build(metamodel, actor, type_def)` (every field), built once."""
        return self._kept(self._views, actor, type_def, ElementView.build, metamodel, actor, type_def)

    def reader(self, metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementReader:
        """The `ElementReader` of the type's view for `actor`, built once: its statements are compiled to
        SQL once per dialect, which costs more than the database needs to answer a read by id."""
        return self._kept(self._readers, actor, type_def, self._new_reader, metamodel, actor, type_def)

    def parser(self, actor: Actor, type_def: BlockTypeDef) -> BodyParser:
        """The `BodyParser` of the type and the actor, built once: a single write builds no handlers again."""
        return self._kept(self._parsers, actor, type_def, BodyParser, actor, type_def)

    def _new_reader(self, metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementReader:
        return ElementReader(self.view(metamodel, actor, type_def))

    def _kept(
        self,
        entries: dict[tuple[int, int], tuple[Any, _Built]],
        actor: Actor | None,
        type_def: BlockTypeDef,
        build: Callable[..., _Built],
        *arguments: Any,
    ) -> _Built:
        """The entry of (actor, type), or `build(*arguments)` kept as it (no closure made per call: a
        single read or write asks for several objects)."""
        key = (id(actor), type_def.id)
        entry = entries.get(key)
        if entry is not None and entry[0] is actor:
            return entry[1]
        built = build(*arguments)
        with self._lock:
            if len(entries) >= MAX_ENTRIES:
                entries.clear()
            entries[key] = (actor, built)
        return built


def compiled(metamodel: Metamodel) -> Compiled:
    """The cache of `metamodel`, made on first use and kept with the snapshot."""
    found = metamodel.derived.get(_KEY)
    if found is None:
        found = metamodel.derived.setdefault(_KEY, Compiled())
    return cast(Compiled, found)


def view_of(metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementView:
    """The view of every field `actor` may see of the type's elements, from the snapshot's cache."""
    return compiled(metamodel).view(metamodel, actor, type_def)


def reader_of(metamodel: Metamodel, actor: Actor | None, type_def: BlockTypeDef) -> ElementReader:
    """The reader of every field `actor` may see of the type's elements, from the snapshot's cache."""
    return compiled(metamodel).reader(metamodel, actor, type_def)


def body_parser(metamodel: Metamodel, actor: Actor, type_def: BlockTypeDef) -> BodyParser:
    """The body parser of the type for `actor`, from the snapshot's cache."""
    return compiled(metamodel).parser(actor, type_def)
