"""The compiled views, readers and body parsers: built once per (snapshot, actor, type), owned by the
snapshot."""

from __future__ import annotations

import dataclasses

from blockrepo.elements.compiled import body_parser, compiled, reader_of, view_of
from blockrepo.metamodel.snapshot import Metamodel
from tests.unit.core_fixtures import APP_TYPE, EDITOR, SUPERVISOR


def _snapshot(revision: int) -> Metamodel:
    return Metamodel(revision=revision, types=(APP_TYPE,), relation_types=(), attributes=(), groups=())


def test_a_view_and_a_parser_are_built_once_per_snapshot_actor_and_type() -> None:
    metamodel = _snapshot(1)
    assert view_of(metamodel, EDITOR, APP_TYPE) is view_of(metamodel, EDITOR, APP_TYPE)
    assert body_parser(metamodel, EDITOR, APP_TYPE) is body_parser(metamodel, EDITOR, APP_TYPE)
    # Another actor (or None, for history) sees other keys: a view of its own.
    assert view_of(metamodel, SUPERVISOR, APP_TYPE) is not view_of(metamodel, EDITOR, APP_TYPE)
    assert view_of(metamodel, None, APP_TYPE).tag == ""
    assert view_of(metamodel, EDITOR, APP_TYPE).tag != ""  # the closed group is hidden from the editor


def test_a_new_snapshot_or_actor_builds_anew() -> None:
    first, second = _snapshot(1), _snapshot(2)
    assert compiled(first) is compiled(first) and compiled(first) is not compiled(second)
    assert view_of(first, EDITOR, APP_TYPE) is not view_of(second, EDITOR, APP_TYPE)
    # An access change gives a new (equal) actor object: its entries are not the old actor's.
    again = dataclasses.replace(EDITOR)
    assert body_parser(first, again, APP_TYPE) is not body_parser(first, EDITOR, APP_TYPE)
    # A copy of a snapshot starts with a cache of its own.
    assert compiled(dataclasses.replace(first)) is not compiled(first)


def test_a_reader_is_built_once_per_snapshot_actor_and_type_on_the_cached_view() -> None:
    metamodel = _snapshot(1)
    reader = reader_of(metamodel, EDITOR, APP_TYPE)
    assert reader is reader_of(metamodel, EDITOR, APP_TYPE)
    assert reader.view is view_of(metamodel, EDITOR, APP_TYPE)
    assert reader_of(metamodel, None, APP_TYPE) is not reader
    assert reader_of(_snapshot(2), EDITOR, APP_TYPE) is not reader
