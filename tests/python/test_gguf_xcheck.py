"""GGUF reader/writer cross-checked against an independent implementation: the
PyPI `gguf` package (llama.cpp's gguf-py).

Both directions: gguf-py reads what our writer writes with identical metadata and
tensor bytes; our reader reads what gguf-py writes with identical content.
"""
import json
import subprocess

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT


def tool(bin_dir, *args) -> str:
    exe = bin_dir / "polyinfer-gguf-tool"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing")
    return subprocess.run([str(exe), *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


def flatten(value):
    """gguf-py flattens nested arrays; do the same to our nested dump."""
    if isinstance(value, list):
        out = []
        for item in value:
            out.extend(flatten(item["value"]) if isinstance(item, dict) else flatten(item))
        return out
    return [value]



@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_gguf_py_reads_what_we_write(bin_dir, tmp_path, seed):
    path = tmp_path / f"sample-{seed}.gguf"
    tool(bin_dir, "write-sample", seed, path)
    ours = json.loads(tool(bin_dir, "dump", path))
    reader = gguf.GGUFReader(path)

    fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert list(fields) == [m["key"] for m in ours["metadata"]]
    for m in ours["metadata"]:
        field = fields[m["key"]]
        assert field.types[0].name == m["type"], m["key"]
        got = field.contents()
        if m["type"] == "ARRAY":
            assert field.types[-1].name == flatten_type(m), m["key"]
            assert got == flatten(m["value"]), m["key"]
        elif m["type"] in ("FLOAT32", "FLOAT64"):
            assert float(got) == m["value"], m["key"]
        else:
            assert got == m["value"], m["key"]

    assert [t.name for t in reader.tensors] == [t["name"] for t in ours["tensors"]]
    for theirs, t in zip(reader.tensors, ours["tensors"]):
        assert int(theirs.tensor_type) == t["type"], t["name"]
        assert [int(x) for x in theirs.shape] == t["shape"], t["name"]
        assert int(theirs.data_offset) == t["offset"], t["name"]
        assert int(theirs.n_bytes) == t["n_bytes"], t["name"]
        assert np.asarray(theirs.data).tobytes().hex() == t["data_hex"], t["name"]


def flatten_type(m):
    """Leaf element type of a (possibly nested) array in our dump."""
    if m.get("element_type") != "ARRAY":
        return m["element_type"]
    return flatten_type(m["value"][0])


# Every ggml type polyinfer computes with, plus two it only reads.
TENSOR_TYPES = [QT.F32, QT.F16, QT.BF16, QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0,
                QT.Q2_K, QT.Q3_K, QT.Q4_K, QT.Q5_K, QT.Q6_K, QT.Q8_1, QT.IQ4_NL]


def write_with_gguf_py(path, rng):
    """A file with every scalar type, string/numeric/nested arrays and every tensor type."""
    w = gguf.GGUFWriter(path, arch="llama")
    expected_md = {"general.architecture": ("STRING", "llama")}
    scalars = [
        ("x.u8", VT.UINT8, int(rng.integers(0, 2**8))),
        ("x.i8", VT.INT8, int(rng.integers(-2**7, 2**7))),
        ("x.u16", VT.UINT16, int(rng.integers(0, 2**16))),
        ("x.i16", VT.INT16, int(rng.integers(-2**15, 2**15))),
        ("x.u32", VT.UINT32, int(rng.integers(0, 2**32))),
        ("x.i32", VT.INT32, int(rng.integers(-2**31, 2**31))),
        ("x.u64", VT.UINT64, int(rng.integers(0, 2**63)) * 2 + 1),
        ("x.i64", VT.INT64, int(rng.integers(-2**63, 2**63 - 1))),
        ("x.f32", VT.FLOAT32, float(np.float32(rng.normal(0, 100)))),
        ("x.f64", VT.FLOAT64, float(rng.normal(0, 1e6))),
        ("x.bool", VT.BOOL, bool(rng.integers(0, 2))),
        ("x.str", VT.STRING, "Grüße ▁🦙 " + str(rng.integers(0, 1000))),
    ]
    for key, vt, val in scalars:
        w.add_key_value(key, val, vt)
        expected_md[key] = (vt.name, val)
    ints = [int(v) for v in rng.integers(-1000, 1000, size=21)]
    w.add_key_value("x.arr_i32", ints, VT.ARRAY, sub_type=VT.INT32)
    expected_md["x.arr_i32"] = ("ARRAY", ints)
    floats = [float(np.float32(v)) for v in rng.normal(size=13)]
    w.add_key_value("x.arr_f32", floats, VT.ARRAY, sub_type=VT.FLOAT32)
    expected_md["x.arr_f32"] = ("ARRAY", floats)
    strs = ["<s>", "▁hello", "x" * int(rng.integers(1, 50)), "ü"]
    w.add_array("x.arr_str", strs)
    expected_md["x.arr_str"] = ("ARRAY", strs)
    nested = [[int(v) for v in rng.integers(0, 100, size=3)], [int(v) for v in rng.integers(0, 100, size=2)]]
    w.add_array("x.nested", nested)
    expected_md["x.nested"] = ("ARRAY", nested[0] + nested[1])

    expected_tensors = []
    for i, qt in enumerate(TENSOR_TYPES):
        block, type_size = gguf.GGML_QUANT_SIZES[qt]
        ne0 = block * int(rng.integers(1, 4))
        ne1 = int(rng.integers(1, 5))
        raw = rng.integers(0, 256, size=(ne1, ne0 // block * type_size), dtype=np.uint8)
        name = f"t.{i}.{qt.name}"
        # uint8 data + raw_dtype: gguf-py derives the element shape from the byte shape.
        w.add_tensor(name, raw, raw_dtype=qt)
        expected_tensors.append((name, int(qt), [ne0, ne1], raw.tobytes().hex()))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected_md, expected_tensors


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_we_read_what_gguf_py_writes(bin_dir, tmp_path, seed):
    path = tmp_path / f"py-{seed}.gguf"
    expected_md, expected_tensors = write_with_gguf_py(path, np.random.default_rng(seed))
    ours = json.loads(tool(bin_dir, "dump", path))
    assert ours["version"] == 3
    got_md = {m["key"]: m for m in ours["metadata"]}
    assert set(got_md) == set(expected_md)
    for key, (vtype, value) in expected_md.items():
        m = got_md[key]
        assert m["type"] == vtype, key
        got = flatten(m["value"]) if vtype == "ARRAY" else m["value"]
        assert got == value, key
    assert [(t["name"], t["type"], t["shape"], t["data_hex"]) for t in ours["tensors"]] == \
        expected_tensors
