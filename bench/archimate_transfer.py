"""The ArchiMate export and import of a large repository beside the JSON export and import of the same
repository in the same run: time, elements a second and peak memory.

    python bench/archimate_transfer.py                      # 100,000 elements, SQLite
    python bench/archimate_transfer.py --elements 20000     # a quicker run
    python bench/archimate_transfer.py --csv --baseline /tmp/base/src   # Archi's CSV files, two trees

The repository is loaded as `bench/massdata_scale.py` loads it (information systems with five attribute
values and two related components each, one component per 50 systems). Per format, each command runs as
its own process (`python -m blockrepo`, Python's start included) and its peak RSS is its own (`wait4`):
`export FILE`, `import` of that file into a new empty repository (every element created) and `import` of
it back into the repository it came from (every element matched, nothing written). With `--csv`, Archi's
CSV files (a `.zip`) instead of both, for this tree and (`--baseline`) another source tree made with
`git archive <commit> src | tar -x -C /tmp/base`. Prints a table; asserts nothing.
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
    parser.add_argument("--csv", action="store_true", help="Archi's CSV files instead of the exchange file")
    parser.add_argument("--baseline", type=Path, help="with --csv: another source tree (its src/)")
    args = parser.parse_args()
    if args.csv:
        runs = [("this tree", HERE, "zip")] + ([("baseline", args.baseline, "zip")] if args.baseline else [])
        print_transfers(args.elements, "Archi's CSV files", "tree", time_transfers(args.elements, runs))
        return 0
    runs = [("ArchiMate", HERE, "xml"), ("JSON", HERE, "json")]
    print_transfers(args.elements, "ArchiMate and JSON", "format", time_transfers(args.elements, runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
