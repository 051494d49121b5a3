"""Integrity fixtures (tests/verify/fixtures/integrity/): attacks on what the verdict depends on, and honest but
unusual kernels, in the header format of the red-team fixtures (``# expect: reject|done``, ``# task:``,
``# class: i1``..``i9``, ``# static: on|off|both``, optional ``# device: cuda`` (or ``cpu``: a defence of the CPU
interpreter only), ``# timing: cpu-seam`` (or ``untimed``), ``# sentinel: <name>``, ``# why:``). The classes (README.md beside the fixtures has the baseline):

  i1 files outside the child's own directory     i2 harness state reached through frames, sys.modules, gc
  i3 code that runs "inside a launch"             i4 laundering: the answer made elsewhere, "written" by a kernel
  i5 late outputs (computed when unpacked)        i6 timing: the timed work is not the checked work
  i7 the CPU interpreter's verdict is not a GPU's i8 honest code the verifier rejects (``expect: done``)
  i9 other attacks

Tests that fail here are open holes (or honest code rejected) in the current verifier: they are not marked
xfail on purpose. Like test_redteam.py, every fixture is judged with static checks off (the runtime alone), on
(the full funnel) or both, as its header says, in one ``verify_many`` batch per verifier, except:

- class i1 runs one fixture at a time against *sentinels*: files this test makes and removes in the places an
  attack aims at (the verifier's package, the venv's site-packages, $HOME, /tmp, a sibling job directory), never
  a real project file; afterwards every sentinel must be as it was, and an honest candidate judged by the same
  verifier must still be accepted;
- ``# timing: cpu-seam`` fixtures need the checked timing path: on a CPU they run in a verifier with the test
  seam ``TRITONRL_TIMING_ON_CPU=1`` (wall clock, tests/verify/test_checked_timing.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.environ import environ
from tests.verify.integrity_tasks import INTEGRITY_TASKS
from tests.verify.redteam_tasks import REDTEAM_TASKS
from tests.verify.tasks import TASKS as BASE_TASKS
from tests.verify.test_redteam import (
    CUDA,
    GOOD_RELU,
    GPU_TIMEOUT_S,
    GPU_WORKERS,
    _selected,
    describe,
    header,
    modes,
    runnable,
    verdict_table_asked,
)
from tritonrl.common.reward import compute_reward
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.shared.directories import jobs_root

TASKS = {**BASE_TASKS, **REDTEAM_TASKS, **INTEGRITY_TASKS}
DIR = Path(__file__).parent / "fixtures" / "integrity"
# every round's (README), whatever its number (a range here once left a new round's fixtures out); f51_*: issue 51's
# classes (docs/verifier.md)
FIXTURES = sorted([*DIR.glob("i*.py"), *(p for p in DIR.glob("r*_*.py") if re.fullmatch(r"r\d+_.+\.py", p.name)),
                   *DIR.glob("f51_*.py")])



def all_modes(path: Path) -> list[str]:
    """``modes`` plus ``permissive`` (static checks on, ``strict=False``: what ``tritonrl verify --permissive``
    runs) for fixtures headed ``# permissive: also``; only ``permissive`` for ``# permissive: only`` (honest code
    that strict mode refuses by design: torch computing a table in ``__init__``)."""
    permissive = header(path, "permissive", "")
    if permissive == "only":
        return ["permissive"]
    return modes(path) + (["permissive"] if permissive == "also" else [])


def expected(path: Path, mode: str) -> str:
    """``# expect:``, or in permissive mode ``# expect-permissive:`` where the fixture has one."""
    want = header(path, "expect")
    return header(path, "expect-permissive", want) if mode == "permissive" else want


CASES = [(p, m) for p in FIXTURES for m in all_modes(p)]
FILE_ATTACKS = [(p, m) for p, m in CASES if header(p, "class") == "i1"]
HOME_DIR = Path(__file__).resolve().parents[2] / ".pytest_cache" / "integrity-home"  # the children's $HOME
SECRET_TEXT = "tritonrl-integrity-secret-7f3a"  # in a file under the test's tmp dir (``TRITONRL_INTEGRITY_SECRET``)


def _seam(path: Path) -> bool:
    """Judged by a verifier whose timing runs on the CPU (the test seam); on a GPU the ordinary one times it."""
    return header(path, "timing", "") == "cpu-seam" and not CUDA


