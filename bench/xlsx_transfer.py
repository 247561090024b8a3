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
from pathlib import Path

from transfer_steps import print_transfers, time_transfers

HERE = Path(__file__).resolve().parents[1] / "src"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=100_000)
    parser.add_argument("--baseline", type=Path, help="another source tree (its src/) to measure beside this")
    args = parser.parse_args()
    runs = [("this tree", HERE, "xlsx")] + ([("baseline", args.baseline, "xlsx")] if args.baseline else [])
    print_transfers(args.elements, "xlsx", "tree", time_transfers(args.elements, runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
