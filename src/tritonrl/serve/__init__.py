"""The verifier as a service: ``tritonrl serve``, an HTTP reward endpoint that trainers share (docs/serving.md).

    tritonrl serve --device cuda --port 8400                       # loopback; a token for any other --host
    curl -s localhost:8400/v1/verify -d '{"items": [{"task": "l1_relu", "completion": "..."}]}'

Parts: ``payload`` (what a request may hold), ``batcher`` (one bounded queue, items of concurrent requests judged
together), ``app`` (the endpoints), ``auth`` (loopback or a bearer token), ``instruments`` (Prometheus metrics),
``service`` (the whole, served by uvicorn; SIGTERM drains). FastAPI, uvicorn and prometheus_client come with the
``serve`` extra and are imported only by this package, which only ``tritonrl serve`` imports.
"""
