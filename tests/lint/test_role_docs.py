"""Each role variable is described once, in meta/argument_specs.yml, and the rest follows
from it: defaults/main.yml sets the same defaults (each under its description as a
comment), the README's tables are generated from it (scripts/role_docs.py), and a role
that falls back on another role's variable falls back on that role's default."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from kafkalab.paths import repo_root

pytestmark = pytest.mark.lint
ROLES = repo_root() / "ansible" / "roles"


def role_docs() -> ModuleType:
    path = repo_root() / "scripts" / "role_docs.py"
    spec = importlib.util.spec_from_file_location("role_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def roles() -> list[Path]:
    return sorted(p for p in ROLES.iterdir() if (p / "tasks").is_dir())


def options(role: Path, entry: str = "main") -> dict[str, Any]:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    found: dict[str, Any] = specs[entry].get("options") or {}
    return found


def defaults(role: Path) -> dict[str, Any]:
    path = role / "defaults" / "main.yml"
    found: dict[str, Any] = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    return found


@pytest.mark.parametrize("role", roles(), ids=lambda p: p.name)
def test_every_option_is_typed_described_and_defaulted(role: Path) -> None:
    for name, option in options(role).items():
        assert option.get("type"), f"{role.name}: {name} has no type"
        text = option.get("description")
        assert isinstance(text, str) and text.strip(), f"{role.name}: {name} has no description"
        assert "\n" not in text.strip(), f"{role.name}: {name}: one line of description"
        if option.get("required"):
            assert "default" not in option, f"{role.name}: {name} is required and has a default"
        else:
            assert "default" in option, f"{role.name}: {name} has no default: (nor required)"


@pytest.mark.parametrize("role", roles(), ids=lambda p: p.name)
def test_defaults_file_sets_the_argspec_defaults(role: Path) -> None:
    """Same variables, same order, same values: Ansible reads defaults/main.yml, readers
    and the README read the argspec."""
    spec = {k: v["default"] for k, v in options(role).items() if not v.get("required")}
    got = defaults(role)
    assert list(got) == list(spec), f"{role.name}: defaults/main.yml and the argspec differ"
    for name, value in spec.items():
        assert got[name] == value, f"{role.name}: {name}: {got[name]!r} != argspec {value!r}"


@pytest.mark.parametrize("role", roles(), ids=lambda p: p.name)
def test_readme_and_comments_are_generated_from_the_argspec(role: Path) -> None:
    stale = role_docs().outdated(role)
    assert not stale, (
        f"out of date: {', '.join(str(p.relative_to(repo_root())) for p in stale)}: "
        "run python scripts/role_docs.py"
    )


def test_kafka_readme_lists_every_kafka_variable() -> None:
    """The drift that started it: kafka_tools_timeout was missing from the README."""
    readme = (ROLES / "kafka" / "README.md").read_text()
    for name in options(ROLES / "kafka"):
        assert f"| `{name}` |" in readme, name


FALLBACK = re.compile(r"\b([a-z][a-z0-9_]*) \| default\(('[^']*'|\"[^\"]*\"|\d+)\)")


def test_fallbacks_on_other_roles_variables_are_their_defaults() -> None:
    """e.g. zookeeper's `kafka_home | default('/opt/kafka')`: the literal must be the kafka
    role's default, or the two roles would install the release in two places."""
    owner = {name: (role.name, value) for role in roles() for name, value in defaults(role).items()}
    checked = 0
    for role in roles():
        for path in sorted(role.rglob("*.yml")) + sorted(role.rglob("*.j2")):
            for name, literal in FALLBACK.findall(path.read_text()):
                if name not in owner or owner[name][0] == role.name:
                    continue
                checked += 1
                assert yaml.safe_load(literal) == owner[name][1], (
                    f"{path.relative_to(ROLES)}: {name} falls back on {literal}, "
                    f"but the {owner[name][0]} role's default is {owner[name][1]!r}"
                )
    assert checked > 0
