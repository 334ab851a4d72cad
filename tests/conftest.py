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


def run_on_a_terminal(argv, cwd, env):
    """Run argv with its stderr on a pseudo-terminal (as a learner's terminal), stdout piped.
    Returns (exit status, stdout, all the bytes the terminal received)."""
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    out, _ = process.communicate(timeout=600)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return process.returncode, out, seen
