"""Triton's launchers built once by the judge and handed to later children (``judge/launchers.py``,
``child/toolchain.py``), on any machine: Triton's generator and the compiler are stood in for (the lent GPU's Triton
3.6 builds a launcher a signature; this machine's 3.9 builds none), the paths between them are the real ones."""

from __future__ import annotations

import json
import os
import time

import pytest

from tritonrl.verify.child import toolchain
from tritonrl.verify.judge import launchers
from tritonrl.verify.judge.launchers import LauncherSeed
from tritonrl.verify.shared import launcher_source as shared

SIGNATURE = ["*fp32", "*fp32", "i32", "constexpr"]


@pytest.fixture
def triton_stand_ins(monkeypatch):
    """``make_launcher`` as a generator of a source that names its signature, a "compiler" that writes the source
    as the module's bytes; the compiles counted."""
    from triton.backends.nvidia import driver

    compiles = []

    def make_launcher(constants, signature, tensordesc_meta):
        return "/* launcher */ " + json.dumps([list(signature.values()), tensordesc_meta])

    def compile_module(name, src, where):
        compiles.append(src)
        path = os.path.join(where, name + ".so")
        with open(path, "w") as fh:
            fh.write(src)
        return path

    monkeypatch.setattr(driver, "make_launcher", make_launcher, raising=False)
    monkeypatch.setattr(toolchain, "compile_module", compile_module)
    monkeypatch.setattr(launchers, "compile_module", compile_module)
    return compiles


def _read(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, 1 << 16).decode()
    os.close(fd)
    return data


def test_a_launcher_the_judge_built_is_handed_over_without_a_compile(tmp_path, triton_stand_ins, monkeypatch):
    seed = LauncherSeed(str(tmp_path))
    path = seed.build(SIGNATURE, None)
    src = toolchain.launcher_source(SIGNATURE, None)
    assert path == str(tmp_path / "launchers" / f"{toolchain.launcher_key(src)}.so") and os.path.isfile(path)
    assert triton_stand_ins == [src] and seed.build(SIGNATURE, None) == path and len(triton_stand_ins) == 1
    assert not [n for n in os.listdir(tmp_path / "launchers") if n.startswith(".build-")]  # its folder is gone

    monkeypatch.setattr(toolchain, "_seed", str(tmp_path))  # the helper's seed, fixed when it was forked
    reply, fds = toolchain._launcher({"signature": SIGNATURE, "tensordesc": None})
    assert reply == {"sha256": toolchain.launcher_key(src), "seeded": True} and _read(fds[0]) == src
    assert len(triton_stand_ins) == 1  # no compile in the helper

    other = ["*fp16", "*fp16", "i64"]
    monkeypatch.chdir(tmp_path)  # the helper builds in its job directory
    reply, fds = toolchain._launcher({"signature": other, "tensordesc": None})
    assert reply["seeded"] is False and _read(fds[0]) == toolchain.launcher_source(other, None)
    assert len(triton_stand_ins) == 2

    monkeypatch.setattr(toolchain, "_seed", None)  # a helper without a seed compiles every launcher
    reply, fds = toolchain._launcher({"signature": SIGNATURE, "tensordesc": None})
    assert reply["seeded"] is False and _read(fds[0]) == src and len(triton_stand_ins) == 3


def test_the_judge_takes_a_childs_report_as_a_claim(tmp_path, triton_stand_ins):
    seed = LauncherSeed(str(tmp_path))
    assert seed.build(['*fp32); system("id"', "i32"], None) is None  # not Triton's type names: nothing built
    assert seed.build("*fp32", None) is None and triton_stand_ins == []
    assert seed.learn("not a list") == 0 and seed.learn([{"tensordesc": None}, 3, None]) == 0
    assert seed.learn([{"signature": SIGNATURE, "tensordesc": None}] * 20) == 1  # the same signature once
    assert seed.learn([{"signature": SIGNATURE, "tensordesc": None}]) == 0  # and never again
    many = [{"signature": ["*fp32"] * k, "tensordesc": None} for k in range(1, 21)]
    assert seed.learn(many, room=launchers.PER_SESSION) == launchers.PER_SESSION  # a session's share, no more
    deadline = time.monotonic() + 10
    while len(triton_stand_ins) < 1 + launchers.PER_SESSION and time.monotonic() < deadline:
        time.sleep(0.05)  # the judge's thread builds them
    assert len(triton_stand_ins) == 1 + launchers.PER_SESSION


