# Quick start on a fresh clone, two commands; each sets up .venv first when it is missing (scripts/setup.sh).
#
#   make smoke    # the main job: the smoke pipeline (data -> SFT -> RL -> eval -> report; tiny model, CPU)
#   make test     # the quick test suite (CPU): what a change needs before it is pushed
#   make test-full  # every CPU test CI runs: the quick suite and the full suite's own modules (tests/conftest.py)
#   make setup    # only the set-up (again: it is idempotent)
#
# CI (.ci/run) runs `make smoke` and `make test-full`, so these stay true.

VENV ?= .venv

.PHONY: smoke test test-full setup

smoke: $(VENV)/bin/tritonrl
	$(VENV)/bin/tritonrl pipeline --config configs/smoke.yaml

test: $(VENV)/bin/tritonrl
	$(VENV)/bin/python -m pytest -q

test-full: $(VENV)/bin/tritonrl
	$(VENV)/bin/python -m pytest -q -m 'not gpu and not slow'

setup:
	VENV=$(VENV) bash scripts/setup.sh

# The last thing set-up installs: present only once set-up has finished.
$(VENV)/bin/tritonrl:
	VENV=$(VENV) bash scripts/setup.sh
