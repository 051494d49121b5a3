"""The parent: trusted, in the caller's process; it never imports candidate code, nor the judge or the child.

    verifier.py        the funnel and the public API (``Verifier``, ``VerifyItem``)
    plan.py            the trials that judge a candidate, and at what sizes
    hints.py           what a failure probably means, appended to a verdict's error
    zygote_client.py   the zygote's client (``ZygoteClient``) and one forked process seen from outside (``Forked``)
    judge_client.py    the parent's end of each judge process
    backends.py        this machine's processes or a Ray cluster (``ray_backend.py``)

It talks to the judges and the zygote only through ``tritonrl.verify.shared.wire``; the import contracts in
``pyproject.toml`` (``verify-*``, checked by ``tests/test_architecture.py``) hold it to that.
"""
