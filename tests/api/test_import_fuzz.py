"""Property-based tests over import documents (`POST /api/massdata/import`): whatever the records hold
(known and random keys, names, parents and relation entries of any JSON type, values the element API
would refuse), the answer is never 5xx, and a refused import changes nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.api.test_elements_properties_fuzz import (
    FUZZ,
    PROPERTY_NAMES,
    check,
    encode,
    json_value,
    landscape,
    leaf,
    property_value,
)

__all__ = ["landscape"]  # the fixture: attributes of every value type, elements to refer to

IMPORT = "/api/massdata/import"
NAMES = ["Sales", "Order handling", "ERP", "New", "", "Sales"]
relation_entry = st.one_of(
    st.sampled_from(NAMES),
    st.fixed_dictionaries({"name": st.one_of(st.sampled_from(NAMES), leaf)}),
    st.fixed_dictionaries({"name": st.sampled_from(NAMES), "attributes": json_value}),
    json_value,
)
record_value = st.one_of(
    property_value,
    st.lists(relation_entry, max_size=3),
    st.sampled_from(NAMES),
)
record = st.one_of(
    st.fixed_dictionaries(
        {"name": st.one_of(st.sampled_from(NAMES), leaf)},
        optional={
            key: record_value for key in PROPERTY_NAMES if key not in ("name", "id", "type", "revision")
        },
    ),
    json_value,
)
document = st.fixed_dictionaries(
    {
        "format": st.just("blockrepo-export"),
        "elements": st.dictionaries(
            st.sampled_from(["BusinessProcess", "InformationSystem"]),
            st.lists(record, max_size=4),
            max_size=2,
        ),
    },
    optional={"users": st.lists(st.one_of(json_value, st.fixed_dictionaries({"login": leaf})), max_size=2)},
)


@FUZZ
@given(body=document, mode=st.sampled_from(["additive", "cud"]))
def test_import_never_fails_with_5xx_and_a_refusal_changes_nothing(
    client: TestClient, landscape: list[int], body: Any, mode: str
) -> None:
    check(client, "POST", f"{IMPORT}?mode={mode}", encode(body))
