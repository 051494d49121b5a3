"""The commit results record: the checkout's (``+dirty`` when tracked files differ), the environment's on a device's
copy without ``.git``, None outside a checkout."""

import re

from tritonrl.util.gitinfo import commit


def test_the_checkouts_commit_or_the_one_named_or_none(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITONRL_COMMIT", raising=False)
    full, short = commit(), commit(short=True)
    assert full is None or re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", full)
    assert short is None or (re.fullmatch(r"[0-9a-f]{7,}(\+dirty)?", short) and full.startswith(short.split("+")[0]))
    assert commit(root=tmp_path) is None  # not a checkout
    monkeypatch.setenv("TRITONRL_COMMIT", "abc1234")
    assert commit(root=tmp_path) == "abc1234"
