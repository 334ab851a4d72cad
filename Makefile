# make check : set up .venv if needed, run every lesson script, diff against expected_outputs/
# make test  : set up .venv with the test tools if needed, lint, run the test suite
# make clean : remove .venv and build/ (the next make check sets up from scratch)
PYTHON ?= python3
VENV := .venv
ifeq ($(OS),Windows_NT)
PY := $(VENV)/Scripts/python.exe
else
PY := $(VENV)/bin/python
endif
# On Linux, PyPI's torch is the CUDA build (several GB of nvidia packages). PyTorch's own
# index has the same release as a CPU-only build (a few hundred MB); setup uses it on Linux
# when it can be reached. macOS and Windows wheels on PyPI are CPU-only already.
CPU_TORCH_INDEX := https://download.pytorch.org/whl/cpu
SUPPORTED := import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 14) else 1)

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
	@if [ -x $(PY) ] && ! $(PY) -c '$(SUPPORTED)' 2>/dev/null; then \
	  echo "make: .venv was made with an unsupported Python; removing it"; rm -rf $(VENV); fi
	@if [ ! -x $(PY) ] && ! $(PYTHON) -c '$(SUPPORTED)' 2>/dev/null; then \
	  echo "make: the lessons need Python 3.11 to 3.14; '$(PYTHON)' is $$($(PYTHON) --version 2>&1 | head -n 1)." \
	    "Name another one, e.g.: make check PYTHON=python3.11"; exit 1; fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@extra=""; if [ "$$(uname -s)" = Linux ]; then \
	  if $(PY) -c "import urllib.request as u; u.urlopen('$(CPU_TORCH_INDEX)/torch/', timeout=10)" 2>/dev/null; \
	  then extra="--extra-index-url $(CPU_TORCH_INDEX)"; \
	  else echo "make: $(CPU_TORCH_INDEX) cannot be reached; pip may take PyPI's CUDA build of torch"; fi; fi; \
	echo "$(PY) -m pip install --quiet $$extra -r requirements.txt"; \
	$(PY) -m pip install --quiet $$extra -r requirements.txt \
	  || { rm -rf $(VENV); echo "make: setup failed (see above); .venv removed, so the next make starts clean"; exit 1; }
	@$(PY) -c "import torch; print('make: installed torch', torch.__version__, '(a CUDA build)' if torch.version.cuda else '(the CPU build)')"
	touch $@

$(VENV)/.test-tools: $(VENV)/.runtime requirements-test.txt requirements-notebook.txt
	$(PY) -m pip install --quiet -r requirements-test.txt \
	  || { rm -rf $(VENV); echo "make: setup failed (see above); .venv removed, so the next make starts clean"; exit 1; }
	touch $@

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