class Sentinels:
    """The files class-i1 attacks aim at, made and checked here; each is either present with known text (must
    stay unchanged) or absent (must stay absent). None is a real project file."""

    def __init__(self) -> None:
        import torch

        import tritonrl

        package = Path(tritonrl.__file__).parent  # the package the verifier's children import
        site = Path(torch.__file__).resolve().parents[1]
        sibling = Path(jobs_root()) / "job-integrity-sentinel"
        self.dirs = [HOME_DIR, sibling]
        self.files: dict[str, tuple[Path, str | None]] = {
            "pkg_file": (package / "_integrity_sentinel.py", "INTACT = True\n"),
            "pkg_new": (package / "verify" / "_integrity_planted.py", None),
            "site_pth": (site / "_tritonrl_integrity_sentinel.pth", None),
            "home": (HOME_DIR / ".tritonrl_integrity_sentinel", None),
            "home_pt": (HOME_DIR / "tritonrl_integrity_sentinel.pt", None),
            "tmp": (Path("/tmp/tritonrl_integrity_sentinel.txt"), None),
            "dev_shm": (Path("/dev/shm/tritonrl_integrity_sentinel"), None),
            "sibling_job": (sibling / "code.py", "# another job's candidate\n"),
        }

    def reset(self) -> None:
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
        for path, text in self.files.values():
            if text is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(text)

    def changed(self) -> list[str]:
        """``name: path`` of every sentinel that is not as ``reset`` left it."""
        found = []
        for name, (path, text) in self.files.items():
            now = path.read_text(errors="replace") if path.exists() else None
            if now != text:
                found.append(f"{name}: {path} {'written' if now is not None else 'removed'}")
        return found

    def remove(self) -> None:
        for path, _ in self.files.values():
            path.unlink(missing_ok=True)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


def _leaked(result) -> list[str]:
    """The secret file (readable by the parent, hidden from the child) came back in a verdict's error."""
    if SECRET_TEXT in (getattr(result, "error", None) or ""):
        return ["secret: the parent read a file the child cannot see and put it in the verdict"]
    return []


def _config(mode: str, cache: str, timed: bool = False, slow: bool = False) -> VerifyConfig:
    extra = {"timed_trials": 12, "warmup": 2} if timed else {}
    # on a GPU the red team's budget (Triton's compilation counts in it): 12 s timed out honest fixtures of many
    # launches or autotune configs with 4 candidates a GPU (r16_i8_relu_one_launch_per_chunk, H200, 2026-11-30);
    # ``slow`` (``# timing: untimed``): an honest forward that takes seconds under the interpreter (r34's Welford
    # layer norm: 10-14 s of full trials on a quiet 2-core CPU, over the 12 s in a loaded CI run); ``timed`` (the
    # seam's 12 timed calls on the CPU): r32's honest atomic-sum means spend 19.4 s of 20 on a quiet CPU, and ran out
    # in CI runs (2026-12-01); 30 s then ran out for r36's honest tickets and r15's one-pass layer norm on a slower
    # CPU (2026-12-02): 45
    timeout_s = GPU_TIMEOUT_S if CUDA else (40 if slow else 45 if timed else 12)
    return VerifyConfig(device="auto" if CUDA else "cpu", timeout_s=timeout_s, workers=2,
                        workers_per_gpu=GPU_WORKERS, cache_dir=cache, static_checks=(mode != "off"),
                        strict=(mode != "permissive"), **extra)


def _batch(verifier: Verifier, paths: list[Path]) -> list:
    try:
        return verifier.verify_many([VerifyItem(TASKS[header(p, "task")], code=p.read_text()) for p in paths])
    except Exception as exc:  # noqa: BLE001 - the batch is lost; every item records why
        return [exc] * len(paths)


