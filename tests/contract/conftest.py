"""The contract tests' repository: the shared fixtures, with login throttling out of the run's reach."""

from __future__ import annotations

import pytest

from blockrepo.settings import Settings
from tests.conftest import make_settings

# Far beyond the few thousand requests of a contract run. Its `ignored_auth` check sends wrong passwords on
# purpose, and rule 1.4 would then answer 429 for `system` from the test client's address, failing every
# later check of the run; throttling is a rule of its own with its own tests (tests/api), not part of what
# the published description promises for each operation.
UNREACHABLE_LOGIN_FAILURES = 1_000_000


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(
        database_url,
        login_max_failures=UNREACHABLE_LOGIN_FAILURES,
        login_max_failures_per_address=UNREACHABLE_LOGIN_FAILURES,
    )
