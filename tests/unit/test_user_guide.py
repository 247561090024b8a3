"""The user guide builds as a site with MkDocs in strict mode: a link to a page or an anchor that does not
exist, or a page left out of the navigation, fails the build and so this test (issue 29)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_guide_builds_without_a_broken_link(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr[-6000:]
    assert (site / "index.html").is_file()
    assert (site / "guide" / "cookbook" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The check has teeth: the same configuration over a page with a dead link does not build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md#somewhere).\n")
    config = tmp_path / "mkdocs.yml"
    settings = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:")[0]
    config.write_text(settings + "\nnav:\n  - Home: index.md\n")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode != 0
    assert "missing.md" in built.stderr
