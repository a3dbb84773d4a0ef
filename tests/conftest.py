"""Shared fixtures. The real corpus lives beside the checkout at ../shared/corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Root of the shared real-data corpus (PROVENANCE.md lists its libraries)."""
    if not (CORPUS / "PROVENANCE.md").is_file():
        pytest.fail(f"the shared corpus is missing at {CORPUS}; CI provides it beside the checkout")
    return CORPUS
