"""The write core's pure parts: an update's plan against the current state, and history's diff of two
renderings, which applied to the first gives the second."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from blockrepo.elements.read.repository import LoadedElement, LoadedRelation
from blockrepo.elements.values import TypedValue
from blockrepo.elements.write.changesets import diff_elements
from blockrepo.elements.write.drafts import ElementDraft
from blockrepo.elements.write.parse import BodyParser
from blockrepo.elements.write.plan import plan_update
from blockrepo.elements.write.record import ElementRecorder
from blockrepo.history.asof import fold_elements
from blockrepo.history.repository import ChangesetRow
from blockrepo.revisions.recorder import UNRECORDED_KEYS, ChangeLog
from tests.unit.core_fixtures import APP_TYPE, EDITOR, NOTE, SHARE

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _before(**changes: Any) -> LoadedElement:
    element = LoadedElement(
        id=17,
        type_id=APP_TYPE.id,
        name="Billing",
        description="",
        parent_id=None,
        parent_name=None,
        position=0,
        revision=3,
        last_modified_at=NOW,
        last_modified_by="editor",
        values={NOTE.id: [TypedValue(text="old")]},
        ends={
            "servers": [
                LoadedRelation(101, 5, "s5", 0, {SHARE.id: [TypedValue(number=60.0)]}),
                LoadedRelation(102, 6, "s6", 1),
            ]
        },
    )
    for key, value in changes.items():
        setattr(element, key, value)
    return element


def _draft(body: dict[str, Any]) -> ElementDraft:
    draft = BodyParser(EDITOR, APP_TYPE).parse(body, element_id=17)
    assert not draft.errors and not draft.forbidden
    for entries in draft.ends.values():
        for entry in entries:
            entry.reference.resolved_id = entry.reference.id  # as resolve_references would
    return draft


def test_a_body_that_restates_the_element_plans_nothing() -> None:
    body = {"name": ["Billing"], "Note": ["old"], "servers": [{"id": 5}, {"id": 6}]}
    assert plan_update(_draft(body), _before()).empty


def test_a_plan_holds_only_what_changes() -> None:
    plan = plan_update(_draft({"name": ["Billing"], "Note": ["new"], "description": ["d"]}), _before())
    assert plan.element_fields == {"description": "d"}
    assert plan.values == {NOTE.id: [TypedValue(text="new")]}
    assert not (plan.add_relations or plan.remove_relations or plan.positions or plan.move)


def test_relation_ends_are_compared_as_sets_plus_the_source_order() -> None:
    plan = plan_update(_draft({"servers": [{"id": 6}, {"id": 7}]}), _before())
    assert plan.remove_relations == [101]
    assert [(relation.source_id, relation.target_id) for relation in plan.add_relations] == [(17, 7)]
    assert plan.positions == {102: 0}


def test_without_order_counts_a_kept_end_keeps_its_order() -> None:
    reordered = _draft({"servers": [{"id": 6}, {"id": 5}]})
    assert plan_update(reordered, _before()).positions == {102: 0, 101: 1}
    assert plan_update(reordered, _before(), order_counts=False).empty


def test_changed_relation_attributes_are_planned_per_relation() -> None:
    plan = plan_update(_draft({"servers": [{"id": 5, "attributes": {"Share": [40]}}, {"id": 6}]}), _before())
    assert plan.relation_values == {101: {SHARE.id: [TypedValue(number=40.0)]}}
    assert not (plan.add_relations or plan.remove_relations or plan.positions)


def test_a_move_is_planned_as_a_new_parent() -> None:
    draft = _draft({"parent": [{"id": 3}]})
    assert draft.parent is not None
    draft.parent.resolved_id = 3
    plan = plan_update(draft, _before(parent_id=2))
    assert (plan.element_fields, plan.move) == ({"parent_id": 3}, True)
    assert plan_update(_draft({"parent": []}), _before(parent_id=2)).element_fields == {"parent_id": None}


# --- history: diff and fold ------------------------------------------------------------------------------

_SCALARS = st.lists(st.sampled_from(["a", "b", "c", 1, 2.5, True]), max_size=3, unique=True)
_ENTRY = st.builds(
    lambda entry_id, share: (
        {"id": entry_id, "name": f"e{entry_id}"} | ({} if share is None else {"attributes": {"Share": share}})
    ),
    st.integers(min_value=1, max_value=6),
    st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=1)),
)
_ENTRIES = st.lists(_ENTRY, max_size=5, unique_by=lambda entry: entry["id"])
ELEMENTS = st.fixed_dictionaries(
    {
        "id": st.just([17]),
        "type": st.just(["App"]),
        "revision": st.integers(1, 9).map(lambda revision: [revision]),
        "name": st.sampled_from(["one", "two"]).map(lambda name: [name]),
        "description": st.sampled_from([[""], ["text"]]),
        "Note": _SCALARS,
        "Scores": _SCALARS,
        "servers": _ENTRIES,
        "host": _ENTRIES.map(lambda entries: entries[:1]),
        "children": _ENTRIES.map(lambda entries: [{"id": e["id"], "name": e["name"]} for e in entries]),
    }
)


def _row(revision: int, operation: str, changes: Sequence[Mapping[str, Any]], name: str) -> ChangesetRow:
    return ChangesetRow(
        change_id=revision,
        revision=revision,
        entity="element",
        operation=operation,
        type_name="App",
        element_id=17,
        element_name=name,
        subject=None,
        changes=[dict(change) for change in changes],
        created_at=NOW,
        user_login="editor",
        request_id=f"r{revision}",
    )


def _recorded(element: dict[str, Any]) -> dict[str, Any]:
    """What history can know of an element: its recorded, non-empty properties."""
    return {key: value for key, value in element.items() if key not in UNRECORDED_KEYS and value}


def _recorder(log: ChangeLog) -> ElementRecorder:
    """The element recorder of `log`'s request (it reaches the database only when it finishes)."""
    return ElementRecorder(cast(Session, None), log, "editor")


