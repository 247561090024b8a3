"""`blockrepo backup` and `blockrepo restore` of a large repository: time, rows a second and peak memory,
beside the JSON export of the same repository (the elements only) in the same run.

    python bench/backup.py                                  # 100,000 elements, SQLite
    python bench/backup.py --elements 20000                 # a quicker run
    python bench/backup.py --database postgresql://postgres@127.0.0.1:5432/postgres

The repository is loaded as `bench/massdata_scale.py` loads it (information systems with values and
relations, by bulk writes through `blockrepo serve`), so its history holds one change row per element.
Each command then runs as its own process; its peak RSS is that process's own (`wait4`). The restore goes
into a new empty database of the same kind, and is checked by backing that one up again and comparing the
row counts. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness import blockrepo_command, scratch_database
from massdata_scale import load, running, settle


def row_count(output: str) -> int:
    """The sum of the row counts a backup or restore table printed."""
    total = 0
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if len(cells) == 2 and cells[1].replace(",", "").isdigit():
            total += int(cells[1].replace(",", ""))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: fresh SQLite files)")
    parser.add_argument("--elements", type=int, default=100_000)
    args = parser.parse_args()
    rows: list[tuple[str, float, float, int, int]] = []
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with scratch_database(args.database, "backup_source") as source:
            with running(source, folder, "backup") as server:
                load(server, args.elements)
            settle(source)
            export = folder / "export.json"
            seconds, rss, _ = blockrepo_command(["export", str(export), "--database", source])
            rows.append(("export (elements only)", seconds, rss, args.elements, export.stat().st_size))
            backup = folder / "backup.jsonl.gz"
            seconds, rss, output = blockrepo_command(["backup", str(backup), "--database", source])
            backed_up = row_count(output)
            rows.append(("backup", seconds, rss, backed_up, backup.stat().st_size))
            with scratch_database(args.database, "backup_target") as target:
                if target.startswith("sqlite"):
                    Path(target.removeprefix("sqlite:///")).touch()
                seconds, rss, output = blockrepo_command(["restore", str(backup), "--database", target])
                rows.append(("restore", seconds, rss, row_count(output), backup.stat().st_size))
                again = folder / "again.jsonl.gz"
                _, _, output = blockrepo_command(["backup", str(again), "--database", target])
                if row_count(output) != backed_up:
                    raise RuntimeError(
                        f"the restored copy holds {row_count(output):,} rows, not {backed_up:,}"
                    )
    kind = "PostgreSQL" if args.database else "SQLite"
    print(f"\n{args.elements:,} information systems with values and relations, {kind}\n")
    header = f"{'command':<24} {'seconds':>8} {'rows/s':>10} {'peak RSS MiB':>13} {'rows':>10} {'file MB':>8}"
    print(header)
    print("-" * len(header))
    for name, seconds, rss, count, size in rows:
        per_second = count / seconds
        print(f"{name:<24} {seconds:>8.1f} {per_second:>10,.0f} {rss:>13.0f} {count:>10,} {size / 1e6:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
