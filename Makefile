# make check : set up .venv if needed, run every lesson script, diff against expected_outputs/
# make test  : set up .venv with the test tools if needed, lint, run the test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: check test update clean

check: $(VENV)/.runtime
	$(PY) run_all.py

test: $(VENV)/.test-tools
	$(PY) -m ruff check .
	$(PY) -m pytest

# Rewrite every golden file from a run; review the change with `git diff expected_outputs`.
update: $(VENV)/.runtime
	$(PY) run_all.py --update

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test-tools: $(VENV)/.runtime requirements-test.txt
	$(PY) -m pip install --quiet -r requirements-test.txt
	touch $@

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
