"""What the transfer benchmarks (`xlsx_transfer.py`, `archimate_transfer.py`) time: on one repository of
`massdata_scale.py`'s landscape, each run's export, its import into a new empty repository (every element
created) and its import back into the repository it came from (every element matched, nothing written),
each command its own process with its own peak RSS, the runs alternating per step so that none always
runs on a warmer machine."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness import blockrepo_command, scratch_database
from massdata_scale import load, running, settle

UNCHANGED = re.compile(r"│\s+0\s+│\s+0\s+│\s+0\s+│\s+0\s+│")  # the report: nothing created, updated, deleted
STEPS = ("export", "import into an empty repository", "import back, unchanged")
Row = tuple[str, str, float, float]  # step, run, seconds, peak RSS MiB


def time_transfers(elements: int, runs: Sequence[tuple[str, Path, str]]) -> list[Row]:
    """Each step of each run (label, source tree, file suffix), in step order."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with scratch_database(None, "transfer_source") as source:
            with running(source, folder, "transfer") as server:
                load(server, elements)
            settle(source)
            for step in STEPS:
                for label, tree, suffix in runs:
                    exported = folder / f"{label.replace(' ', '-')}.{suffix}"
                    if step == "export":
                        seconds, rss, _ = blockrepo_command(
                            source_tree=tree, arguments=["export", str(exported), "--database", source]
                        )
                    elif step.startswith("import into"):
                        with scratch_database(None, "transfer_target") as target:
                            Path(target.removeprefix("sqlite:///")).touch()
                            seconds, rss, _ = blockrepo_command(
                                source_tree=tree, arguments=["import", str(exported), "--database", target]
                            )
                    else:
                        seconds, rss, output = blockrepo_command(
                            source_tree=tree, arguments=["import", str(exported), "--database", source]
                        )
                        if not UNCHANGED.search(output):
                            raise RuntimeError(f"the unchanged import wrote something:\n{output[-2000:]}")
                    rows.append((step, label, seconds, rss))
    return rows


def print_transfers(elements: int, what: str, column: str, rows: Sequence[Row]) -> None:
    print(f"\n{elements:,} information systems (and {elements // 50:,} components), SQLite, {what}\n")
    header = f"{'step':<34} {column:<10} {'seconds':>8} {'elements/s':>11} {'peak RSS MiB':>13}"
    print(header)
    print("-" * len(header))
    total = elements + elements // 50
    for step, label, seconds, rss in rows:
        print(f"{step:<34} {label:<10} {seconds:>8.1f} {total / seconds:>11,.0f} {rss:>13.0f}")
