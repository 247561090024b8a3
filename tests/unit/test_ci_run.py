""".ci/run probes Redis before the test runs: under CI=true an unreachable Redis fails the run (instead of
the Redis tests skipping themselves unnoticed); elsewhere it says once that they will be skipped.

The probe's functions are taken from the script itself and run in bash, with `.venv/bin/python` pointing
at this interpreter; only loopback addresses are used."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "run"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def function_source(name: str) -> str:
    """The definition of a shell function of .ci/run, from `name() {` to the `}` that closes it."""
    match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", SCRIPT.read_text(), flags=re.MULTILINE | re.DOTALL)
    assert match, f"{name} is not defined in {SCRIPT}"
    return match.group(0)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nobody listens there once the socket is closed


def require_redis(tmp_path: Path, redis_url: str, ci: str | None) -> subprocess.CompletedProcess[str]:
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    python = venv_bin / "python"  # a wrapper, not a symlink: the venv is found from the path run
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update({"REDIS_URL": redis_url, "REDIS_WAIT_SECONDS": "0"})
    if ci is not None:
        env["CI"] = ci
    program = "\n".join(
        [
            "set -euo pipefail",
            function_source("redis_reachable"),
            function_source("require_redis"),
            "require_redis",
        ]
    )
    return subprocess.run(
        ["bash", "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_run_calls_the_probe_before_the_tests() -> None:
    text = SCRIPT.read_text()
    assert 'REDIS_URL="${BLOCKREPO_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}"' in text
    assert re.search(r"^require_redis$", text, flags=re.MULTILINE)
    assert text.index("\nrequire_redis\n") < text.index("\nmake test ")


def test_unreachable_redis_fails_on_ci(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    result = require_redis(tmp_path, url, ci="true")
    assert result.returncode == 1, result
    assert f"CI: Redis at {url} is required" in result.stderr
    assert "is not reachable" in result.stderr


def test_unreachable_redis_is_reported_elsewhere(tmp_path: Path) -> None:
    for ci in (None, "false"):
        result = require_redis(tmp_path, f"redis://127.0.0.1:{closed_port()}/0", ci=ci)
        assert result.returncode == 0, result
        assert "the Redis tests will be skipped (CI=true would fail here)" in result.stderr


def test_reachable_redis_passes_quietly(tmp_path: Path, redis_settings: dict[str, str]) -> None:
    result = require_redis(tmp_path, redis_settings["redis_url"], ci="true")
    assert result.returncode == 0, result
    assert result.stderr == ""
