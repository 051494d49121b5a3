"""The static checks' answers from torch, kept across processes (``tritonrl.verify.static.facts``): read back as
computed, named by the installed modules, ignored when unreadable, and off with ``TRITONRL_STATIC_FACTS=0``."""

import json

import pytest

from tritonrl.verify.static import facts


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TRITONRL_STATIC_FACTS", raising=False)
    facts.forget()
    yield tmp_path
    facts.forget()


def test_an_answer_is_computed_once_then_read_from_the_file(cache):
    calls = []
    assert facts.remembered("q", "torch.x", lambda: calls.append(1) or ["module", "torch.x"]) == ["module", "torch.x"]
    facts.save()
    path = facts.facts_file()
    assert path.parent == cache / "tritonrl" / "static-facts"
    assert json.loads(path.read_text()) == {"q:torch.x": ["module", "torch.x"]}
    facts.forget()  # as a new process
    assert facts.remembered("q", "torch.x", lambda: calls.append(1)) == ["module", "torch.x"]
    assert calls == [1]


def test_an_unreadable_file_is_ignored_and_replaced(cache):
    path = facts.facts_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert facts.remembered("q", "a", lambda: True) is True
    facts.save()
    assert json.loads(path.read_text()) == {"q:a": True}


def test_off_keeps_nothing(cache, monkeypatch):
    monkeypatch.setenv("TRITONRL_STATIC_FACTS", "0")
    assert facts.facts_file() is None
    assert facts.remembered("q", "a", lambda: 1) == 1
    facts.save()
    assert not (cache / "tritonrl").exists()


def test_the_file_is_named_by_the_installed_modules(cache, monkeypatch):
    before = facts.facts_file()
    monkeypatch.setattr(facts, "FORMAT", facts.FORMAT + 1)
    assert facts.facts_file() != before


def test_a_full_file_takes_no_more(cache, monkeypatch):
    monkeypatch.setattr(facts, "MAX_ANSWERS", 1)
    facts.remembered("q", "a", lambda: 1)
    facts.save()
    facts.remembered("q", "b", lambda: 2)
    facts.save()
    assert json.loads(facts.facts_file().read_text()) == {"q:a": 1}
