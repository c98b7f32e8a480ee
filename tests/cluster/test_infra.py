"""Run the testinfra tier (tests/infra) against the embedded cluster's inventory."""

import subprocess
import sys

import pytest

from kafkalab.paths import repo_root

pytestmark = pytest.mark.cluster


def test_testinfra_tier_passes_on_every_host(cluster):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(repo_root() / "tests" / "infra"),
            "--hosts=all",
            "--connection=ansible",
            f"--ansible-inventory={cluster.inventory_path}",
        ],
        capture_output=True,
        text=True,
        cwd=repo_root(),
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
