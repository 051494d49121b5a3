"""The GPU front-end check (``child/frontend.py``) never rejects for its own failures, but never hides them either:
a launch that went on unchecked is named, and the verdict flagged ``frontend_unchecked`` (informational)."""

from types import SimpleNamespace

from tritonrl.verify.child import frontend
from tritonrl.verify.judge.session import Session


def test_a_failing_check_lets_the_launch_go_on_and_says_why(monkeypatch):
    monkeypatch.setattr(frontend, "UNCHECKED", [])

    def not_a_kernel():  # no JITFunction behind it: the machinery cannot bind it
        return 0

    assert frontend.frontend_problem(not_a_kernel, (), {}) is None
    assert len(frontend.UNCHECKED) == 1 and frontend.UNCHECKED[0].startswith("not_a_kernel: ")


def test_the_verdict_is_flagged_once_with_the_reasons():
    session = SimpleNamespace(facts={"flags": [], "timing": {}})
    Session.note_unchecked(session, {"ok": True})
    assert session.facts["flags"] == []
    for _ in range(2):
        Session.note_unchecked(session, {"ok": True, "frontend_unchecked": ["k: KeyError: 'x'"]})
    assert session.facts["flags"] == ["frontend_unchecked"]
    assert session.facts["timing"]["frontend_unchecked"] == ["k: KeyError: 'x'"]
