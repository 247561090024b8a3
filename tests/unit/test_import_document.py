"""The JSON import's document reader (`massdata.transfer.document`): the records it cuts out of the body
are exactly the records' bytes, whether the scanner finds their ends on a decoded window of the body or
the bracket walk of `value_text` does (no window), across window edges, non-ASCII and astral characters;
malformed files get the same 400 either way."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blockrepo.errors import BadRequest
from blockrepo.massdata.transfer import document
from blockrepo.massdata.transfer.document import parse_json_document

TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | TEXT
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
RECORDS = st.lists(st.dictionaries(TEXT, VALUES, max_size=4), max_size=8)


def body_of(records: dict[str, list[Any]], separator: bytes = b"") -> bytes:
    items = {
        name: b"[" + (b"," + separator).join(orjson.dumps(r) for r in rs) + b"]"
        for name, rs in records.items()
    }
    elements = b"{" + b",".join(orjson.dumps(name) + b":" + text for name, text in items.items()) + b"}"
    return b'{"format":"blockrepo-export",' + separator + b'"elements":' + elements + b"}"


def cut(body: bytes, window: int) -> dict[str, list[bytes]]:
    kept = document.DECODED_WINDOW
    document.DECODED_WINDOW = window
    try:
        parsed = parse_json_document(bytearray(body))
    finally:
        document.DECODED_WINDOW = kept
    return {name: [bytes(record) for record in records] for name, records in parsed.elements.items()}


@settings(max_examples=150, deadline=None)
@given(
    records=st.dictionaries(st.sampled_from(["A", "Bé", "C\U0001f680"]), RECORDS, max_size=3),
    window=st.integers(0, 64),
    separator=st.sampled_from([b"", b" ", b"\n  "]),
)
def test_records_are_cut_as_the_bracket_walk_cuts_them(
    records: dict[str, list[Any]], window: int, separator: bytes
) -> None:
    body = body_of(records, separator)
    windowed = cut(body, window)
    assert windowed == cut(body, 0)
    assert {name: [orjson.loads(r) for r in rs] for name, rs in windowed.items()} == records
    # The name each record's scanner read, which the import's survey takes instead of parsing the record.
    read = parse_json_document(bytearray(body)).names  # the default window
    for type_name, type_records in records.items():
        assert len(read[type_name]) == len(type_records)
        for name_read, record in zip(read[type_name], type_records, strict=True):
            assert name_read == record.get("name")  # each record fits a window: none is left UNREAD


@pytest.mark.parametrize("window", [0, 7, 1 << 20])
def test_non_ascii_and_astral_records_keep_their_bytes(window: int) -> None:
    astral = "".join(map(chr, range(0x1D518, 0x1D520))) + " \U0001f680"
    records = [{"name": "Bestellabwicklung ä"}, {"name": astral}, {"name": "plain"}, {"name": "€uro"}]
    body = body_of({"BusinessProcess": records}, b" ")
    cut_records = cut(body, window)["BusinessProcess"]
    assert [orjson.loads(r) for r in cut_records] == records
    assert b",".join(cut_records) in body.replace(b", ", b",")


@pytest.mark.parametrize("window", [0, 5, 1 << 20])
@pytest.mark.parametrize(
    "broken",
    [
        b'{"name": "a"',  # cut off
        b'{"name": NaN}',  # only the standard library's scanner would take it
        b'{"name": "a\xff"}',  # not UTF-8
        b'{"name": "a\nb"}',  # a raw control character in a string
        b'{"name" "a"}',
    ],
)
def test_a_malformed_record_is_400_either_way(
    broken: bytes, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b'{"format":"blockrepo-export","elements":{"A":[{"name":"x"},' + broken + b',{"name":"y"}]}}'
    monkeypatch.setattr(document, "DECODED_WINDOW", window)
    with pytest.raises(BadRequest) as raised:
        parse_json_document(bytearray(body))
    assert raised.value.instance_code == "malformed_json"
