"""The README's shell examples, run in the order written against one live `blockrepo serve --demo` on a
fresh SQLite file (what `make run` starts), so that following the README can no longer break (issue 29).

How the README is read, and the rules it follows for that:

- Every fenced block whose info string starts with `sh` or `bash` runs; all of them form one bash script
  (`set -euo pipefail`), in the order written, so what one block sets (`$ID`, `$TOKEN`, ...) serves the next.
  Other fences (the server's printed output, Python) are not run.
- A block that is not meant to run (`make run` itself, a synopsis, package installs, the test suite) has
  the HTML comment `<!-- not run: <why> -->` on a line of its own just before its fence (blank lines may
  come between). Such a comment before anything but a shell fence fails the test.
- The placeholders are assigned once each, at the start of a line: `PW=` (the password of `system`),
  `BASE=` (the server's address) and `HOOK_URL=` (a webhook receiver). The test replaces those lines with
  the live server's values and a local receiver, which the server accepts because it is started with
  `BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32`, as the README tells a reader who tries webhooks locally.
- `curl` is a shell function in the script: it adds `--silent --show-error`, and fails the script unless
  the answer's status is 2xx or 3xx, or, for a command whose last line ends in `# answers NNN`, exactly
  NNN. A command cut off by its own `--max-time` (the change stream) passes when it was answered 200. Every
  `curl` of the README must go through it (the test counts them), so none may set `-w`/`--write-out`.
- The script runs in a temporary directory: the files it writes (`cookies.txt`, `headers.txt`) land there.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import launch_server
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
DEMO_PASSWORD = "readme-demo-password"
FENCE = re.compile(r"^```(?P<info>[^`\n]*)$")
NOT_RUN = re.compile(r"^<!-- not run: \S.* -->$")
PLACEHOLDERS = ("PW", "BASE", "HOOK_URL")
EXPECTED = re.compile(r"\s# answers (?P<status>\d{3})\s*$")
CURL_CALL = re.compile(r"(?:^|[\s(|&;])curl\s")

# The curl every README command calls: it checks the status (see the module docstring) and logs each call.
PRELUDE = r"""set -euo pipefail
curl() {
  local rc=0 status errors expected=${EXPECT_STATUS:-} args=${*//$'\n'/ }
  errors=$(mktemp)
  command curl --silent --show-error --write-out '%{stderr}readme-status %{http_code}\n' \
    "$@" 2>"$errors" || rc=$?
  status=$(sed -n 's/.*readme-status //p' "$errors" | tail -n 1)
  sed '/readme-status /d' "$errors" >&2
  rm -f "$errors"
  printf '%s %s curl %s\n' "${status:-none}" "$rc" "$args" >> "$README_CALLS"
  if [[ -n $expected ]]; then
    if [[ $status == "$expected" && $rc == 0 ]]; then return 0; fi
  elif [[ $status == [23][0-9][0-9] ]]; then
    if [[ $rc == 0 ]]; then return 0; fi
    if [[ $rc == 28 && $status == 200 && " $args " == *" --max-time "* ]]; then return 0; fi
  fi
  printf 'FAILED (status %s, curl exit %s, expected %s): curl %s\n' \
    "${status:-none}" "$rc" "${expected:-2xx}" "$args" | tee -a "$README_FAILURES" >&2
  return 1
}
"""


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    info: str
    text: str
    run: bool


def is_shell(info: str) -> bool:
    """Whether a fence's info string names a shell (`sh`, `bash`, optionally followed by more words)."""
    return info.split()[:1] in (["sh"], ["bash"])


def shell_blocks(markdown: str) -> list[Block]:
    """The fenced shell blocks in order, each marked whether it runs."""
    lines = markdown.split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            if lines[index].startswith("<!-- not run"):
                assert NOT_RUN.match(lines[index]), f"line {index + 1}: write <!-- not run: <why> -->"
                following = next((line for line in lines[index + 1 :] if line.strip()), "")
                fence = FENCE.match(following)
                assert fence and is_shell(fence.group("info")), (
                    f"line {index + 1}: a not-run comment must come just before a shell block"
                )
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        info = opening.group("info").strip()
        if is_shell(info):
            before = next((line for line in reversed(lines[:index]) if line.strip()), "")
            text = "\n".join(lines[index + 1 : end]) + "\n"
            blocks.append(Block(index + 1, info, text, run=NOT_RUN.match(before) is None))
        index = end + 1
    return blocks


def with_placeholders(script: str, values: dict[str, str]) -> str:
    """The script with each placeholder's one assignment replaced by its value."""
    lines = script.split("\n")
    for name in PLACEHOLDERS:
        found = [index for index, line in enumerate(lines) if line.startswith(f"{name}=")]
        assert len(found) == 1, f"the README must assign {name}= once at the start of a line: {found}"
        lines[found[0]] = f"{name}={shlex.quote(values[name])}"
    return "\n".join(lines)


def with_expectations(script: str) -> str:
    """Each command whose last line ends in `# answers NNN` runs with EXPECT_STATUS=NNN."""
    lines = script.split("\n")
    for index, line in enumerate(lines):
        marked = EXPECTED.search(line)
        if marked is None:
            continue
        start = index
        while start > 0 and lines[start - 1].rstrip().endswith("\\"):
            start -= 1
        first = lines[start]
        assert first.startswith("curl "), f"`# answers` marks a command that starts with curl, not {first!r}"
        lines[start] = f"EXPECT_STATUS={marked.group('status')} {first}"
    return "\n".join(lines)


def curl_calls(script: str) -> int:
    """How many curl commands the script runs (comment lines left out)."""
    code = (line for line in script.split("\n") if not line.lstrip().startswith("#"))
    return sum(len(CURL_CALL.findall(line)) for line in code)


def test_readme_blocks_are_found() -> None:
    blocks = shell_blocks(README.read_text())
    running = [block for block in blocks if block.run]
    assert len(running) >= 5, running
    assert any(not block.run and "make run" in block.text for block in blocks)
    # The first block to run defines what the others use.
    assert re.search(r"^BASE=", running[0].text, re.MULTILINE), running[0]


def test_readme_walkthrough_runs_in_order(tmp_path: Path) -> None:
    assert shutil.which("curl") and shutil.which("bash"), "the README's examples need bash and curl"
    blocks = [block for block in shell_blocks(README.read_text()) if block.run]
    script = "\n".join(f"# --- README.md line {block.line}\n{block.text}" for block in blocks)
    calls = curl_calls(script)

    with Receiver() as receiver:
        server = launch_server(
            f"sqlite:///{tmp_path / 'readme.db'}",
            tmp_path,
            "--demo",
            env={
                "BLOCKREPO_DEMO_PASSWORD": DEMO_PASSWORD,
                "BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
            },
        )
        try:
            values = {"PW": ADMIN_PASSWORD, "BASE": server.base_url, "HOOK_URL": receiver.url}
            runnable = with_expectations(with_placeholders(script, values))
            work = tmp_path / "work"
            work.mkdir()
            (work / "readme.sh").write_text(PRELUDE + runnable)
            environment = {
                # python3 of the README's one-liners: this interpreter's, first on the path.
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                "HOME": str(work),
                "LANG": "C.UTF-8",
                "README_CALLS": str(work / "calls.log"),
                "README_FAILURES": str(work / "failures.log"),
            }
            result = subprocess.run(
                ["bash", "readme.sh"], cwd=work, env=environment, capture_output=True, text=True, timeout=180
            )
        finally:
            server.stop()

    made = (work / "calls.log").read_text().splitlines() if (work / "calls.log").exists() else []
    failures = (work / "failures.log").read_text() if (work / "failures.log").exists() else ""
    report = (
        f"exit {result.returncode}\n--- failures\n{failures}\n--- calls\n" + "\n".join(made)
        + f"\n--- stderr\n{result.stderr[-6000:]}\n--- stdout\n{result.stdout[-3000:]}"
        + f"\n--- server log\n{server.log()[-3000:]}"
    )  # fmt: skip
    assert result.returncode == 0, report
    assert failures == "", report
    assert len(made) == calls, f"{calls} curl commands in the README, {len(made)} ran\n{report}"
