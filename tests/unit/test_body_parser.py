"""The element body parser: its short paths answer as its general path does, and what it refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from blockrepo.access.actor import Actor
from blockrepo.elements.write.drafts import ElementDraft
from blockrepo.elements.write.parse import BodyParser
from tests.unit.core_fixtures import APP_TYPE, EDITOR, SUPERVISOR


class _List(list[Any]):
    pass


class _Dict(dict[str, Any]):
    pass


class _Str(str):
    __slots__ = ()


class _Int(int):
    pass


class _Float(float):
    pass


def general(raw: Any) -> Any:
    """`raw` with every list, object, string and number replaced by an instance of a subclass: equal to
    the original, but the short paths test exact classes (`raw.__class__ is list`), so the parser and the
    value decoders take their general path for every key and value."""
    if isinstance(raw, bool) or raw is None:
        return raw
    if isinstance(raw, list):
        return _List(general(item) for item in raw)
    if isinstance(raw, dict):
        return _Dict({key: general(value) for key, value in raw.items()})
    if isinstance(raw, str):
        return _Str(raw)
    if isinstance(raw, int):
        return _Int(raw)
    if isinstance(raw, float):
        return _Float(raw)
    return raw


_TEXTS = st.one_of(
    st.text(alphabet="ab \x00~/", max_size=4),
    st.sampled_from(["CURRENT", "PLANNED", "2024-02-29", "2023-02-29", "alice", "x" * 256]),
)
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.integers(min_value=-2, max_value=2**31 + 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXTS,
)
_JSON = st.recursive(
    _LEAVES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "name", "attributes", "start", "end", "Share", "x"]), children
        )
    ),
    max_leaves=6,
)
_ENTRIES = st.one_of(
    st.fixed_dictionaries({"id": st.integers(min_value=-1, max_value=2**31)}),
    st.fixed_dictionaries({"name": _TEXTS}),
    st.fixed_dictionaries(
        {"id": st.integers(min_value=1, max_value=9)},
        optional={"attributes": st.dictionaries(st.sampled_from(["Share", "Other"]), _JSON, max_size=2)},
    ),
    _JSON,
)
_VALUES = st.one_of(
    st.lists(_LEAVES, max_size=1),  # the usual shape: one value, or none
    st.lists(_ENTRIES, max_size=3),
    st.lists(_JSON, max_size=3),
    _JSON,
)
_KEYS = st.sampled_from(
    [
        "id",
        "revision",
        "name",
        "description",
        "parent",
        "status",
        "Note",
        "Cost",
        "Scores",
        "Since",
        "Period",
        "Active",
        "Owners",
        "Secret",
        "servers",
        "host",
        "Unknown",
    ]
)
BODIES = st.dictionaries(_KEYS, _VALUES, max_size=7)


def parse(actor: Actor, body: dict[str, Any], element_id: int | None) -> ElementDraft:
    return BodyParser(actor, APP_TYPE).parse(body, element_id=element_id)


@settings(max_examples=400, deadline=None)
@given(body=BODIES, element_id=st.sampled_from([None, 17]), supervisor=st.booleans())
def test_short_paths_answer_as_the_general_path(
    body: dict[str, Any], element_id: int | None, supervisor: bool
) -> None:
    actor = SUPERVISOR if supervisor else EDITOR
    assert parse(actor, body, element_id) == parse(actor, general(body), element_id)


def test_a_parser_kept_across_bodies_answers_as_a_new_one() -> None:
    # `body_parser` keeps parsers across requests; the handlers they cache must hold no body's state.
    kept = BodyParser(EDITOR, APP_TYPE)
    bodies: list[dict[str, Any]] = [
        {"name": ["a"], "servers": [{"id": 1}, {"id": 2}, {"id": 3}]},
        {"name": ["b"], "servers": [{"id": 4}]},
        {"name": [""], "Cost": [2000], "Note": ["x", "y"]},
    ]
    for body in bodies:
        assert kept.parse(body, element_id=None) == parse(EDITOR, body, None)


def _problems(draft: ElementDraft) -> list[tuple[str, str]]:
    return [(item.pointer, item.code) for item in draft.errors + draft.forbidden]


def test_a_valid_body_becomes_a_draft() -> None:
    draft = parse(
        EDITOR,
        {
            "name": ["Billing"],
            "status": ["PLANNED"],
            "Cost": [12.5],
            "Scores": [1, 2],
            "Period": [{"start": "2024-01-01", "end": None}],
            "servers": [{"id": 5, "attributes": {"Share": [60]}}, {"name": "db-1"}],
            "parent": [{"id": 3}],
            "revision": [99],
        },
        None,
    )
    assert _problems(draft) == []
    assert draft.name == "Billing"
    assert [value.literal_id for value in draft.values[1]] == [12]
    assert [value.number for value in draft.values[4]] == [1.0, 2.0]
    assert [(entry.reference.id, entry.reference.name) for entry in draft.ends["servers"]] == [
        (5, None),
        (None, "db-1"),
    ]
    assert draft.parent_given and draft.parent is not None and draft.parent.id == 3


def test_every_problem_of_a_body_is_listed_with_its_pointer() -> None:
    draft = parse(
        EDITOR,
        {
            "Note": ["a", "b"],
            "Cost": [-1],
            "Scores": [1, 1],
            "status": ["GONE"],
            "Secret": ["x"],
            "Unknown": [1],
            "host": [{"id": 1}, {"id": 2}],
            "servers": [{"id": 1, "attributes": {"Other": [1]}}, "x"],
            "description": "text",
        },
        None,
    )
    assert _problems(draft) == [
        ("/Note/1", "too_many_values"),
        ("/Cost/0", "out_of_range"),
        ("/Scores/1", "duplicate"),
        ("/status/0", "unknown_literal"),
        # A property the editor may not read answers like an unknown one (API.md 1.9: no hidden names).
        ("/Secret", "unknown_property"),
        ("/Unknown", "unknown_property"),
        ("/host/1", "too_many_values"),
        ("/servers/0/attributes/Other", "unknown_property"),
        ("/servers/1", "wrong_type"),
        ("/description", "not_an_array"),
        ("/name", "mandatory"),
    ]


def test_an_update_needs_no_name_and_checks_the_id() -> None:
    assert _problems(parse(EDITOR, {"Note": ["x"]}, 17)) == []
    assert _problems(parse(EDITOR, {"id": [18]}, 17)) == [("/id", "id_mismatch")]
    assert _problems(parse(EDITOR, {"id": [18], "name": ["n"]}, None)) == []  # read-only on create


def test_clearing_a_mandatory_property_is_refused_on_update() -> None:
    from dataclasses import replace

    mandatory = replace(APP_TYPE, attributes=(replace(APP_TYPE.attributes[0], mandatory=True),))
    parser = BodyParser(EDITOR, mandatory)
    assert _problems(parser.parse({"Note": []}, element_id=17)) == [("/Note", "mandatory")]
    assert _problems(parser.parse({"name": ["n"]}, element_id=None)) == [("/Note", "mandatory")]
    assert _problems(parser.parse({"name": ["n"]}, element_id=17)) == []
