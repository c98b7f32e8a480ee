"""testinfra tier: runs only against an inventory given on the command line.

    pytest tests/infra --hosts=all --connection=ansible --ansible-inventory=INVENTORY

The embedded cluster tier (tests/cluster/test_infra.py), molecule's verifier and the
VM tier all call it that way, so the same tests check every target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Without --hosts testinfra would test the machine pytest runs on: never that.
    if not config.getoption("hosts", None) and collection_path.name.startswith("test_"):
        return True
    return None


@pytest.fixture
def hostvars(host: Any) -> dict[str, Any]:
    """The inventory's variables for the host under test (what the tests expect)."""
    return dict(host.ansible.get_variables())
