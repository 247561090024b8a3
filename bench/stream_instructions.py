"""Instructions per element of an NDJSON stream and a JSON export, counted by valgrind in a live server.

On a shared VM the wall-clock rates of bench/massdata_scale.py spread by 20 % and more between runs (the
same CPU-bound loop took 0.24 s in one hour and 0.42 s in another), too much to judge a change of 10 %.
Instruction counts do not depend on what else the machine does: the same build, data and request count
the same to a fraction of a percent, so two versions of the code can be compared on any machine.

    python bench/stream_instructions.py                    # 20,000 elements on SQLite
    python bench/stream_instructions.py --elements 5000 --database postgresql://postgres@127.0.0.1:5432/postgres

The data is that of bench/massdata_scale.py (loaded by a normal server, then analyzed). A second server
then runs under `valgrind --tool=callgrind` with instrumentation off; after a warm-up request it is
switched on (`callgrind_control -i on`) for exactly one NDJSON stream of the type, then for one JSON
export, so start-up and imports are not counted. Only the server's process is counted: with PostgreSQL the
database server's own work is not in the figure. Needs valgrind (Debian package valgrind); a run takes a
few minutes, as the server runs about 50 times slower under callgrind. Prints a table; asserts nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from harness import scratch_database
from massdata_scale import (
    TYPE,
    Server,
    argument_parser,
    check,
    export_json,
    load,
    running,
    settle,
    stream_ndjson,
)
from rich.console import Console
from rich.table import Table


def counted(server: Server, profile: Path, label: str, action: Callable[[], int]) -> tuple[int, int]:
    """(instructions, elements) of `action` in the server, which runs under callgrind with instrumentation
    off; the counts since the previous dump are dumped under `label` (see `_totals`)."""
    pid = str(server.process.pid)
    subprocess.run(["callgrind_control", "--instr=on", pid], check=True, capture_output=True)
    elements = action()
    subprocess.run(["callgrind_control", "--instr=off", pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "--dump=" + label, pid], check=True, capture_output=True)
    return _totals(profile.parent, profile.name, label), elements


def _totals(directory: Path, prefix: str, label: str) -> int:
    """The instructions of the dump named `label`: callgrind writes a file per dump, `<prefix>.<n>`,
    whose header names what triggered it."""
    trigger = f"desc: Trigger: dump {label}"
    total = 0
    for path in directory.glob(f"{prefix}.*"):
        lines = path.read_text(errors="replace").splitlines()
        if trigger in lines:
            total += sum(int(line.split()[1]) for line in lines if line.startswith("totals:"))
    return total


def main() -> int:
    args = argument_parser(__doc__, 20_000).parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("needs valgrind (Debian: apt-get install -y valgrind)", file=sys.stderr)
        return 2
    console = Console(width=120)
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="blockrepo-bench-logs-")))
        url = stack.enter_context(scratch_database(args.database, "stream_instructions"))
        with running(url, logs, "load") as server:
            load(server, args.elements)
        settle(url)
        profile = logs / "callgrind.out"
        wrapper = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={profile}",
        ]  # fmt: skip
        server = Server(url, logs, "callgrind", wrapper=wrapper, startup_seconds=900)
        try:
            check(server.client.get(f"/api/massdata/{TYPE}", params={"limit": 1}))  # caches, connection
            ndjson, streamed = counted(server, profile, "ndjson", lambda: stream_ndjson(server)[1])
            document = logs / "export.json"
            export, exported = counted(server, profile, "export", lambda: export_json(server, document)[1])
        finally:
            server.stop()
    table = Table(title=f"Instructions per element in the server ({args.elements:,} elements, callgrind)")
    table.add_column("measure")
    table.add_column("instructions per element", justify="right")
    table.add_column("in all", justify="right")
    table.add_row(
        f"NDJSON stream of {TYPE} ({streamed:,} elements)", f"{ndjson / streamed:,.0f}", f"{ndjson:,}"
    )
    table.add_row(f"JSON export ({exported:,} elements)", f"{export / exported:,.0f}", f"{export:,}")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
