"""The xlsx export and import of a large repository: time, elements a second and peak memory, for this
tree and (with `--baseline`) another source tree in the same run, on the same repository.

    python bench/xlsx_transfer.py --baseline /tmp/base/src         # 100,000 elements, SQLite
    python bench/xlsx_transfer.py --elements 20000                 # a quicker run, this tree only

The repository is loaded as `bench/massdata_scale.py` loads it (information systems with five attribute
values and two related components each, one component per 50 systems). Per tree, each command runs as its
own process (`python -m blockrepo`, Python's start included) and its peak RSS is its own (`wait4`):
`export FILE.xlsx`, `import` of that workbook into a new empty repository (every element created), and
`import` of it back into the repository it came from (every element matched, nothing written). Make a
baseline tree with `git archive <commit> src | tar -x -C /tmp/base`. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from harness import blockrepo_command, scratch_database
from massdata_scale import load, running, settle

HERE = Path(__file__).resolve().parents[1] / "src"
UNCHANGED = re.compile(r"│\s+0\s+│\s+0\s+│\s+0\s+│\s+0\s+│")  # the report: nothing created, updated, deleted


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=100_000)
    parser.add_argument("--baseline", type=Path, help="another source tree (its src/) to measure beside this")
    args = parser.parse_args()
    trees = [("this tree", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with scratch_database(None, "xlsx_source") as source:
            with running(source, folder, "xlsx") as server:
                load(server, args.elements)
            settle(source)
            # Alternating trees per step, so that neither always runs on a warmer machine.
            for step in ("export", "import into an empty repository", "import back, unchanged"):
                for label, tree in trees:
                    workbook = folder / f"{label.replace(' ', '-')}.xlsx"
                    if step == "export":
                        seconds, rss, _ = blockrepo_command(
                            source_tree=tree, arguments=["export", str(workbook), "--database", source]
                        )
                    elif step.startswith("import into"):
                        with scratch_database(None, "xlsx_target") as target:
                            Path(target.removeprefix("sqlite:///")).touch()
                            seconds, rss, _ = blockrepo_command(
                                source_tree=tree, arguments=["import", str(workbook), "--database", target]
                            )
                    else:
                        seconds, rss, output = blockrepo_command(
                            source_tree=tree, arguments=["import", str(workbook), "--database", source]
                        )
                        if not UNCHANGED.search(output):
                            raise RuntimeError(f"the unchanged import wrote something:\n{output[-2000:]}")
                    rows.append((step, label, seconds, rss))
    print(f"\n{args.elements:,} information systems (and {args.elements // 50:,} components), SQLite, xlsx\n")
    header = f"{'step':<34} {'tree':<10} {'seconds':>8} {'elements/s':>11} {'peak RSS MiB':>13}"
    print(header)
    print("-" * len(header))
    total = args.elements + args.elements // 50
    for step, label, seconds, rss in rows:
        print(f"{step:<34} {label:<10} {seconds:>8.1f} {total / seconds:>11,.0f} {rss:>13.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