def _created_changes(element: dict[str, Any]) -> list[dict[str, Any]]:
    log = ChangeLog(user_login="editor", request_id="r1")
    _recorder(log).created(APP_TYPE, 17, element)
    (entry,) = log._entries
    return entry.changes


@settings(max_examples=300, deadline=None)
@given(before=ELEMENTS, after=ELEMENTS)
def test_a_diff_applied_to_the_before_state_gives_the_after_state(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    rows = [_row(1, "created", _created_changes(before), before["name"][0])]
    changes = diff_elements(APP_TYPE, before, after)
    if changes:
        rows.append(_row(2, "updated", changes, after["name"][0]))
    (folded,) = fold_elements(rows).values()
    assert folded.exists
    assert {key: value for key, value in folded.properties.items() if value} == _recorded(after)


@settings(max_examples=100, deadline=None)
@given(element=ELEMENTS)
def test_an_element_diffed_with_itself_records_nothing(element: dict[str, Any]) -> None:
    assert diff_elements(APP_TYPE, element, element) == []


def test_a_diff_records_only_what_changed() -> None:
    server = {"id": 1, "name": "s"}
    before = {"id": [17], "revision": [1], "name": ["one"], "Note": ["a"], "servers": [server]}
    after = {"id": [17], "revision": [2], "name": ["one"], "Note": ["b"], "servers": []}
    assert diff_elements(APP_TYPE, before, after) == [
        {"property": "Note", "old": ["a"], "new": ["b"]},
        {"property": "servers", "added": [], "removed": [server]},
    ]


def test_created_and_deleted_elements_list_every_property_that_holds_something() -> None:
    element = {"id": [17], "type": ["App"], "name": ["one"], "Note": [], "Scores": [1]}
    log = ChangeLog(user_login="editor", request_id="r1")
    _recorder(log).created(APP_TYPE, 17, element)
    _recorder(log).deleted(APP_TYPE, 18, element | {"id": [18]})
    created, deleted = log._entries
    assert (created.operation, created.changes) == (
        "created",
        [{"property": "name", "old": [], "new": ["one"]}, {"property": "Scores", "old": [], "new": [1]}],
    )
    assert (deleted.operation, deleted.changes) == (
        "deleted",
        [{"property": "name", "old": ["one"], "new": []}, {"property": "Scores", "old": [1], "new": []}],
    )


def test_an_element_created_and_deleted_in_one_request_leaves_no_record() -> None:
    log = ChangeLog(user_login="editor", request_id="r1")
    _recorder(log).created(APP_TYPE, 17, {"id": [17], "name": ["one"]})
    _recorder(log).deleted(APP_TYPE, 17, {"id": [17], "name": ["one"]})
    assert log.empty
