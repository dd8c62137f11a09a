"""Greedy text equals the oracles with every layer on one backend
(POLYINFER_ORACLE_BACKEND: vulkan on lavapipe in CI, cuda through scripts/gpu-check),
and `--verbose` shows every layer on it. A backend that is missing or unusable fails,
never skips."""
import json
import os
import re
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
        # Every layer and the output on the backend's devices (several GPUs split them).
        layer_lines = [l for l in r.stderr.splitlines()
                       if l.startswith("layers:") and " on " in l and "token" not in l]
        assert layer_lines and all(f" on {BACKEND}:" in l for l in layer_lines), r.stderr
        assert re.search(rf"output on {BACKEND}:\d", r.stderr), r.stderr
