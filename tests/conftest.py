"""Shared fixtures: every lesson script is run once per test session, through run_all."""
import importlib.util

import pytest

import run_all

SCRIPTS = run_all.discover()


@pytest.fixture(scope="session")
def outputs():
    """{name: run_all.Result} for one default run of every script (forked, like make check)."""
    results = run_all.run_scripts([(path, []) for path in SCRIPTS.values()])
    return dict(zip(SCRIPTS, results, strict=True))


def load_script(name):
    """Import a lesson script as a module (its main() does not run), to test its functions."""
    path = SCRIPTS[name]
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
