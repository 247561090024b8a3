"""A token's restriction only ever narrows its owner's rights (issue 26), whatever the owner's roles and the
restriction: property-based over random rights, and exactly the intersection of the two."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from blockrepo.access.actor import (
    FUNCTIONAL_PERMISSIONS,
    READING_FUNCTIONS,
    TYPE_ACTIONS,
    Actor,
    GroupRule,
    Restriction,
    restricted,
)

TYPES = range(1, 6)
GROUPS = range(1, 5)
ROLES = range(1, 4)

role_sets = st.frozensets(st.sampled_from(ROLES))
owners = st.builds(
    Actor,
    user_id=st.just(7),
    login=st.just("anna"),
    supervisor=st.booleans(),
    role_ids=role_sets,
    role_names=st.just(frozenset()),
    type_permissions=st.dictionaries(
        st.sampled_from(TYPES), st.frozensets(st.sampled_from(TYPE_ACTIONS)), max_size=len(TYPES)
    ),
    functional_permissions=st.frozensets(st.sampled_from(FUNCTIONAL_PERMISSIONS)),
    group_rules=st.dictionaries(
        st.sampled_from(GROUPS),
        st.builds(GroupRule, readers=role_sets, writers=role_sets),
        max_size=len(GROUPS),
    ),
)
restrictions = st.builds(
    Restriction,
    read_only=st.booleans(),
    type_ids=st.none() | st.frozensets(st.sampled_from(TYPES)),
    group_ids=st.none() | st.frozensets(st.sampled_from(GROUPS)),
    functions=st.none() | st.frozensets(st.sampled_from(FUNCTIONAL_PERMISSIONS)),
)


@given(owners, restrictions)
def test_a_restricted_actor_may_exactly_what_both_owner_and_restriction_allow(
    owner: Actor, restriction: Restriction
) -> None:
    token = restricted(owner, restriction)
    assert not token.supervisor  # nothing takes the see-everything shortcuts for a narrowed actor
    for type_id in TYPES:
        for action in TYPE_ACTIONS:
            allowed = (restriction.type_ids is None or type_id in restriction.type_ids) and not (
                restriction.read_only and action != "read"
            )
            assert token.can_type(type_id, action) == (owner.can_type(type_id, action) and allowed)
    for permission in FUNCTIONAL_PERMISSIONS:
        allowed = (restriction.functions is None or permission in restriction.functions) and not (
            restriction.read_only and permission not in READING_FUNCTIONS
        )
        assert token.can(permission) == (owner.can(permission) and allowed)
    for group_id in GROUPS:
        in_scope = restriction.group_ids is None or group_id in restriction.group_ids
        assert token.can_read_group(group_id) == (owner.can_read_group(group_id) and in_scope)
        assert token.can_write_group(group_id) == (
            owner.can_write_group(group_id) and in_scope and not restriction.read_only
        )


@given(owners)
def test_no_restriction_is_the_owner_itself(owner: Actor) -> None:
    assert restricted(owner, None) is owner
