"""`aliased_json_response` writes one value under several keys from a single encoding."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from blockrepo.api.responses import aliased_json_response


@pytest.mark.parametrize(
    "content",
    [
        {"query": "T;", "items": [{"id": [1], "name": ['a "quoted" ü']}], "nextCursor": None, "total": 1},
        {"items": [], "nextCursor": "abc"},
        {"items": [{"id": [2], "attributes": {3: ["non-string key"]}}]},
    ],
)
def test_the_value_appears_under_its_key_and_each_alias(content: dict[str, Any]) -> None:
    response = aliased_json_response(content, "items", "result", "also")
    assert response.media_type == "application/json"
    answer = orjson.loads(response.body)
    expected = orjson.loads(orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS))
    assert answer == {**expected, "result": expected["items"], "also": expected["items"]}
    names = list(answer)
    assert names[names.index("items") + 1 : names.index("items") + 3] == ["result", "also"]


def test_the_shared_value_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    page = [{"id": [n]} for n in range(3)]
    encoded: list[Any] = []
    dumps = orjson.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> bytes:
        encoded.append(value)
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(orjson, "dumps", counting)
    aliased_json_response({"type": "T", "items": page}, "items", "result")
    assert sum(value is page for value in encoded) == 1
