"""Run the testinfra tier (tests/infra) against an inventory: the embedded cluster's, the
streaming lab's or Vagrant's. The host checks are written once; each tier calls this."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafkalab.paths import repo_root


def assert_testinfra_passes(inventory: Path, env: dict[str, str] | None = None) -> None:
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
            f"--ansible-inventory={inventory}",
        ],
        capture_output=True,
        text=True,
        cwd=repo_root(),
        env=env,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
