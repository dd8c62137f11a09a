"""`polyinfer tokenize`: ids and pieces from the CLI, against oracles.json and the
llama.cpp vocab vectors; errors are one line with exit code 1."""
import json
import subprocess


def run(bin_dir, *args):
    return subprocess.run([str(bin_dir / "polyinfer"), "tokenize", *args],
                          capture_output=True, text=True, check=False)


def test_ids_only_matches_oracle_prompt_ids(bin_dir, models_dir):
    cases = json.loads((models_dir / "oracles.json").read_text())["cases"]
    prompts = [c for c in cases if c["prompt"]]
    assert len(prompts) == 2
    for case in prompts:
        r = run(bin_dir, "-m", str(models_dir / case["model"]), "-p", case["prompt"], "--ids-only")
        assert r.returncode == 0, r.stderr
        assert [int(t) for t in r.stdout.split()] == case["prompt_ids"]


def test_pieces_listing(bin_dir, models_dir):
    r = run(bin_dir, "-m", str(models_dir / "TinyStories-656K-Q8_0.gguf"), "-p", "Once upon a time")
    assert r.returncode == 0, r.stderr
    lines = [line.strip() for line in r.stdout.splitlines()]
    assert lines == ["1 -> '<|start_story|>'", "80 -> ' '", "147 -> 'On'", "201 -> 'ce '",
                     "282 -> 'upon a tim'", "57 -> 'e'"]


def test_no_bos_gives_the_vocab_vector(bin_dir, models_dir):
    vocab = models_dir / "vocab" / "ggml-vocab-llama-spm.gguf"
    first_input = vocab.with_suffix(".gguf.inp").read_text().split("\n__ggml_vocab_test__\n")[0]
    expected = [int(t) for t in vocab.with_suffix(".gguf.out").read_text().splitlines()[0].split()]
    r = run(bin_dir, "-m", str(vocab), "-p", first_input, "--ids-only", "--no-bos")
    assert r.returncode == 0, r.stderr
    assert [int(t) for t in r.stdout.split()] == expected


def test_parse_special(bin_dir, models_dir):
    vocab = str(models_dir / "vocab" / "ggml-vocab-llama-spm.gguf")
    parsed = run(bin_dir, "-m", vocab, "-p", "<s>hi", "--ids-only", "--no-bos", "--parse-special")
    plain = run(bin_dir, "-m", vocab, "-p", "<s>hi", "--ids-only", "--no-bos")
    assert parsed.stdout.split()[0] == "1"
    assert "1" not in plain.stdout.split()


def test_errors_are_one_line(bin_dir, models_dir, tmp_path):
    missing = run(bin_dir, "-m", str(tmp_path / "nope.gguf"), "-p", "x")
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1
    assert "nope.gguf" in missing.stderr
    not_gguf = tmp_path / "bad.gguf"
    not_gguf.write_bytes(b"not a gguf file at all")
    bad = run(bin_dir, "-m", str(not_gguf), "-p", "x")
    assert bad.returncode == 1
    assert len(bad.stderr.strip().splitlines()) == 1
