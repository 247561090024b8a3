"""The shell and Python examples of the README and of every page of the user guide, each document run in the
order written against its own live `blockrepo serve --demo` on a fresh SQLite file (what `make run`
starts), so that following them can no longer break (issue 29).

How a document is read, and the rules it follows for that:

- Every fenced block whose info string starts with `sh`, `bash` or `python` runs; all of a document's blocks
  form one bash script (`set -euo pipefail`, every variable exported), in the order written, so what one
  block sets (`$ID`, `$TOKEN`, ...) serves the next; a Python block runs as `python3 -` fed the block, and
  reads what the shell blocks set from `os.environ`. Other fences (the server's printed output, JSON) do not
  run.
- A block that is not meant to run (`make run` itself, a synopsis, package installs, the test suite) has
  the HTML comment `<!-- not run: <why> -->` on a line of its own just before its fence (blank lines may
  come between); a block that serves while the next ones run (a webhook receiver) has
  `<!-- in the background: <why> -->` instead, and is stopped when the document's script ends. Either
  comment before anything but a runnable fence fails the test.
- The placeholders are assigned at most once each, at the start of a line: `PW=` (the password of
  `system`), `BASE=` (the server's address, required where anything runs), `HOOK_URL=` (a webhook
  receiver) and `RECEIVER_PORT=` (the port a document's own receiver listens on). The test replaces those
  lines with the live server's values, a free port, and a local receiver of its own (for `HOOK_URL`, unless
  the document assigns `RECEIVER_PORT`: its `HOOK_URL` then names its own receiver and is left as written).
  Two more serve the pages for operators: `DATABASE_FILE=` (the live server's SQLite file, for a backup
  taken while it serves) and `SPARE_PORT=` (another free port, for a second server a document starts).
  The server accepts receivers on this machine because it is started with
  `BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32`, as the README tells a reader who tries webhooks locally.
- `curl` is a shell function in the script: it adds `--silent --show-error`, and fails the script unless
  the answer's status is 2xx or 3xx, or, for a command whose last line ends in `# answers NNN`, exactly
  NNN. A command cut off by its own `--max-time` (the change stream) passes when it was answered 200. Every
  `curl` of a document's shell blocks must go through it (the test counts them), so none may set
  `-w`/`--write-out`.
- The script runs in a temporary directory: the files it writes (`cookies.txt`, `headers.txt`) land there.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import launch_server
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DEMO_PASSWORD = "readme-demo-password"
FENCE = re.compile(r"^```(?P<info>[^`\n]*)$")
MARKER = re.compile(r"^<!-- (?P<kind>not run|in the background): \S.* -->$")
PLACEHOLDERS = ("PW", "BASE", "HOOK_URL", "RECEIVER_PORT", "DATABASE_FILE", "SPARE_PORT")
EXPECTED = re.compile(r"\s# answers (?P<status>\d{3})\s*$")
CURL_CALL = re.compile(r"(?:^|[\s(|&;])curl\s")
PYTHON_END = "PYTHON_EXAMPLE_ENDS"

# The curl every example calls: it checks the status (see the module docstring) and logs each call. The
# background blocks are stopped when the script ends, however it ends: each runs as its own process group
# (job control on while it starts), so that what it started (a receiver, a server) stops with it.
PRELUDE = r"""set -euo pipefail
set -a
BACKGROUND=()
stop_background() {
  local pid
  for pid in "${BACKGROUND[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
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
    mode: str  # "run", "not run" or "in the background"

    @property
    def runs(self) -> bool:
        return self.mode != "not run"

    @property
    def python(self) -> bool:
        return language(self.info) == "python"

    def as_script(self, index: int) -> str:
        """The block as a part of the document's bash script."""
        code = f"python3 - <<'{PYTHON_END}'\n{self.text}{PYTHON_END}\n" if self.python else self.text
        if self.mode != "in the background":
            return code
        return f"set -m\n{{\n{code}}} > background-{index}.log 2>&1 &\nBACKGROUND+=($!)\nset +m\n"


def language(info: str) -> str | None:
    """The runnable language a fence's info string names (`sh`, `bash`, `python`, optionally followed by
    more words), or None."""
    first = info.split()[:1]
    if first in (["sh"], ["bash"]):
        return "sh"
    return "python" if first == ["python"] else None


def runnable_blocks(markdown: str) -> list[Block]:
    """The fenced shell and Python blocks in order, each with whether and how it runs."""
    lines = markdown.split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            if lines[index].startswith("<!-- not run") or lines[index].startswith("<!-- in the background"):
                assert MARKER.match(lines[index]), f"line {index + 1}: write <!-- not run: <why> -->"
                following = next((line for line in lines[index + 1 :] if line.strip()), "")
                fence = FENCE.match(following)
                assert fence and language(fence.group("info")), (
                    f"line {index + 1}: the comment must come just before a shell or Python block"
                )
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        info = opening.group("info").strip()
        if language(info):
            before = next((line for line in reversed(lines[:index]) if line.strip()), "")
            marked = MARKER.match(before)
            text = "\n".join(lines[index + 1 : end]) + "\n"
            blocks.append(Block(index + 1, info, text, marked.group("kind") if marked else "run"))
        index = end + 1
    return blocks


def guide_pages() -> list[Path]:
    """The user guide's pages in the order of mkdocs.yml's navigation."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = ROOT / config.get("docs_dir", "docs")

    def walk(entries: list[object]) -> list[Path]:
        found: list[Path] = []
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            if isinstance(value, list):
                found += walk(value)
            elif isinstance(value, str) and value.endswith(".md"):
                found.append(docs / value)
        return found

    return walk(config["nav"])


def has_examples(document: Path) -> bool:
    return any(block.runs for block in runnable_blocks(document.read_text(encoding="utf-8")))


# The README and the guide's pages with an example that runs (deployment and architecture have none).
DOCUMENTS = [document for document in [README, *guide_pages()] if has_examples(document)]


def with_placeholders(script: str, values: dict[str, str]) -> str:
    """The script with each placeholder's one assignment replaced by its value (see the module docstring)."""
    lines = script.split("\n")
    found = {
        name: [index for index, line in enumerate(lines) if line.startswith(f"{name}=")]
        for name in PLACEHOLDERS
    }
    for name, where in found.items():
        assert len(where) <= 1, f"{name}= is assigned more than once, at script lines {where}"
    assert found["BASE"], "a document whose examples run must assign BASE= at the start of a line"
    own_receiver = bool(found["RECEIVER_PORT"])
    for name, where in found.items():
        if where and not (name == "HOOK_URL" and own_receiver):
            lines[where[0]] = f"{name}={shlex.quote(values[name])}"
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


def curl_calls(blocks: list[Block]) -> int:
    """How many curl commands the shell blocks run (comment lines left out)."""
    code = (
        line
        for block in blocks
        if not block.python
        for line in block.text.split("\n")
        if not line.lstrip().startswith("#")
    )
    return sum(len(CURL_CALL.findall(line)) for line in code)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_readme_blocks_are_found() -> None:
    blocks = runnable_blocks(README.read_text())
    running = [block for block in blocks if block.runs]
    assert len(running) >= 5, running
    assert any(not block.runs and "make run" in block.text for block in blocks)
    # The first block to run defines what the others use.
    assert re.search(r"^BASE=", running[0].text, re.MULTILINE), running[0]


def test_every_guide_page_is_run() -> None:
    pages = guide_pages()
    assert len(pages) >= 10, pages
    for page in pages:
        assert page.is_file(), page
        if page.parent.name == "guide":
            assert has_examples(page), f"{page.name}: every page of the guide shows examples that run"
    on_disk = set((ROOT / "docs" / "guide").glob("*.md"))
    assert on_disk <= set(pages), f"guide pages missing from mkdocs.yml's nav: {sorted(on_disk - set(pages))}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_examples_run_in_order(document: Path, tmp_path: Path) -> None:
    assert shutil.which("curl") and shutil.which("bash"), "the examples need bash and curl"
    blocks = [block for block in runnable_blocks(document.read_text(encoding="utf-8")) if block.runs]
    name = document.relative_to(ROOT)
    script = "\n".join(
        f"# --- {name} line {block.line}\n{block.as_script(index)}" for index, block in enumerate(blocks)
    )
    calls = curl_calls(blocks)

    with Receiver() as receiver:
        server = launch_server(
            f"sqlite:///{tmp_path / 'examples.db'}",
            tmp_path,
            "--demo",
            env={
                "BLOCKREPO_DEMO_PASSWORD": DEMO_PASSWORD,
                "BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
            },
        )
        try:
            receiver_port = free_port()
            spare_port = next(port for port in iter(free_port, None) if port != receiver_port)
            values = {
                "PW": ADMIN_PASSWORD,
                "BASE": server.base_url,
                "HOOK_URL": receiver.url,
                "RECEIVER_PORT": str(receiver_port),
                "DATABASE_FILE": str(tmp_path / "examples.db"),
                "SPARE_PORT": str(spare_port),
            }
            runnable = with_expectations(with_placeholders(script, values))
            work = tmp_path / "work"
            work.mkdir()
            (work / "examples.sh").write_text(PRELUDE + runnable)
            environment = {
                # python3 of the examples: this interpreter's, first on the path.
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                "HOME": str(work),
                "LANG": "C.UTF-8",
                "README_CALLS": str(work / "calls.log"),
                "README_FAILURES": str(work / "failures.log"),
            }
            result = subprocess.run(
                ["bash", "examples.sh"],
                cwd=work,
                env=environment,
                capture_output=True,
                text=True,
                timeout=180,
            )
        finally:
            server.stop()

    made = (work / "calls.log").read_text().splitlines() if (work / "calls.log").exists() else []
    failures = (work / "failures.log").read_text() if (work / "failures.log").exists() else ""
    background = "".join(
        f"--- {log.name}\n{log.read_text()[-2000:]}\n" for log in work.glob("background-*.log")
    )
    report = (
        f"exit {result.returncode}\n--- failures\n{failures}\n--- calls\n" + "\n".join(made)
        + f"\n--- stderr\n{result.stderr[-6000:]}\n--- stdout\n{result.stdout[-3000:]}\n{background}"
        + f"\n--- server log\n{server.log()[-3000:]}"
    )  # fmt: skip
    assert result.returncode == 0, report
    assert failures == "", report
    assert len(made) == calls, f"{calls} curl commands in {name}, {len(made)} ran\n{report}"