def test_only_a_launcher_file_of_the_seed_is_handed_over(tmp_path):
    key = "ab" * 32
    (tmp_path / "launchers").mkdir()
    assert toolchain.seeded_launcher(str(tmp_path), key) is None
    (tmp_path / "elsewhere.so").write_text("x")
    os.symlink(tmp_path / "elsewhere.so", tmp_path / "launchers" / f"{key}.so")
    assert toolchain.seeded_launcher(str(tmp_path), key) is None  # a link is not the judge's file
    os.unlink(tmp_path / "launchers" / f"{key}.so")
    (tmp_path / "launchers" / f"{key}.so").write_text("x")
    assert toolchain.seeded_launcher(str(tmp_path), key) == str(tmp_path / "launchers" / f"{key}.so")
    for bad in ("../elsewhere", "AB" * 32, key[:-1]):
        assert toolchain.seeded_launcher(str(tmp_path), bad) is None
    assert toolchain.seeded_launcher(None, key) is None


def test_the_child_reports_the_launchers_its_helper_built(triton_stand_ins, monkeypatch):
    from triton.backends.nvidia import compiler, driver

    monkeypatch.setattr(compiler, "subprocess", compiler.subprocess)  # route_triton replaces these: put back
    monkeypatch.setattr(driver, "compile_module_from_src", None, raising=False)
    monkeypatch.setattr(toolchain, "load_sealed", lambda name, fd: ("module", fd))
    monkeypatch.setattr(toolchain, "_MISSED", [])

    class Helper:
        seeded = False

        def ask(self, message):
            src = toolchain.launcher_source(message["signature"], message["tensordesc"])
            return {"sha256": toolchain.launcher_key(src), "seeded": self.seeded}, [7]

    helper = Helper()
    toolchain.route_triton(helper)
    signature = {0: "*fp32", 1: "i32"}
    src = driver.make_launcher({}, signature, None)
    assert driver.compile_module_from_src(src, "__triton_launcher") == ("module", 7)
    assert toolchain.take_missed() == [{"signature": ["*fp32", "i32"], "tensordesc": None}]
    assert toolchain.take_missed() == []
    helper.seeded = True  # the judge had it: nothing to report
    src = driver.make_launcher({}, {0: "*fp16"}, None)
    driver.compile_module_from_src(src, "__triton_launcher")
    assert toolchain.take_missed() == []


def test_a_launcher_of_the_judge_that_does_not_load_is_built_by_the_helper(triton_stand_ins, monkeypatch):
    """A seeded launcher that fails to load (a file of another build) costs the candidate nothing: the helper builds
    its own, asked not to look in the seed."""
    from triton.backends.nvidia import compiler, driver

    monkeypatch.setattr(compiler, "subprocess", compiler.subprocess)
    monkeypatch.setattr(driver, "compile_module_from_src", None, raising=False)
    monkeypatch.setattr(toolchain, "_MISSED", [])
    loads = []

    def load_sealed(name, fd):
        loads.append(fd)
        if fd == 1:
            raise ImportError("undefined symbol: PyFoo")
        return ("module", fd)

    monkeypatch.setattr(toolchain, "load_sealed", load_sealed)
    asked = []

    class Helper:
        def ask(self, message):
            asked.append(message.get("seed", True))
            src = toolchain.launcher_source(message["signature"], message["tensordesc"])
            seeded = message.get("seed", True)
            return {"sha256": toolchain.launcher_key(src), "seeded": seeded}, [1 if seeded else 2]

    toolchain.route_triton(Helper())
    src = driver.make_launcher({}, {0: "*fp32"}, None)
    assert driver.compile_module_from_src(src, "__triton_launcher") == ("module", 2)
    assert asked == [True, False] and loads == [1, 2]


def test_a_launchers_name_holds_the_python_and_triton_it_was_built_for(monkeypatch):
    """The seed outlives a verifier: a launcher built for another Python (its ABI) or Triton has another name."""
    src = "/* a launcher */"
    key = toolchain.launcher_key(src)
    monkeypatch.setattr(shared, "build_tag", lambda: "3.12.1|.cpython-312-x86_64-linux-gnu.so|3.6.0|x86_64")
    assert toolchain.launcher_key(src) != key
    assert toolchain.launcher_key(src) == toolchain.launcher_key(src) and toolchain.launcher_key(src + " ") != \
        toolchain.launcher_key(src)


