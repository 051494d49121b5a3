"""A kernel reaches only the storages its launch was handed, on a GPU too (``Monitor._blind``).

The fifth red team's pointer offsets (``r5_c3_*_pointer_offset``: ``x_ptr + delta`` with ``delta`` from
``data_ptr()``, to torch's answer in permissive mode, to an ``__init__`` table torch computed in strict mode) are
stopped on the CPU by the interpreter's address check (``child/bounds.py``), which a compiled GPU kernel never
passes through. Here that check is off, as on a GPU: without the blinding the kernel returns torch's answer (the
hole), with it every laundered storage the launch was not handed reads as poison (NaN), so the output cannot be
torch's, and the storages hold their own bytes again after each launch (the second forward is the same)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "verify" / "fixtures" / "integrity"


def forwards(fixture: str, blind: bool, answer: str, coarse: bool = False) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "helpers" / "blind_probe.py"),
                           str(FIXTURES / fixture), "on" if blind else "off", answer]
                          + (["coarse"] if coarse else []),
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(("fixture", "answer"), [("r5_c3_perm_copy_via_pointer_offset.py", "softmax"),
                                                 ("r5_c3_table_via_pointer_offset.py", "gelu")])
def test_a_kernel_reads_poison_where_it_was_not_handed(fixture, answer):
    unblinded = forwards(fixture, blind=False, answer=answer)
    assert [f["torch_answer"] for f in unblinded] == [True, True]  # the hole, with no address check
    blinded = forwards(fixture, blind=True, answer=answer)
    assert [f["torch_answer"] for f in blinded] == [False, False]
    assert all(f["nan"] for f in blinded)
    assert all(f["buffers_intact"] for f in unblinded + blinded)  # the table's bytes back after every launch


def test_an_init_time_table_reads_as_poison_in_a_coarse_timed_call():
    """Strict mode: a table torch computed at ``__init__`` may feed no launch; in a timed call the watch cannot
    tell a kernel that reaches it through an address from honest work (only a share of timed calls is watched),
    so the harness poisons every such storage around each coarse call, outside the timed region
    (``Monitor.tainted_blind``), and puts the bytes back after."""
    unblinded = forwards("r5_c3_table_via_pointer_offset.py", blind=False, answer="gelu", coarse=True)
    assert [f["torch_answer"] for f in unblinded] == [True, True]  # a coarse call sees no copy and no offset
    blinded = forwards("r5_c3_table_via_pointer_offset.py", blind=True, answer="gelu", coarse=True)
    assert [f["torch_answer"] for f in blinded] == [False, False] and all(f["nan"] for f in blinded)
    assert all(f["buffers_intact"] for f in unblinded + blinded)
