"""``tritonrl serve``: the verifier as an HTTP service that verl, OpenRLHF and TRL runs can share.

    tritonrl serve                                         # http://127.0.0.1:8400, device auto
    tritonrl serve --device cuda --port 8400 --config serve.yaml --set serve.max_batch_items=128
    TRITONRL_SERVE_TOKEN=... tritonrl serve --host 0.0.0.0  # any other address needs a bearer token

Endpoints, limits and what it protects: docs/serving.md. The web stack (FastAPI, uvicorn) is imported only
when the command runs, so other commands do not pay for it. Exit status: 0 after a drain (SIGTERM or Ctrl-C:
requests already accepted are answered first), 2 for bad usage (a config error, a non-loopback host without a
token, a port in use).
"""

from __future__ import annotations

import argparse
import sys

from tritonrl.cli.config import add_config_arguments, config_from_args
from tritonrl.config import ServeRunConfig
from tritonrl.errors import UserError

# Flags that set a config key (type, choices and help from the field): the verify options of `tritonrl verify`,
# and where the service listens.
SERVE_FLAGS = {"--host": "serve.host", "--port": "serve.port", "--token-file": "serve.token_file",
               "--device": "verify.device", "--timeout": "verify.timeout_s", "--workers": "verify.workers",
               "--tolerance": "verify.tolerance", "--memory-gb": "verify.sandbox_memory_gb"}

DESCRIPTION = """\
Serve the verifier over HTTP, so that training runs (verl, OpenRLHF, TRL) on this or other machines share one
set of judges. Items of concurrent requests are judged together; every candidate runs in the same sandbox, with
the same checks, as under `tritonrl verify`.

  POST /v1/verify   {"items": [{"task": NAME | "task_source": SOURCE, "code" | "completion": TEXT}]}
  POST /v1/rewards  OpenRLHF's remote reward format ({"query", "prompts", "labels"} -> {"rewards", ...})
  GET  /health      GET /metrics (Prometheus)

It listens on 127.0.0.1 unless --host says otherwise; any other address needs a bearer token (--token-file, or
the environment variable named by serve.token_env, TRITONRL_SERVE_TOKEN by default). See docs/serving.md."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="serve the verifier over HTTP (verl, OpenRLHF, TRL)", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples: tritonrl serve --device cuda --port 8400; then OpenRLHF's --remote_rm_url "
               "http://127.0.0.1:8400/v1/rewards; verl's batch reward manager with "
               "custom_reward_function.path=<tritonrl>/integrations/verl.py, name=compute_score_batch, "
               "reward_kwargs.url=http://127.0.0.1:8400; or verify.backend=http, verify.http_url=http://127.0.0.1:8400 "
               "for tritonrl's own TRL reward. What it protects: every candidate is judged as by tritonrl verify "
               "(static checks, sandboxed children, the judge's checks); bodies, batches and the queue are bounded "
               "(413, 429); only loopback without a token; no request names a file. SIGTERM drains: what was "
               "accepted is answered, then exit 0.")
    add_config_arguments(parser, SERVE_FLAGS, config_required=False, set_example="serve.max_batch_items=128",
                         schema=ServeRunConfig)
    parser.add_argument("--full-size", action="store_true",
                        help="CPU: run full trials at the task's own sizes, not reduced to the CPU budget")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=None,
                      help="no high-level torch compute in forward (default)")
    mode.add_argument("--permissive", dest="strict", action="store_false", help="skip the strict-only checks")
    parser.add_argument("--no-task-sources", action="store_true",
                        help="take bundled task names only, no task source: a task's source is trusted code that "
                             "runs in the judge, outside the sandbox (config key serve.task_sources)")
    parser.set_defaults(func=cmd_serve)


def serve_config(args: argparse.Namespace) -> ServeRunConfig:
    """Defaults <- --config YAML <- --set <- flags."""
    args.overrides = list(args.overrides)
    if args.full_size:
        args.overrides += ["verify.cpu_max_numel=null", "verify.cpu_max_flops=null"]
    if args.strict is not None:
        args.overrides.append(f"verify.strict={'true' if args.strict else 'false'}")
    if args.no_task_sources:
        args.overrides.append("serve.task_sources=false")
    return config_from_args(args, SERVE_FLAGS, schema=ServeRunConfig)


def cmd_serve(args: argparse.Namespace) -> int:
    config = serve_config(args)
    try:
        from tritonrl.serve.service import Service, serve_forever
    except ImportError as exc:
        raise UserError(f"tritonrl serve needs the serve extra ({exc.name} is missing): "
                        "pip install 'tritonrl[serve]'") from None
    service = Service(config)
    try:
        service.start()
    except BaseException:
        service.close()
        raise

    def listening(url: str) -> None:
        print(f"tritonrl serve: listening on {url} (device {service.device}, "
              f"{getattr(service.verifier, 'concurrency', '?')} candidates at a time)", flush=True)

    try:
        serve_forever(service, on_listening=listening)
    except OSError as exc:
        raise UserError(f"cannot listen on {config.serve.host}:{config.serve.port}: {exc.strerror}") from None
    print("tritonrl serve: drained and stopped", file=sys.stderr, flush=True)
    return 0
