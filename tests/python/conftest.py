"""Shared pytest fixtures: where the built binaries and the shared models are.

Both must exist: a missing binary or model fails the test loudly instead of
skipping it, so CI cannot pass by running nothing.
"""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bin_dir() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("POLYINFER_BIN_DIR", REPO / "build" / "bin"))
    if not (path / "polyinfer").is_file():
        pytest.fail(f"polyinfer binary not found in {path} (set POLYINFER_BIN_DIR)")
    return path


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("POLYINFER_MODELS_DIR", REPO.parent / "shared" / "models"))
    if not (path / "stories260K.gguf").is_file():
        pytest.fail(f"shared test models not found in {path} (set POLYINFER_MODELS_DIR)")
    return path
