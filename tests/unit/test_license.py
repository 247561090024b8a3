"""The LICENSE file, the package's metadata and the published API description name one licence."""

from __future__ import annotations

from importlib.metadata import metadata
from pathlib import Path

LICENSE = Path(__file__).resolve().parents[2] / "LICENSE"


def test_license_file_is_the_apache_license_the_metadata_names() -> None:
    text = LICENSE.read_text()
    assert "Apache License" in text[:200] and "Version 2.0, January 2004" in text[:200]
    assert "END OF TERMS AND CONDITIONS" in text
    installed = metadata("blockrepo")
    assert installed["License-Expression"] == "Apache-2.0"
    assert "LICENSE" in (installed.get_all("License-File") or [])
