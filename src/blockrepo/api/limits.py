"""Limits in the published description named by the setting that holds them, filled in from the settings."""

from __future__ import annotations

import re
from typing import Any

from blockrepo.settings import Settings

# Route modules name the setting that bounds a number instead of writing the number: `{"x-setting":
# {"maximum": "max_page_size"}}` in a schema, `{setting:max_page_size}` in a text. The description then
# publishes the limits of the running service, whatever its operator configured.
SETTING_KEY = "x-setting"
SETTING_TOKEN = re.compile(r"\{setting:([a-z_]+)\}")
MIB = 1024 * 1024
# A page size: at least 1, at most the service's setting.
PAGE_SIZE_BOUNDS: dict[str, Any] = {"minimum": 1, SETTING_KEY: {"maximum": "max_page_size"}}


def _setting_text(settings: Settings, name: str) -> str:
    value = getattr(settings, name)
    if name.endswith("_bytes") and value % MIB == 0:
        return f"{value // MIB} MiB"
    return f"{value:,}"


def publish_limits(node: Any, settings: Settings) -> Any:
    """`node` with every limit a route module named by its setting replaced by the setting's value."""
    if isinstance(node, dict):
        bounds = node.get(SETTING_KEY, {})
        published = {
            key: publish_limits(value, settings) for key, value in node.items() if key != SETTING_KEY
        }
        published.update({keyword: getattr(settings, name) for keyword, name in bounds.items()})
        return published
    if isinstance(node, list):
        return [publish_limits(item, settings) for item in node]
    if isinstance(node, str) and "{setting:" in node:
        return SETTING_TOKEN.sub(lambda match: _setting_text(settings, match.group(1)), node)
    return node
