"""The ArchiMate export and import of a large repository beside the JSON export and import of the same
repository in the same run: time, elements a second and peak memory.

    python bench/archimate_transfer.py                      # 100,000 elements, SQLite
    python bench/archimate_transfer.py --elements 20000     # a quicker run

The repository is loaded as `bench/massdata_scale.py` loads it (information systems with five attribute
values and two related components each, one component per 50 systems). Per format, each command runs as
its own process (`python -m blockrepo`, Python's start included) and its peak RSS is its own (`wait4`):
`export FILE`, `import` of that file into a new empty repository (every element created) and `import` of
it back into the repository it came from (every element matched, nothing written). Prints a table;
asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from harness import blockrepo_command, scratch_database
from massdata_scale import load, running, settle

HERE = Path(__file__).resolve().parents[1] / "src"
UNCHANGED = re.compile(r"│\s+0\s+│\s+0\s+│\s+0\s+│\s+0\s+│")  # nothing created, updated, deleted


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=100_000)
    args = parser.parse_args()
    formats = [("ArchiMate", "xml"), ("JSON", "json")]
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with scratch_database(None, "archimate_source") as source:
            with running(source, folder, "archimate") as server:
                load(server, args.elements)
            settle(source)
            # Alternating formats per step, so that neither always runs on a warmer machine.
            for step in ("export", "import into an empty repository", "import back, unchanged"):
                for label, suffix in formats:
                    workbook = folder / f"landscape.{suffix}"
                    if step == "export":
                        seconds, rss, _ = blockrepo_command(
                            source_tree=HERE, arguments=["export", str(workbook), "--database", source]
                        )
                    elif step.startswith("import into"):
                        with scratch_database(None, "archimate_target") as target:
                            Path(target.removeprefix("sqlite:///")).touch()
                            seconds, rss, _ = blockrepo_command(
                                source_tree=HERE, arguments=["import", str(workbook), "--database", target]
                            )
                    else:
                        seconds, rss, output = blockrepo_command(
                            source_tree=HERE, arguments=["import", str(workbook), "--database", source]
                        )
                        if not UNCHANGED.search(output):
                            raise RuntimeError(f"the unchanged import wrote something:\n{output[-2000:]}")
                    rows.append((step, label, seconds, rss))
    print(f"\n{args.elements:,} information systems (and {args.elements // 50:,} components), SQLite\n")
    header = f"{'step':<34} {'format':<10} {'seconds':>8} {'elements/s':>11} {'peak RSS MiB':>13}"
    print(header)
    print("-" * len(header))
    total = args.elements + args.elements // 50
    for step, label, seconds, rss in rows:
        print(f"{step:<34} {label:<10} {seconds:>8.1f} {total / seconds:>11,.0f} {rss:>13.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
