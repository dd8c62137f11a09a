"""`polyinfer backends` end to end: the JSON report parsed back, every broken-plugin status
line, the selection precedence (--flag > POLYINFER_* > config file > default), errors for
explicit requests that cannot be honoured, no GPU runtime linked into the executable, and a
relocatable `cmake --install` tree.

The test plugins come from tests/plugins (POLYINFER_TEST_PLUGIN_DIR); the build tree from
POLYINFER_BUILD_DIR. Both are set by CTest; a missing one fails the test."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

KNOWN = ["cuda", "hip", "vulkan", "opencl", "sycl", "metal", "cpu"]


def required_dir(var: str) -> pathlib.Path:
    value = os.environ.get(var)
    if not value or not pathlib.Path(value).is_dir():
        pytest.fail(f"{var} must name an existing directory (got {value!r})")
    return pathlib.Path(value)


@pytest.fixture(scope="module")
def plugins() -> pathlib.Path:
    return required_dir("POLYINFER_TEST_PLUGIN_DIR")


@pytest.fixture(scope="module")
def build_dir() -> pathlib.Path:
    return required_dir("POLYINFER_BUILD_DIR")


@pytest.fixture
def config_home(tmp_path) -> pathlib.Path:
    """An XDG_CONFIG_HOME of our own, so the user's config file never leaks in."""
    home = tmp_path / "xdg"
    (home / "polyinfer").mkdir(parents=True)
    return home


