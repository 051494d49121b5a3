"""Who may call the service: loopback only by default, a bearer token for anything else.

    token = load_token(config.serve)          # from serve.token_file, else $serve.token_env; None: no token
    require_token_off_loopback(config.serve, token)   # UserError: binding 0.0.0.0 without a token
    authorized(request.headers.get("authorization"), token)

The token is read once at start, compared in constant time (both sides hashed first, so neither the token's
length nor its bytes show in the time an answer takes), and never logged nor echoed: errors name where it was
looked for, not what it was. With a token set, every endpoint but ``GET /health`` needs it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import stat

from tritonrl.config import ServeConfig
from tritonrl.errors import UserError

MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def load_token(config: ServeConfig) -> str | None:
    """The bearer token clients must send, or None when none is configured."""
    if config.token_file:
        try:
            with open(config.token_file, encoding="utf-8") as fh:
                token = fh.read().strip()
            mode = os.stat(config.token_file).st_mode
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read the token file {config.token_file}: {type(exc).__name__}") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise UserError(f"the token file {config.token_file} is readable by others: chmod 600 it")
        where = f"the token file {config.token_file}"
    else:
        token = os.environ.get(config.token_env, "").strip()
        where = f"${config.token_env}"
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise UserError(f"the bearer token in {where} must be at least {MIN_TOKEN_CHARS} characters without "
                        "spaces (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return token


def require_token_off_loopback(config: ServeConfig, token: str | None) -> None:
    if token is None and not is_loopback(config.host):
        raise UserError(f"--host {config.host} is reachable from other machines: the service needs a bearer token "
                        f"there (--token-file FILE, or ${config.token_env}); or bind 127.0.0.1")


def authorized(header: str | None, token: str | None) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (always, when no token is configured)."""
    if token is None:
        return True
    scheme, _, given = (header or "").partition(" ")
    digest = hashlib.sha256(given.strip().encode("utf-8", "replace")).digest()
    return hmac.compare_digest(digest, hashlib.sha256(token.encode()).digest()) and scheme.lower() == "bearer"
