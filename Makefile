# Quick start on a fresh clone, two commands; each sets up .venv first when it is missing (scripts/setup.sh).
#
#   make smoke    # the main job: the smoke pipeline (data -> SFT -> RL -> eval -> report; tiny model, CPU)
#   make test     # the default test suite (CPU; .venv/bin/python -m pytest -m slow / -m gpu for the rest)
#   make setup    # only the set-up (again: it is idempotent)
#
# CI (.ci/run) runs `make smoke` and `make test`, so these stay true.

VENV ?= .venv

.PHONY: smoke test setup

smoke: $(VENV)/bin/tritonrl
	$(VENV)/bin/tritonrl pipeline --config configs/smoke.yaml

test: $(VENV)/bin/tritonrl
	$(VENV)/bin/python -m pytest -q

setup:
	VENV=$(VENV) bash scripts/setup.sh

# The last thing set-up installs: present only once set-up has finished.
$(VENV)/bin/tritonrl:
	VENV=$(VENV) bash scripts/setup.sh
