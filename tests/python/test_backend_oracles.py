"""Greedy text equals the oracles with every layer on one backend
(POLYINFER_ORACLE_BACKEND: vulkan on lavapipe in CI, cuda through scripts/gpu-check),
and `--verbose` shows every layer on it. A backend that is missing or unusable fails,
never skips."""
import json
import os
import subprocess

import pytest

BACKEND = os.environ.get("POLYINFER_ORACLE_BACKEND", "")


def test_oracle_texts_on_the_backend(bin_dir, models_dir):
    if not BACKEND:
        pytest.fail("POLYINFER_ORACLE_BACKEND is not set")
    cases = json.loads((models_dir / "oracles.json").read_text())["cases"]
    for case in cases:
        prompt = ("-p", case["prompt"]) if case["prompt"] else ()
        cmd = [str(bin_dir / "polyinfer"), "run", "-m", str(models_dir / case["model"]), *prompt,
               "--backend", BACKEND, "-ngl", "all", "--temp", "0",
               "-n", str(case["n_generated"]), "--no-display-prompt", "--verbose"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert r.stdout == case["expected_text"] + "\n", (case["model"], r.stderr)
        assert f"output on {BACKEND}:0" in r.stderr, r.stderr
        assert "on cpu:0" not in r.stderr.split("token embeddings")[0].split("offloaded")[1], \
            r.stderr
