"""The cache of verified Basic credentials (auth/basic.py) on its own: keyed digests, time-to-live, bound."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

import pytest

from blockrepo.auth.basic import MAX_WAITING_FOR_ONE_CHECK, CredentialCache, Principal, credential_message
from blockrepo.errors import PasswordHashingBusy


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def principal(user_id: int, version: int = 1) -> Principal:
    return Principal(user_id=user_id, login=f"user{user_id}", credentials_version=version, via="basic")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("a:b", "c"), ("a", "b:c")),  # `login:password` would be "a:b:c" for both
        (("ab", "c"), ("a", "bc")),
        (("a", ""), ("", "a")),
        (("anna", "pw"), ("Anna", "pw")),
    ],
)
def test_different_credentials_never_share_a_digest(first: tuple[str, str], second: tuple[str, str]) -> None:
    cache = CredentialCache(10, 60)
    assert credential_message(*first) != credential_message(*second)
    assert cache.digest(*first) != cache.digest(*second)
    cache.put(cache.digest(*first), principal(1))
    assert cache.get(cache.digest(*second)) is None
    assert cache.get(cache.digest(*first)) == principal(1)


def test_digests_are_hmacs_under_a_per_process_key_and_hold_no_password() -> None:
    cache, other = CredentialCache(10, 60), CredentialCache(10, 60)
    login, password = "anna", "correct horse battery staple"
    digest = cache.digest(login, password)
    assert len(digest) == hashlib.sha256().digest_size
    assert digest == cache.digest(login, password)  # stable within the process
    assert digest != other.digest(login, password)  # keyed: another process's key gives another digest
    for unkeyed in (f"{login}:{password}".encode(), credential_message(login, password)):
        assert digest != hashlib.sha256(unkeyed).digest()
    assert digest == hmac.new(cache._key, credential_message(login, password), hashlib.sha256).digest()
    assert password.encode() not in digest and login.encode() not in digest
    cache.put(digest, principal(1))
    assert password not in repr(cache._entries)


def test_entries_expire_ttl_seconds_after_they_were_stored_even_when_used() -> None:
    clock = Clock()
    cache = CredentialCache(10, 60, clock=clock)
    digest = cache.digest("anna", "pw")
    cache.put(digest, principal(1))
    clock.now += 59
    assert cache.get(digest) == principal(1)  # a hit ...
    clock.now += 2
    assert cache.get(digest) is None  # ... does not extend the lifetime
    assert len(cache) == 0
    cache.put(digest, principal(1))  # verified again: a new lifetime
    clock.now += 60
    assert cache.get(digest) == principal(1)


def test_the_least_recently_used_entry_goes_when_full() -> None:
    cache = CredentialCache(3, 60, clock=Clock())
    digests = [cache.digest(f"user{n}", "pw") for n in range(5)]
    for n in range(3):
        cache.put(digests[n], principal(n))
    assert cache.get(digests[0]) == principal(0)  # user0 is now the most recently used
    cache.put(digests[3], principal(3))
    assert len(cache) == 3
    assert cache.get(digests[1]) is None  # the least recently used went
    assert [cache.get(digests[n]) for n in (0, 2, 3)] == [principal(0), principal(2), principal(3)]
    cache.put(digests[4], principal(4))
    assert cache.get(digests[0]) is None  # read longest ago (order of the last get: 0, 2, 3)
    assert len(cache) == 3


def test_size_zero_caches_nothing() -> None:
    cache = CredentialCache(0, 60)
    digest = cache.digest("anna", "pw")
    cache.put(digest, principal(1))
    assert cache.get(digest) is None
    assert len(cache) == 0


def test_forget_user_and_forget_one_entry() -> None:
    cache = CredentialCache(10, 60)
    anna_one, anna_two, bert = (
        cache.digest("anna", "one"),
        cache.digest("anna", "two"),
        cache.digest("bert", "x"),
    )
    cache.put(anna_one, principal(1))
    cache.put(anna_two, principal(1))
    cache.put(bert, principal(2))
    cache.forget_user(1)
    assert cache.get(anna_one) is None and cache.get(anna_two) is None
    assert cache.get(bert) == principal(2)
    cache.forget(bert)
    assert len(cache) == 0


def test_requests_waiting_for_a_failed_check_learn_it_without_a_check_of_their_own() -> None:
    cache = CredentialCache(10, 60)
    digest = cache.digest("system", "wrong")
    seen: list[bool] = []

    def wait_for_the_check() -> None:
        with cache.verifying(digest) as flight:
            seen.append(flight.failed)

    waiters = [threading.Thread(target=wait_for_the_check) for _ in range(3)]
    with cache.verifying(digest) as flight:
        for waiter in waiters:
            waiter.start()
        deadline = time.monotonic() + 30
        while flight.waiting < 4 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert flight.waiting == 4
        flight.failed = True  # what the authenticator records when the hash says no
    for waiter in waiters:
        waiter.join(30)
    assert seen == [True, True, True]
    with cache.verifying(digest) as later:  # a request after the burst checks afresh
        assert later.failed is False


def test_past_a_bound_of_waiters_a_request_for_the_same_check_is_refused_at_once() -> None:
    cache = CredentialCache(10, 60)
    digest = cache.digest("system", "wrong")

    def wait_for_the_check() -> None:
        with cache.verifying(digest):
            pass

    waiters = [threading.Thread(target=wait_for_the_check) for _ in range(MAX_WAITING_FOR_ONE_CHECK - 1)]
    with cache.verifying(digest) as flight:
        for waiter in waiters:
            waiter.start()
        deadline = time.monotonic() + 30
        while flight.waiting < MAX_WAITING_FOR_ONE_CHECK and time.monotonic() < deadline:
            time.sleep(0.001)
        with pytest.raises(PasswordHashingBusy), cache.verifying(digest):
            pass
        with cache.verifying(cache.digest("system", "other")):
            pass  # other credentials are not held up
    for waiter in waiters:
        waiter.join(30)