def test_signatures_past_the_limits_are_refused_before_anything_is_built(tmp_path, triton_stand_ins):
    """A crafted report's size is not the judge's work: a tensor descriptor of thousands of dimensions (gcc took 46 s
    and 1.1 GB for 4,000) or thousands of arguments is refused by the helper and by the judge alike, unqueued."""
    wide = "tensordesc<fp16[" + ", ".join(["64"] * 6) + "]>"
    many = ["i32"] * (shared.MAX_ARGUMENTS + 1)
    for signature in ([wide], many, [["i32"] * 200, ["i32"] * 100], ["i" + "3" * 80]):
        with pytest.raises(toolchain.ToolchainError):
            toolchain.launcher_source(signature, None)
    assert toolchain.launcher_source(["tensordesc<fp16[64, 64, 64, 64, 64]>", "i32"], [True, False])
    with pytest.raises(toolchain.ToolchainError):
        toolchain.launcher_source(["i32"], [True, True])
    seed = LauncherSeed(str(tmp_path))
    assert seed.learn([{"signature": many, "tensordesc": None}, {"signature": [wide], "tensordesc": None}]) == 0
    assert not seed._seen and seed._pending.empty()


def test_a_full_seed_lets_its_oldest_launchers_go_and_old_build_folders_are_swept(tmp_path, triton_stand_ins,
                                                                                monkeypatch):
    monkeypatch.setattr(launchers, "MAX_LAUNCHERS", 4)
    seed = LauncherSeed(str(tmp_path))
    paths = [seed.build(["*fp32"] * k, None) for k in range(1, 5)]
    for age, path in enumerate(paths):
        os.utime(path, (1000 + age, 1000 + age))
    newest = seed.build(["*fp32"] * 5, None)
    left = sorted(os.listdir(tmp_path / "launchers"))
    assert os.path.exists(newest) and not os.path.exists(paths[0]) and len(left) == 4
    stale, fresh = tmp_path / "launchers" / ".build-old", tmp_path / "launchers" / ".build-now"
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (1000, 1000))
    LauncherSeed(str(tmp_path))  # a judge starting
    assert not stale.exists() and fresh.exists()


def test_no_launcher_seed_where_a_child_could_write_it():
    from tritonrl.config import VerifyConfig
    from tritonrl.verify.parent.verifier import Verifier

    def seeded(**overrides):
        verifier = Verifier.__new__(Verifier)
        verifier.device, verifier.config = "cuda", VerifyConfig(**overrides)
        return verifier._launcher_seed()

    assert seeded() and not seeded(judge_launchers=False)
    assert not seeded(fs_isolation=False) and not seeded(sandbox="best_effort")


def test_a_childs_report_reaches_the_judges_seed_and_is_counted(tmp_path, triton_stand_ins):
    """``Session.recv`` takes ``launchers`` out of any reply of the child's (the reply is judged without it) and hands
    them to the judge's seed, ``PER_SESSION`` a session at most; their count is diagnosis (``launchers_built``)."""
    from types import SimpleNamespace

    from tritonrl.verify.judge.session import Session

    session = Session.__new__(Session)
    session.judge = SimpleNamespace(launchers=LauncherSeed(str(tmp_path)))
    session.facts, session.launcher_room = {}, launchers.PER_SESSION
    reports = [{"signature": ["*fp32"] * k, "tensordesc": None} for k in range(1, 7)]
    session.learn_launchers(reports)
    assert session.launcher_room == launchers.PER_SESSION - 6
    session.learn_launchers(reports)  # a message looks at no more entries than the room left: these two were seen
    assert session.launcher_room == launchers.PER_SESSION - 6
    session.learn_launchers([{"signature": ["i64"] * k, "tensordesc": None} for k in range(1, 7)])
    assert session.facts["launchers_built"] == 18 and session.launcher_room == 0  # 6, 6 seen, then 2 of 6 new
    deadline = time.monotonic() + 10
    while len(triton_stand_ins) < launchers.PER_SESSION and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(triton_stand_ins) == launchers.PER_SESSION
    session.judge = SimpleNamespace(launchers=None)  # a judge without a seed (Triton 3.9, or the sandbox not strict)
    session.learn_launchers(reports)
    assert session.facts["launchers_built"] == 24
