"""Which passwords no account may have (API.md rule 1.9): its own login and the most common passwords."""

from __future__ import annotations

from functools import cache

from blockrepo.errors import ErrorItem, ValidationFailed

# Where the list of common passwords comes from, for the description and the README.
COMMON_PASSWORDS_SOURCE = (
    "the 30,000 most common passwords of the zxcvbn package (its `passwords` frequency list, MIT licence)"
)


@cache
def common_passwords() -> frozenset[str]:
    """The common passwords in lower case, read when a password is first set (not at start-up: the
    package's lists are most of a megabyte, and most processes never set a password)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(FREQUENCY_LISTS["passwords"])


def password_refusal(password: str, login: str) -> str | None:
    """Why `password` may not be the password of `login`, or None if it may. Compared ignoring case: the
    list is in lower case, and `Password1` is guessed as early as `password1`."""
    folded = password.lower()
    if folded == login.lower():
        return "the password must not be the login"
    if folded in common_passwords():
        return "the password is one of the most common passwords; choose a longer or less predictable one"
    return None


def refuse_weak_password(
    password: str, login: str, *, pointer: str = "/password", label: str = "the password"
) -> None:
    """400 `weak_password` at `pointer` for a password nobody may have (API.md rule 1.9): the login, or a
    common one; `label` names where it came from (the body's member, a setting, the command line)."""
    refusal = password_refusal(password, login)
    if refusal is not None:
        raise ValidationFailed(
            f"{label} is too easy to guess", errors=[ErrorItem(pointer, "weak_password", refusal)]
        )
