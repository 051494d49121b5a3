"""Which verifier judges candidates: this machine's processes, actors on a Ray cluster, or a service over HTTP.

    from tritonrl.verify.parent.backends import make_verifier
    with make_verifier(config.verify) as verifier:      # verify.backend: "local" (default), "ray" or "http"
        results = verifier.verify_many(items)

All have the same API (``verify``, ``verify_many``, ``close``, context manager) and the same verdicts, so
training and evaluation pick a backend by config alone. Ray is optional and imported only for ``"ray"``; httpx
only for ``"http"`` (a ``tritonrl serve`` service at ``verify.http_url``: docs/serving.md).
"""

from __future__ import annotations

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError

BACKENDS = ("local", "ray", "http")


def make_verifier(config: VerifyConfig | None = None):
    """A ``Verifier`` (backend "local"), a ``RayVerifier`` ("ray") or an ``HttpVerifier`` ("http") for ``config``."""
    config = config or VerifyConfig()
    if config.backend not in BACKENDS:
        raise ConfigError(f"unknown verify.backend {config.backend!r}; choose {', '.join(BACKENDS)}")
    if config.backend == "local":
        from tritonrl.verify.parent.verifier import Verifier

        return Verifier(config)
    if config.backend == "http":
        from tritonrl.verify.parent.http_backend import HttpVerifier

        return HttpVerifier(config)
    from tritonrl.verify.parent.ray_backend import RayVerifier, import_ray

    import_ray()  # the install hint before anything else is built
    return RayVerifier(config, address=config.ray_address, num_actors=config.ray_num_actors)
