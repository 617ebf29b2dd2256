"""Shared fixtures: the test firmware, ipu-sim, and ipu-sim's own run of an image to compare."""
import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def firmware():
    return lambda name: os.path.join(os.environ["IPU_TEST_FIRMWARE"], name)


@pytest.fixture(scope="session")
def ipu_sim():
    """Runs ipu-sim with the given arguments; returns (exit status, stdout, stderr)."""
    def run(*args):
        done = subprocess.run([os.environ["IPU_SIM"], *map(str, args)], capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr
    return run


@pytest.fixture
def cli_stats(ipu_sim, tmp_path):
    """ipu-sim run's --stats JSON for an image and options, and its exit status."""
    def run(image, *options):
        path = tmp_path / "cli_stats.json"
        status, _, _ = ipu_sim("run", image, "--stats", path, *options)
        with open(path) as file:
            return status, json.load(file)
    return run
