"""Cross-check polyinfer's reference quantizers against PyPI gguf (gguf-py).

Runs polyinfer-quant-tool (found in $POLYINFER_BIN_DIR) on fresh seeded random
data and requires:
  * dequantize: our float32 output bit-identical to gguf.quants.dequantize;
  * quantize (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): our bytes identical to
    gguf.quants.quantize.
A missing tool is a failure, not a skip.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

DEQUANT_TYPES = ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                 "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
QUANT_TYPES = ["BF16", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]

# Byte offsets of the f16 scale fields in each block (ggml-common.h); every
# other byte of a block is a free bit field, valid for any value.
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}
SEEDS = [1, 2, 3, 4]


def tool() -> Path:
    bin_dir = os.environ.get("POLYINFER_BIN_DIR")
    assert bin_dir, "POLYINFER_BIN_DIR is not set (the build's bin directory)"
    path = Path(bin_dir) / "polyinfer-quant-tool"
    assert path.is_file(), f"{path} is missing: build the polyinfer-quant-tool target"
    return path


def run_tool(mode: str, type_name: str, data: bytes, tmp_path: Path) -> bytes:
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    subprocess.run([str(tool()), mode, type_name, str(src), str(dst)], check=True)
    return dst.read_bytes()


def random_finite_f16(rng: np.random.Generator, count: int) -> np.ndarray:
    """Finite f16 values over many magnitudes (normal * 10^[-4, 1])."""
    mag = 10.0 ** rng.uniform(-4, 1, count)
    return (rng.standard_normal(count) * mag).astype(np.float16)


def random_bits_finite(rng: np.random.Generator, count: int, bits: int, exp_mask: int) -> np.ndarray:
    """Random bit patterns of a float format, redrawing inf/NaN (all-ones exponent)."""
    dtype = np.uint16 if bits == 16 else np.uint32
    words = rng.integers(0, 1 << bits, count, dtype=np.uint64).astype(dtype)
    bad = (words & dtype(exp_mask)) == dtype(exp_mask)
    words[bad] &= dtype(~exp_mask & ((1 << bits) - 1))  # clear the exponent: finite
    return words


def random_blocks(type_name: str, seed: int) -> np.ndarray:
    """Bytes of several random valid blocks of the type."""
    rng = np.random.default_rng(seed)
    qtype = T[type_name]
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    n_blocks = 64 if block_size == 1 else 24
    if type_name == "F32":
        return random_bits_finite(rng, n_blocks, 32, 0x7F800000).view(np.uint8)
    if type_name == "F16":
        return random_bits_finite(rng, n_blocks, 16, 0x7C00).view(np.uint8)
    if type_name == "BF16":
        return random_bits_finite(rng, n_blocks, 16, 0x7F80).view(np.uint8)
    blocks = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    for off in F16_FIELDS[type_name]:
        blocks[:, off:off + 2] = random_finite_f16(rng, n_blocks).view(np.uint8).reshape(-1, 2)
    return blocks.reshape(-1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("type_name", DEQUANT_TYPES)
def test_dequantize_bit_exact(type_name: str, seed: int, tmp_path: Path) -> None:
    blocks = random_blocks(type_name, seed)
    want = quants.dequantize(blocks, T[type_name]).astype(np.float32).reshape(-1)
    got = np.frombuffer(run_tool("dequant", type_name, blocks.tobytes(), tmp_path), dtype=np.float32)
    assert got.shape == want.shape
    assert np.all(np.isfinite(want))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def quant_input(seed: int) -> np.ndarray:
    """N(0,1) rows plus edge blocks: all-equal, outliers, all-zero, exact ties."""
    rng = np.random.default_rng(1000 + seed)
    normal = rng.standard_normal(32 * 40).astype(np.float32)
    equal = np.full(32, rng.standard_normal(), dtype=np.float32)
    outliers = rng.standard_normal(32).astype(np.float32)
    outliers[rng.choice(32, 3, replace=False)] *= np.float32(60.0)
    zeros = np.zeros(32, dtype=np.float32)
    # amax = 127 makes Q8_0's d = id = 1, so these k + 0.5 values are exact
    # rounding ties (halves away from zero, not to even).
    grid = (rng.integers(-127, 127, 32) + 0.5).astype(np.float32)
    grid[0] = np.float32(127)
    return np.concatenate([normal, equal, outliers, zeros, grid])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("type_name", QUANT_TYPES)
def test_quantize_bytes_exact(type_name: str, seed: int, tmp_path: Path) -> None:
    data = quant_input(seed)
    want = np.ascontiguousarray(quants.quantize(data, T[type_name])).view(np.uint8).reshape(-1)
    got = np.frombuffer(run_tool("quant", type_name, data.tobytes(), tmp_path), dtype=np.uint8)
    assert got.shape == want.shape
    mismatch = np.flatnonzero(got != want)
    assert mismatch.size == 0, f"{mismatch.size} bytes differ, first at byte {mismatch[:8]}"


def test_tool_rejects_partial_block(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(np.ones(33, dtype=np.float32).tobytes())
    result = subprocess.run([str(tool()), "quant", "Q8_0", str(src), str(dst)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "block size" in result.stderr
