"""Each role's molecule scenario: converge, idempotence and the testinfra verifier,
on an embedded machine inside a lab network namespace made for the run.

The roles' archives come from the kafkalab cache, as for the streaming tier: Kafka and
Spark are built there when missing; Confluent's (ksqldb) cannot be fetched from here, so
that scenario skips, naming the archive and where to put it, when it is not in the cache.
"""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from kafkalab import topology
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import kafka_python as kafka_python_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.paths import repo_root
from kafkalab.targets import netns

pytestmark = pytest.mark.molecule
BIN = Path(sys.executable).parent
# The release the scenarios install: base.yml's (the kafka role's default, which runs both
# modes), whatever the CLI's default for a new lab is.
BASE = yaml.safe_load((repo_root() / "ansible" / "molecule" / "base.yml").read_text())
KAFKA_VERSION = str(BASE["provisioner"]["inventory"]["group_vars"]["all"]["kafka_version"])


def role_archives(role: str) -> dict[str, str] | str:
    """The archives of the roles beyond Kafka, as the scenario's molecule.yml reads them, or
    why the scenario cannot run."""
    if role == "spark":
        # outside the lab network: a first build may fetch from PyPI and Maven Central
        return {"KAFKALAB_SPARK_ARCHIVE": str(spark_artifact.resolve_spark())}
    if role == "ksqldb":
        archive = ksqldb_artifact.cached()
        if archive is None:
            return ksqldb_artifact.missing_message()
        return {"KAFKALAB_KSQLDB_ARCHIVE": str(archive)}
    return {}


ROLES_DIR = repo_root() / "ansible" / "roles"
INTERNAL = {"kafka_common"}  # included by the kafka and zookeeper roles, tested through theirs
ROLES = sorted(p.parent.parent.name for p in ROLES_DIR.glob("*/molecule/default"))


def test_every_role_has_a_scenario():
    assert set(ROLES) == {p.name for p in ROLES_DIR.iterdir() if p.is_dir()} - INTERNAL


def run_scenario(role: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`molecule test` of one role inside a lab network namespace of its own."""
    ns = f"klmol-{role}"
    netns.ensure(ns, topology.load().gateway(), {"kafka1": "10.77.0.11"})
    try:
        return subprocess.run(
            netns.wrap(ns, [str(BIN / "molecule"), "-c", "../../molecule/base.yml", "test"]),
            cwd=repo_root() / "ansible" / "roles" / role,
            env={**env, "KAFKALAB_NETNS": ns},
            capture_output=True,
            text=True,
        )
    finally:
        netns.delete(ns)


# The scenarios share nothing (a namespace, a machine and molecule's ephemeral directory
# each), and one alone left the machine's 2 cores a third idle (ansible waits on ssh, the
# JVMs on their ports): the module's selected scenarios start together when its first test
# runs, two at a time, and each test waits for its own.
PARALLEL = 2


@pytest.fixture(scope="module")
def scenarios(request: pytest.FixtureRequest) -> Iterator[dict[str, Future | str]]:
    selected = [
        item.callspec.params["role"]
        for item in request.session.items
        if item.nodeid.startswith(request.node.nodeid) and hasattr(item, "callspec")
    ]
    env = dict(
        os.environ,
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
        KAFKALAB_BIN=str(BIN / "kafkalab"),
        KAFKALAB_KAFKA_ARCHIVE=str(kafka_artifact.resolve_kafka(KAFKA_VERSION)),
        KAFKALAB_KAFKA_PYTHON_WHEEL=str(kafka_python_artifact.resolve_kafka_python()),
        ANSIBLE_FORCE_COLOR="0",
        PY_COLORS="0",
    )
    found: dict[str, Future | str] = {}
    with ThreadPoolExecutor(PARALLEL, thread_name_prefix="molecule") as pool:
        for role in selected:
            archives = role_archives(role)
            found[role] = (
                archives
                if isinstance(archives, str)
                else pool.submit(run_scenario, role, {**env, **archives})
            )
        yield found
        for future in found.values():  # a test that did not run (-x, Ctrl-C) waits for none
            if isinstance(future, Future):
                future.cancel()


@pytest.mark.parametrize("role", ROLES)
def test_molecule_scenario(role, scenarios):
    started = scenarios[role]
    if isinstance(started, str):
        pytest.skip(started)
    proc = started.result()
    out = proc.stdout + proc.stderr
    # The first failure explains the rest (a failed create is followed by a failed destroy):
    # show every fatal/error line, then the tail.
    first = [line[:600] for line in out.splitlines() if re.search(r"fatal:|FAILED!|error:", line)]
    assert proc.returncode == 0, "\n".join(first[:20]) + "\n...\n" + out[-4000:]
    for action in ("converge", "idempotence", "verify"):
        assert f"[default > {action}] Executed: Successful" in out, out[-3000:]
    assert "Verifier completed successfully" in out
    assert re.search(r"=+ \d+ passed", out), out[-3000:]
