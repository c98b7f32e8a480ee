"""Static checks are part of the suite: ruff and mypy on Python, ansible-lint (production)
on Ansible."""

import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.paths import repo_root

pytestmark = pytest.mark.lint
BIN = Path(sys.executable).parent


def run(cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd or repo_root())


def test_ruff():
    proc = run(
        [str(BIN / "ruff"), "check", "kafkalab", "tests", "bench", "labs", "spark", "scripts"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_on_the_package():
    proc = run([str(BIN / "mypy"), "kafkalab"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ansible_lint_production_profile():
    proc = run(
        [str(BIN / "ansible-lint"), "--profile", "production", "--offline"],
        cwd=repo_root() / "ansible",
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    # warnings keep the exit status at 0 but fail the profile ("... but 'min' profile passed")
    assert "Profile 'production' was required, and it passed" in said, said


def test_every_role_has_argument_specs_and_split_tasks():
    for role in sorted((repo_root() / "ansible" / "roles").iterdir()):
        assert (role / "meta" / "argument_specs.yml").exists(), role.name
        assert (role / "README.md").exists(), role.name
        main = (role / "tasks" / "main.yml").read_text()
        parts = ["preflight", "install", "configure"]
        if (role / "templates" / "etc" / "systemd").exists():  # a role that runs a service
            parts.append("service")
        for part in parts:
            assert f"{part}.yml" in main, f"{role.name}: tasks/main.yml lacks {part}.yml"
