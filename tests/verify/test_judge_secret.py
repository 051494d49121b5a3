"""The judge's salt (the trials' secret input seeds, ``judge.references``) reaches the judge over its own socket and
never travels with the job the zygote forks it from: every candidate's child is forked from the zygote's memory."""

import json
import threading

from tritonrl.verify.judge import server
from tritonrl.verify.parent.judge_client import JudgeClient


class _Forked:
    def finish(self, keep: bool = False) -> None:
        pass


def test_the_salt_reaches_the_judge_and_not_the_zygote(tmp_path, monkeypatch):
    through_zygote, judged_with = [], []

    class Judge(server.Judge):
        def __init__(self, spec):
            judged_with.append(spec)
            super().__init__(spec)

    class Zygote:
        def submit(self, kind, workdir, spec, env, limits, sock):
            through_zygote.append(json.dumps({"spec": spec, "env": env, "limits": limits}))
            threading.Thread(target=server.serve, args=(sock, spec), daemon=True).start()
            return _Forked()

    monkeypatch.setattr(server, "Judge", Judge)
    judge = JudgeClient(Zygote(), None, {"device": "cpu", "cache_dir": str(tmp_path)}, {}, salt="s3cret-salt")
    try:
        assert judge.gpu_name == "cpu"
        assert judged_with and judged_with[0]["salt"] == "s3cret-salt"
        assert through_zygote and "s3cret-salt" not in through_zygote[0]
    finally:
        judge.close()
