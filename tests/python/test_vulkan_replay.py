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


def run_profiled(bin_dir, models_dir, profile):
    """The first oracle case, greedy on Vulkan with POLYINFER_VULKAN_PROFILE=profile:
    (case, completed process), its text checked against the oracle."""
    case = json.loads((models_dir / "oracles.json").read_text())["cases"][0]
    assert case["model"] == "stories260K.gguf" and case["n_generated"] >= 128
    cmd = [str(bin_dir / "polyinfer"), "run", "-m", str(models_dir / case["model"]),
           "--backend", "vulkan", "-ngl", "all", "--temp", "0",
           "-n", str(case["n_generated"]), "--no-display-prompt"]
    env = dict(os.environ, POLYINFER_VULKAN_PROFILE=profile)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == case["expected_text"] + "\n", r.stderr
    return case, r


def test_generation_replays_its_recordings(bin_dir, models_dir):
    case, r = run_profiled(bin_dir, models_dir, "1")
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


SPAN = re.compile(r"^\s+(graph, first command to last|from a graph's end to the next one's start|"
                  r"host: from a read's return to the next graph queued)"
                  r"\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", re.M)


def test_span_profile_times_whole_graphs(bin_dir, models_dir):
    """POLYINFER_VULKAN_PROFILE=span: one pair of timestamps per graph, no
    per-node table (no barrier added), a span for every pass and a gap between
    each pass and the next; the text is unchanged."""
    case, r = run_profiled(bin_dir, models_dir, "span")
    assert "GPU time per node" not in r.stderr, r.stderr
    rows = {what: (int(n), float(mean), float(median)) for what, n, mean, median in
            SPAN.findall(r.stderr)}
    graphs = rows["graph, first command to last"]
    gaps = rows["from a graph's end to the next one's start"]
    # Every pass is one graph on the one device (the prompt, then each token).
    assert graphs[0] == case["n_generated"], r.stderr
    assert gaps[0] == graphs[0] - 1, r.stderr
    # The host's share: each step's launch after the logits of the one before.
    assert rows["host: from a read's return to the next graph queued"][0] == graphs[0] - 1, r.stderr
    assert graphs[1] > 0 and graphs[2] > 0, r.stderr
