"""A generation on the Vulkan backend records a handful of command buffers and
replays them, rather than one per token, and keeps a decode step's plan for
the next (src/backends/vulkan/vk_plan_reuse.hpp): POLYINFER_VULKAN_PROFILE=1
prints the host time of each graph_submit by what the graph cache did (record,
replay, or replay with the plan reused; "prepare: ..." when the graph was
prepared while the step before it ran, then "prepared: submit" at its launch),
and the greedy text still equals the oracle."""
import json
import os
import re
import subprocess

ROW = re.compile(r"^\s+[\d.]+\s+[\d.]+%\s+(\d+)\s+[\d.]+\s+"
                 r"((?:prepare: )?(?:record|replay|replay, plan reused)|prepared: submit)$", re.M)


def test_generation_replays_its_recordings(bin_dir, models_dir):
    case = json.loads((models_dir / "oracles.json").read_text())["cases"][0]
    assert case["model"] == "stories260K.gguf" and case["n_generated"] >= 128
    cmd = [str(bin_dir / "polyinfer"), "run", "-m", str(models_dir / case["model"]),
           "--backend", "vulkan", "-ngl", "all", "--temp", "0",
           "-n", str(case["n_generated"]), "--no-display-prompt"]
    env = dict(os.environ, POLYINFER_VULKAN_PROFILE="1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == case["expected_text"] + "\n", r.stderr
    counts = {action: int(n) for n, action in ROW.findall(r.stderr)}

    def both(action):  # submitted as planned, or prepared ahead
        return counts.get(action, 0) + counts.get("prepare: " + action, 0)

    # The prompt's graph and the decode graph; a decode step's new KV length and
    # cache offset are parameter words, not a new recording.
    assert both("record") <= 4, r.stderr
    # Every pass launched once: submitted as it was planned, or prepared and
    # then launched (the graph prepared after the last token is never launched).
    planned_and_sent = counts.get("record", 0) + counts.get("replay", 0) + counts.get(
        "replay, plan reused", 0)
    prepared_sent = counts.get("prepared: submit", 0)
    assert planned_and_sent + prepared_sent == case["n_generated"], r.stderr
    # Each decode step is prepared while the one before it runs (docs/RUNTIME.md).
    assert prepared_sent >= case["n_generated"] - 4, r.stderr
    # Decode steps differ only in the KV length and the cache rows written: all
    # but the first few keep the plan.
    assert both("replay, plan reused") >= case["n_generated"] - 4, r.stderr
    # Every node was timed.
    assert "GPU time per node" in r.stderr and "FLASH_ATTN" in r.stderr, r.stderr