def _verify(verifier: Verifier, task_key: str, code: str):
    try:
        return verifier.verify(TASKS[task_key], code=code)
    except Exception as exc:  # noqa: BLE001
        return exc


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory, request):
    """({(name, mode): result}, {(name, mode): changed sentinels}, {(name, mode): honest result after}).

    Only the selected cases are judged; one reference cache serves every verifier (no fixture here attacks it)."""
    chosen = _selected(request.session.items)
    cache = str(tmp_path_factory.mktemp("integrity-cache"))
    out, written, after = {}, {}, {}
    for mode in ("off", "on", "permissive"):
        cases = [p for p, m in CASES if m == mode and runnable(p) is None and (p.name, m) in chosen]
        # On a CPU the honest fixtures also go through the checked timing path (the test seam): a timed call's
        # coarse watch must accept what the correctness trials' fine watch did (two honest kernels were refused in
        # timed calls only, on a GPU, where nothing else ran that path: docs/benchmarks-history.md, "Warm children").
        # (``# timing: untimed``: an honest kernel whose forward takes seconds under the interpreter, judged once,
        # with a CPU budget of its own)
        seam = [p for p in cases if _seam(p) or (not CUDA and expected(p, mode) == "done"
                                                and header(p, "timing", "") != "untimed")]
        plain = [p for p in cases if header(p, "class") != "i1" and p not in seam]
        slow = [p for p in plain if header(p, "timing", "") == "untimed"]
        plain = [p for p in plain if p not in slow]
        timed = [p for p in cases if header(p, "class") != "i1" and p in seam]
        files = [p for p in cases if header(p, "class") == "i1"]
        if plain:
            with Verifier(_config(mode, cache)) as verifier:
                out.update({(p.name, mode): r for p, r in zip(plain, _batch(verifier, plain))})
        if slow:
            with Verifier(_config(mode, cache, slow=True)) as verifier:
                out.update({(p.name, mode): r for p, r in zip(slow, _batch(verifier, slow))})
        if timed:
            with environ(TRITONRL_TIMING_ON_CPU="1"), Verifier(_config(mode, cache, timed=True)) as verifier:
                out.update({(p.name, mode): r for p, r in zip(timed, _batch(verifier, timed))})
        if files:
            sentinels = Sentinels()
            secret = tmp_path_factory.mktemp("integrity-secret") / "secret.txt"  # under /tmp: hidden from children
            secret.write_text(f"{SECRET_TEXT}\n")
            try:
                sentinels.reset()
                with environ(HOME=str(HOME_DIR), TRITONRL_INTEGRITY_SECRET=str(secret)), \
                        Verifier(_config(mode, cache)) as verifier:
                    for path in files:
                        sentinels.reset()
                        result = out[(path.name, mode)] = _verify(verifier, header(path, "task"), path.read_text())
                        written[(path.name, mode)] = sentinels.changed() + _leaked(result)
                        after[(path.name, mode)] = _verify(verifier, "relu", GOOD_RELU)
            finally:
                sentinels.remove()
    return out, written, after


@pytest.mark.parametrize(("fixture", "mode"), CASES, ids=[f"{p.stem}-static_{m}" for p, m in CASES])
def test_integrity_fixture(fixture, mode, verdicts):
    reason = runnable(fixture)
    if reason:
        pytest.skip(reason)
    result = verdicts[0][(fixture.name, mode)]
    assert not isinstance(result, BaseException), (
        f"{fixture.name}: verify() raised {type(result).__name__}: {str(result)[:300]}")
    if expected(fixture, mode) == "done":
        assert result.correct, f"{fixture.name} (honest) rejected: stage {result.stage}, {result.flags}, {result.error}"
        return
    assert result.correct is False, f"{fixture.name} was accepted with static checks {mode}"
    assert compute_reward(result) == 0


@pytest.mark.parametrize(("fixture", "mode"), FILE_ATTACKS, ids=[f"{p.stem}-static_{m}" for p, m in FILE_ATTACKS])
def test_nothing_written_outside_the_child(fixture, mode, verdicts):
    """A class-i1 attack changed none of the sentinels (the verifier's package, site-packages, $HOME, /tmp,
    /dev/shm, a sibling job's directory) and read nothing it cannot see: the candidate can reach its own
    directory only."""
    if runnable(fixture):
        pytest.skip(runnable(fixture))
    assert verdicts[1][(fixture.name, mode)] == [], f"{fixture.name} wrote outside its directory"


@pytest.mark.parametrize(("fixture", "mode"), FILE_ATTACKS, ids=[f"{p.stem}-static_{m}" for p, m in FILE_ATTACKS])
def test_honest_verdict_unchanged_after_file_attack(fixture, mode, verdicts):
    """After a class-i1 attack, the same verifier still accepts an honest relu."""
    if runnable(fixture):
        pytest.skip(runnable(fixture))
    result = verdicts[2][(fixture.name, mode)]
    assert not isinstance(result, BaseException), f"after {fixture.name}: verify() raised {result!r}"[:300]
    assert result.correct, f"after {fixture.name}, an honest relu is judged {result.stage}: {result.flags}"


def test_print_verdict_table(verdicts, capsys, request):
    """Not an assertion: every verdict, one line each, for the baseline in README.md; printed when asked
    (``pytest -v``, or ``TRITONRL_VERDICT_TABLE=1``), so a default run's output stays one line of dots."""
    if not verdict_table_asked(request):
        pytest.skip("the verdict table prints with -v or TRITONRL_VERDICT_TABLE=1")
    with capsys.disabled():
        for (name, mode), result in sorted(verdicts[0].items()):
            files = verdicts[1].get((name, mode))
            tail = f" | outside the child: {'; '.join(files) or 'nothing'}" if files is not None else ""
            speed = getattr(result, "speedup", None)
            tail += f" | speedup {speed:.3g}" if speed else ""
            print(f"INTEGRITY {name} static={mode} expect={expected(DIR / name, mode)}: {describe(result)}{tail}")
