"""The change-entry format of relation ends: applying `added`/`removed`/`order`, and folding two records."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from blockrepo.revisions.recorder import ChangeLog, apply_related_change


def _e(element_id: int, **extra: Any) -> dict[str, Any]:
    return {"id": element_id, "name": f"E{element_id}", **extra}


def test_removed_go_added_come_last_and_replaced_keep_their_place() -> None:
    current = [_e(1), _e(2, attributes={"Share": [1]}), _e(3)]
    change = {
        "added": [_e(4), _e(2, attributes={"Share": [2]})],
        "removed": [_e(1), _e(2, attributes={"Share": [1]})],
    }
    assert apply_related_change(current, change) == [_e(2, attributes={"Share": [2]}), _e(3), _e(4)]


def test_order_wins_when_the_end_was_also_reordered() -> None:
    change = {"added": [_e(9)], "removed": [], "order": [9, 2, 1]}
    assert apply_related_change([_e(1), _e(2)], change) == [_e(9), _e(2), _e(1)]


def test_two_records_of_one_end_fold_with_their_order() -> None:
    log = ChangeLog(user_login="u", request_id="r")
    log.element(
        "updated",
        type_name="T",
        element_id=1,
        element_name="one",
        changes=[{"property": "xs", "added": [_e(9)], "removed": [], "order": [9, 2, 1]}],
    )
    log.element(
        "updated",
        type_name="T",
        element_id=1,
        element_name="one",
        changes=[{"property": "xs", "added": [_e(7)], "removed": [_e(2)]}],
    )
    (entry,) = log._entries
    assert entry.changes == [
        {"property": "xs", "added": [_e(9), _e(7)], "removed": [_e(2)], "order": [9, 1, 7]}
    ]
    assert [e["id"] for e in apply_related_change([_e(1), _e(2)], entry.changes[0])] == [9, 1, 7]


def test_a_later_order_replaces_the_earlier_one() -> None:
    log = ChangeLog(user_login="u", request_id="r")
    for change in (
        {"property": "xs", "added": [_e(9)], "removed": []},
        {"property": "xs", "added": [_e(8)], "removed": [], "order": [8, 9, 1]},
    ):
        log.element("updated", type_name="T", element_id=1, element_name="one", changes=[change])
    (entry,) = log._entries
    assert entry.changes[0]["order"] == [8, 9, 1]
    assert [e["id"] for e in apply_related_change([_e(1)], entry.changes[0])] == [8, 9, 1]


def test_a_partial_entry_replaces_only_the_attributes_it_names() -> None:
    current = [_e(1, attributes={"Share": [60], "Note": ["main"]})]
    change = {"added": [_e(1, attributes={"Note": []})], "removed": [_e(1, attributes={"Note": ["main"]})]}
    assert apply_related_change(current, change) == [_e(1, attributes={"Share": [60], "Note": []})]


def test_a_record_is_what_the_changes_were_when_recorded() -> None:
    log = ChangeLog(user_login="u", request_id="r")
    changes: list[dict[str, Any]] = [{"property": "xs", "added": [_e(1)], "removed": []}]
    log.element("updated", type_name="T", element_id=1, element_name="one", changes=changes)
    changes[0]["added"].append(_e(2))
    changes.append({"property": "name", "old": ["one"], "new": ["two"]})
    (entry,) = log._entries
    assert entry.changes == [{"property": "xs", "added": [_e(1)], "removed": []}]


def test_a_created_element_recorded_again_folds_into_one_created_changeset() -> None:
    log = ChangeLog(user_login="u", request_id="r")
    log.element(
        "created",
        type_name="T",
        element_id=1,
        element_name="one",
        changes=[{"property": "name", "old": [], "new": ["one"]}],
    )
    log.element(
        "updated",
        type_name="T",
        element_id=1,
        element_name="two",
        changes=[{"property": "name", "old": ["one"], "new": ["two"]}],
    )
    (entry,) = log._entries
    assert (entry.operation, entry.element_name) == ("created", "two")
    assert entry.changes == [{"property": "name", "old": [], "new": ["two"]}]


_ENTRY_IDS = st.integers(min_value=1, max_value=12)
_ENTRIES = st.builds(
    lambda element_id, share: _e(element_id, attributes={"Share": share}),
    _ENTRY_IDS,
    st.lists(st.integers(min_value=0, max_value=3), max_size=1),
)
_RELATION_CHANGES = st.builds(
    lambda added, removed: {"property": "xs", "added": added, "removed": removed},
    st.lists(_ENTRIES, max_size=4, unique_by=lambda entry: entry["id"]),
    st.lists(_ENTRIES, max_size=4, unique_by=lambda entry: entry["id"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_ENTRIES, max_size=6, unique_by=lambda entry: entry["id"]),
    st.lists(_RELATION_CHANGES, max_size=8),
)
def test_a_created_element_recorded_again_holds_its_list_as_it_ended(
    created: list[dict[str, Any]], later: list[dict[str, Any]]
) -> None:
    """An import creates an element in one chunk; each later chunk adds or removes what lists it. Its one
    changeset is "created", with the list each change in turn leaves (apply_related_change)."""
    log = ChangeLog(user_login="u", request_id="r")
    first = [{"property": "xs", "old": [], "new": created}] if created else []
    log.element("created", type_name="T", element_id=1, element_name="one", changes=first)
    expected = created
    for change in later:
        log.element("updated", type_name="T", element_id=1, element_name="one", changes=[change])
        expected = apply_related_change(expected, change)
    (entry,) = log._entries
    assert entry.operation == "created"
    assert entry.changes == ([{"property": "xs", "old": [], "new": expected}] if expected else [])