def run(exe, args, config_home, **env_vars):
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYINFER_")}
    env["XDG_CONFIG_HOME"] = str(config_home)
    env.update({k: str(v) for k, v in env_vars.items()})
    return subprocess.run([str(exe), "backends", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def report(exe, args, config_home, **env_vars):
    r = run(exe, ["--json", *args], config_home, **env_vars)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def picked(rep):
    return [d["device"] for d in rep["selection"]["devices"]]


def compiled_in_build(build_dir):
    """{backend: on?} from the table cmake/Backends.cmake wrote at configure time."""
    table = (build_dir / "backends.txt").read_text().splitlines()
    return {parts[0]: parts[1] == "on" for parts in (l.split() for l in table[2:]) if parts}


def test_every_known_backend_is_listed_and_cpu_is_picked(bin_dir, build_dir, config_home):
    rep = report(bin_dir / "polyinfer", [], config_home)
    bin_dir = bin_dir.resolve()  # the registry reports where the executable really is
    assert [b["name"] for b in rep["backends"]] == KNOWN
    assert [b["rank"] for b in rep["backends"]] == list(range(1, 8))
    assert rep["search_path"] == [str(bin_dir), str(build_dir / "lib" / "polyinfer")]
    assert rep["probe_timeout_ms"] == 10000
    compiled = compiled_in_build(build_dir)
    assert sorted(compiled) == sorted(KNOWN[:-1])
    for b in rep["backends"][:-1]:
        assert b["compiled"] == compiled[b["name"]], b["name"]
        # A GPU plugin this build made sits beside the executable and is found there
        # (whether it is usable depends on the machine: lavapipe makes vulkan usable).
        plugin = bin_dir / f"libpolyinfer-{b['name']}.so"
        if plugin.exists():
            assert b["plugin"] == str(plugin) and b["loaded"] == (b["status"] == "usable"), b
            continue
        assert (b["status"], b["loaded"], b["plugin"], b["devices"]) == ("not found", False, None, [])
        assert b["status_line"] == f"not found (searched: {bin_dir}, {build_dir}/lib/polyinfer)"
    cpu = rep["backends"][-1]
    assert (cpu["status"], cpu["loaded"], cpu["built_in"], cpu["compiled"]) == ("usable", True, True, True)
    dev = cpu["devices"][0]
    assert dev["kind"] == "cpu" and dev["index"] == 0 and dev["host_visible"]
    assert 0 < dev["memory_free"] <= dev["memory_total"]
    assert dev["compute_version"] != ""
    assert picked(rep) == ["cpu:0"]
    assert "no accelerator selected: the CPU runs it all" in rep["selection"]["reasons"]


def test_text_report(bin_dir, config_home):
    r = run(bin_dir / "polyinfer", [], config_home)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"plugin search path: {bin_dir.resolve()}:")
    rows = {l.split()[1]: l.split(None, 3) for l in lines[2:] if l[:1].isdigit()}
    assert list(rows) == KNOWN
    assert rows["cpu"][2:] == ["built", "in  usable"]
    assert rows["hip"][3].startswith("not found (searched: ")
    assert any(l.startswith("selected: cpu:0 (") for l in lines)


def test_each_broken_plugin_gets_its_status_line(bin_dir, plugins, config_home):
    rep = report(bin_dir / "polyinfer", [], config_home,
                 POLYINFER_BACKEND_PATH=plugins / "broken", POLYINFER_PROBE_TIMEOUT_MS=500)
    lines = {b["name"]: b["status_line"] for b in rep["backends"]}
    broken = plugins / "broken"
    assert lines == {
        "cuda": f"missing symbol: polyinfer_backend_entry not exported by {broken}/libpolyinfer-cuda.so",
        "hip": f"ABI mismatch (plugin v{rep['abi_version'] + 1}, host v{rep['abi_version']})",
        "vulkan": "broken: probe crashed (signal 11)",
        "opencl": "broken: probe hung (killed after 0.5 s)",
        "sycl": "unusable: fake driver 0.9 is too old (need 1.0)",
        "metal": "cannot load: libpi_test_missing_dep.so: cannot open shared object file: "
                 "No such file or directory",
        "cpu": "usable",
    }
    assert all(not b["loaded"] for b in rep["backends"][:-1])
    assert all(b["plugin"] == str(broken / f"libpolyinfer-{b['name']}.so") for b in rep["backends"][:-1])
    assert picked(rep) == ["cpu:0"]
    assert rep["probe_timeout_ms"] == 500


def test_dedupe_and_priority(bin_dir, plugins, config_home):
    exe, path = bin_dir / "polyinfer", plugins / "dedupe"
    rep = report(exe, [], config_home, POLYINFER_BACKEND_PATH=path)
    assert picked(rep) == ["cuda:0", "cpu:0"]
    assert ("vulkan:0 (Fake GPU (vulkan)) passed over: the same GPU as cuda:0 (pci:0000:65:00.0)"
            in rep["selection"]["reasons"])
    vulkan = next(b for b in rep["backends"] if b["name"] == "vulkan")
    assert [d["bus_id"] for d in vulkan["devices"]] == ["65:00.0", "0000:00:02.0"]
    assert [d["kind"] for d in vulkan["devices"]] == ["gpu", "igpu"]
    assert vulkan["loaded"] and vulkan["plugin"] == str(path / "libpolyinfer-vulkan.so")
    rep = report(exe, ["--priority", "vulkan"], config_home, POLYINFER_BACKEND_PATH=path)
    assert picked(rep) == ["vulkan:0", "cpu:0"]
    assert rep["selection"]["priority"][:2] == ["vulkan", "cuda"]
    assert [b["priority"] for b in rep["backends"][:3]] == [2, 3, 1]
    assert picked(report(exe, ["--device", "vulkan:0"], config_home,
                         POLYINFER_BACKEND_PATH=path)) == ["vulkan:0", "cpu:0"]


def test_plugin_of_another_name_is_listed_and_its_stdout_chatter_kept_out(bin_dir, plugins,
                                                                           config_home):
    r = run(bin_dir / "polyinfer", ["--json"], config_home,
            POLYINFER_BACKEND_PATH=plugins / "extra")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)  # the banner did not land in the JSON
    assert r.stderr.count("fake driver banner from fakedev") == 2  # the child's probe, then ours
    assert [b["name"] for b in rep["backends"]] == KNOWN[:-1] + ["fakedev", "cpu"]
    extra = rep["backends"][-2]
    assert (extra["known"], extra["compiled"], extra["status"]) == (False, False, "usable")
    assert picked(rep) == ["fakedev:0", "cpu:0"]
    assert picked(report(bin_dir / "polyinfer", ["--backend", "fakedev"], config_home,
                         POLYINFER_BACKEND_PATH=plugins / "extra")) == ["fakedev:0", "cpu:0"]
    r = run(bin_dir / "polyinfer", [], config_home, POLYINFER_BACKEND_PATH=plugins / "extra")
    assert "fake driver banner" not in r.stdout
    assert [l.split()[1:3] for l in r.stdout.splitlines() if l.startswith("7 ")] == \
        [["fakedev", "external"]]


@pytest.mark.parametrize("field,cli,env,config,expect", [
    ("backend", ["--backend", "cpu"], {"POLYINFER_BACKEND": "vulkan"}, {"backend": "cuda"},
     [["cpu:0"], ["vulkan:0", "vulkan:1", "cpu:0"], ["cuda:0", "cpu:0"]]),
    ("priority", ["--priority", "cuda"], {"POLYINFER_PRIORITY": "vulkan"},
     {"priority": ["cpu"]}, [["cuda:0", "cpu:0"], ["vulkan:0", "cpu:0"], ["cpu:0"]]),
    ("devices", ["--device", "vulkan:1"], {"POLYINFER_DEVICES": "cuda:0"},
     {"devices": ["vulkan:0"]}, [["vulkan:1", "cpu:0"], ["cuda:0", "cpu:0"], ["vulkan:0", "cpu:0"]]),
])
def test_precedence(bin_dir, plugins, config_home, field, cli, env, config, expect):
    """Command line beats environment beats config file beats default, for each field."""
    exe, path = bin_dir / "polyinfer", plugins / "dedupe"
    (config_home / "polyinfer" / "config.json").write_text(json.dumps(config))
    assert picked(report(exe, cli, config_home, POLYINFER_BACKEND_PATH=path, **env)) == expect[0]
    assert picked(report(exe, [], config_home, POLYINFER_BACKEND_PATH=path, **env)) == expect[1]
    assert picked(report(exe, [], config_home, POLYINFER_BACKEND_PATH=path)) == expect[2]
    (config_home / "polyinfer" / "config.json").unlink()
    assert picked(report(exe, [], config_home, POLYINFER_BACKEND_PATH=path)) == ["cuda:0", "cpu:0"]


