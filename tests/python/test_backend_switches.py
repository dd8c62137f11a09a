"""cmake/Backends.cmake: POLYINFER_<NAME> = AUTO|ON|OFF from -D, else the environment, else
AUTO; ON without the toolchain fails configure naming what to install; the configure table and
the show-backends target; the CMake presets. Runs CMake on tests/cmake/backend_switches, a
project that includes nothing but cmake/Backends.cmake."""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "cmake" / "backend_switches"
SWITCHES = ["CUDA", "HIP", "VULKAN", "OPENCL", "SYCL", "METAL"]


def configure(build, *defs, **env_vars):
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYINFER_")}
    env.update(env_vars)
    return subprocess.run(["cmake", "-S", str(PROJECT), "-B", str(build), "-G", "Ninja", *defs],
                          capture_output=True, text=True, env=env, timeout=120)


def table(build):
    """{backend: (on/off, why)} from the table the configure step wrote."""
    lines = (build / "backends.txt").read_text().splitlines()
    assert lines[1].split() == ["backend", "build", "why"]
    return {p[0]: (p[1], p[2]) for p in (l.split(None, 2) for l in lines[2:])}


@pytest.fixture(scope="module")
def defaults(tmp_path_factory):
    build = tmp_path_factory.mktemp("defaults")
    r = configure(build)
    assert r.returncode == 0, r.stderr
    return table(build)


def test_default_is_auto_and_the_table_says_why(defaults):
    assert list(defaults) == [s.lower() for s in SWITCHES]
    for name, (state, why) in defaults.items():
        assert state in ("on", "off")
        assert why.startswith("AUTO (default): "), why
    assert defaults["metal"] == ("off", "AUTO (default): needs macOS (the Apple SDK)")


def test_environment_beats_default_and_is_not_cached(tmp_path):
    r = configure(tmp_path, POLYINFER_CUDA="off", POLYINFER_HIP="OFF")
    assert r.returncode == 0, r.stderr
    t = table(tmp_path)
    assert t["cuda"] == ("off", "OFF (environment POLYINFER_CUDA)")
    assert t["hip"] == ("off", "OFF (environment POLYINFER_HIP)")
    r = configure(tmp_path)  # the variable gone, the default is back
    assert r.returncode == 0, r.stderr
    assert table(tmp_path)["cuda"][1].startswith("AUTO (default): ")


def test_command_line_beats_environment_and_stays(tmp_path):
    r = configure(tmp_path, "-DPOLYINFER_CUDA=OFF", POLYINFER_CUDA="AUTO")
    assert r.returncode == 0, r.stderr
    assert table(tmp_path)["cuda"] == ("off", "OFF (-DPOLYINFER_CUDA)")
    r = configure(tmp_path, POLYINFER_CUDA="AUTO")  # cached -D still beats the environment
    assert r.returncode == 0, r.stderr
    assert table(tmp_path)["cuda"] == ("off", "OFF (-DPOLYINFER_CUDA)")


def test_on_without_toolchain_fails_naming_the_package(tmp_path, defaults):
    r = configure(tmp_path, "-DPOLYINFER_METAL=ON")
    assert r.returncode != 0
    assert "POLYINFER_METAL=ON (-DPOLYINFER_METAL) but needs macOS (the Apple SDK): install " \
           "macOS with Xcode" in " ".join(r.stderr.split())
    missing = {"vulkan": "libvulkan-dev and glslc", "opencl": "opencl-headers and ocl-icd-opencl-dev"}
    for name, package in missing.items():
        if defaults[name][0] == "off":
            r = configure(tmp_path / name, **{f"POLYINFER_{name.upper()}": "ON"})
            assert r.returncode != 0
            assert f"install {package}" in " ".join(r.stderr.split()), r.stderr


def test_bad_value_is_an_error(tmp_path):
    r = configure(tmp_path, "-DPOLYINFER_HIP=maybe")
    assert r.returncode != 0
    assert "POLYINFER_HIP is 'MAYBE' (from -DPOLYINFER_HIP); it must be AUTO, ON or OFF" in r.stderr


def test_show_backends_target_prints_the_table(tmp_path):
    assert configure(tmp_path, "-DPOLYINFER_SYCL=OFF").returncode == 0
    r = subprocess.run(["cmake", "--build", str(tmp_path), "--target", "show-backends"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "  sycl     off    OFF (-DPOLYINFER_SYCL)" in r.stdout


def test_presets():
    r = subprocess.run(["cmake", "--list-presets"], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    names = [l.split('"')[1] for l in r.stdout.splitlines() if l.strip().startswith('"')]
    assert names == ["cpu", "cuda", "vulkan", "opencl", "all"]
