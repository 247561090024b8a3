"""A small compiled metamodel and actors made by hand, for unit tests of the write core without a database."""

from __future__ import annotations

from dataclasses import replace

from blockrepo.access.actor import Actor, GroupRule
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, LiteralDef, RelationEnd, RelationTypeDef

APP, SERVER = 1, 2
OPEN_GROUP, CLOSED_GROUP = 1, 2

_BASE = AttributeDef(
    id=0,
    name="",
    description="",
    value_type="text",
    multiple=False,
    mandatory=False,
    group_id=OPEN_GROUP,
    group_name="open",
    unit=None,
    min_value=None,
    max_value=None,
    builtin_type_id=None,
    position=0,
)


def _attribute(attribute_id: int, name: str, value_type: str, **changes: object) -> AttributeDef:
    return replace(_BASE, id=attribute_id, name=name, value_type=value_type, position=attribute_id, **changes)  # type: ignore[arg-type]


STATUS = _attribute(
    1,
    "status",
    "enum",
    builtin_type_id=APP,
    literals=(LiteralDef(11, "CURRENT", "", None, 0), LiteralDef(12, "PLANNED", "", None, 1)),
)
NOTE = _attribute(2, "Note", "text")
COST = _attribute(3, "Cost", "number", min_value=0.0, max_value=1000.0)
SCORES = _attribute(4, "Scores", "number", multiple=True)
SINCE = _attribute(5, "Since", "date")
PERIOD = _attribute(6, "Period", "dateInterval")
ACTIVE = _attribute(7, "Active", "boolean")
OWNERS = _attribute(8, "Owners", "responsibility", multiple=True)
SECRET = _attribute(9, "Secret", "text", group_id=CLOSED_GROUP, group_name="closed")
SHARE = _attribute(10, "Share", "number")

RUNS_ON = RelationTypeDef(
    id=1,
    name="AppRunsOnServer",
    description="",
    source_type_id=APP,
    source_type="App",
    source_end="servers",
    target_type_id=SERVER,
    target_type="Server",
    target_end="apps",
    source_multiple=True,
    target_multiple=True,
    attributable=True,
    attributes=(SHARE,),
)
HOSTED_BY = RelationTypeDef(
    id=2,
    name="AppHostedBy",
    description="",
    source_type_id=APP,
    source_type="App",
    source_end="host",
    target_type_id=SERVER,
    target_type="Server",
    target_end="hosted",
    source_multiple=False,
    target_multiple=True,
    attributable=False,
)
SERVERS = RelationEnd("servers", RUNS_ON, True, APP, SERVER, "Server", True)
HOST = RelationEnd("host", HOSTED_BY, True, APP, SERVER, "Server", False)

APP_TYPE = BlockTypeDef(
    id=APP,
    name="App",
    display_name="App",
    abbreviation="APP",
    description="",
    hierarchical=True,
    hidden=False,
    position=0,
    builtins=(STATUS,),
    attributes=(NOTE, COST, SCORES, SINCE, PERIOD, ACTIVE, OWNERS, SECRET),
    ends={"servers": SERVERS, "host": HOST},
)

# May write App and read Server, but neither read nor write the closed group (role 99 alone reads it).
EDITOR = Actor(
    user_id=2,
    login="editor",
    supervisor=False,
    role_ids=frozenset({1}),
    role_names=frozenset({"editor"}),
    type_permissions={APP: frozenset({"read", "create", "update", "delete"}), SERVER: frozenset({"read"})},
    group_rules={CLOSED_GROUP: GroupRule(readers=frozenset({99}), writers=frozenset({99}))},
)
SUPERVISOR = Actor(user_id=1, login="system", supervisor=True)