def test_config_options_and_disabled(bin_dir, plugins, config_home):
    (config_home / "polyinfer" / "config.json").write_text(
        json.dumps({"disabled": ["cuda"], "options": {"cpu": "threads=2"}}))
    rep = report(bin_dir / "polyinfer", [], config_home, POLYINFER_BACKEND_PATH=plugins / "dedupe")
    assert picked(rep) == ["vulkan:0", "cpu:0"]
    assert rep["selection"]["devices"][1]["options"] == "threads=2"
    assert f"cuda: disabled by {config_home}/polyinfer/config.json" in rep["selection"]["reasons"]


def one_line_error(r):
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("polyinfer: error: ")
    return lines[0][len("polyinfer: error: "):]


@pytest.mark.parametrize("args,env,start", [
    (["--backend", "hip"], {}, "--backend: hip is not usable"),
    (["--backend", "cuda"], {}, "--backend: cuda is not usable"),
    (["--device", "cpu:1"], {}, "--device cpu:1: cpu has 1 device(s), 0..0; available: "),
    # metal: a backend no Linux build has (a built vulkan plugin is usable on lavapipe).
    ([], {"POLYINFER_BACKEND": "metal"}, "POLYINFER_BACKEND: metal is not usable"),
    ([], {"POLYINFER_DEVICES": "metal:0"}, "POLYINFER_DEVICES metal:0: metal is not usable"),
    (["--backend", "gpu"], {}, "--backend: no backend is named 'gpu' (known: cuda, hip, vulkan, "
                               "opencl, sycl, metal, cpu)"),
    (["--device", "cuda"], {}, "--device: 'cuda' is not NAME:INDEX (e.g. cuda:0)"),
])
def test_explicit_requests_that_cannot_be_honoured_fail(bin_dir, config_home, args, env, start):
    err = one_line_error(run(bin_dir / "polyinfer", args, config_home, **env))
    assert err.startswith(start), err
    # The devices offered instead end with the CPU (a built GPU plugin may come first).
    assert "available: " not in start or " cpu:0 (" in err or "available: cpu:0 (" in err, err
    if "is not usable" in start:
        # Why: not found, or (a plugin this build compiled, like cuda without a driver) unusable.
        assert ("not found (searched: " in err or ": unusable: " in err) and err.endswith(")") \
            and "cpu:0 (" in err, err


def test_malformed_config_is_a_one_line_error(bin_dir, config_home):
    path = config_home / "polyinfer" / "config.json"
    path.write_text('{"backend": "cpu",\n "priority": [cuda]}\n')
    err = one_line_error(run(bin_dir / "polyinfer", [], config_home))
    assert err.startswith(f"{path}: [json.exception.parse_error.101] parse error at line 2"), err


def test_executable_links_no_gpu_runtime(bin_dir):
    libs = subprocess.run(["ldd", str(bin_dir / "polyinfer")], capture_output=True, text=True,
                          check=True).stdout
    for runtime in ["libcuda", "libcudart", "libcublas", "libvulkan", "libOpenCL", "libamdhip",
                    "libhipblas", "librocm", "libze_loader", "libsycl"]:
        assert runtime not in libs, libs


def test_install_tree_is_relocatable(bin_dir, build_dir, plugins, tmp_path, config_home):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)],
                   check=True, capture_output=True)
    exe, plugin_dir = prefix / "bin" / "polyinfer", prefix / "lib" / "polyinfer"
    assert exe.is_file() and plugin_dir.is_dir()
    runpath = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True,
                             check=True).stdout
    assert "$ORIGIN/../lib" in runpath
    shutil.copy(plugins / "order_a" / "libpolyinfer-cuda.so", plugin_dir)
    moved = tmp_path / "moved"
    for root in (prefix, moved):
        if root == moved:
            prefix.rename(moved)
        rep = report(root / "bin" / "polyinfer", [], config_home)
        assert rep["search_path"] == [str(root / "bin"), str(root / "lib" / "polyinfer")]
        cuda = rep["backends"][0]
        assert (cuda["name"], cuda["status"]) == ("cuda", "usable")
        assert cuda["plugin"] == str(root / "lib" / "polyinfer" / "libpolyinfer-cuda.so")
        assert cuda["devices"][0]["name"] == "Fake GPU A"
        assert picked(rep) == ["cuda:0", "cpu:0"]
