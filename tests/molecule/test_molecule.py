"""Each role's molecule scenario: converge, idempotence and the testinfra verifier,
on an embedded machine inside a lab network namespace made for the run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab import topology
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.paths import repo_root
from kafkalab.targets import netns

pytestmark = pytest.mark.molecule
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("role", ["common", "zookeeper", "kafka"])
def test_molecule_scenario(role):
    ns = f"klmol-{role}"
    topo = topology.load()
    netns.ensure(ns, topo.gateway(), {"kafka1": "10.77.0.11"})
    env = dict(
        os.environ,
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
        KAFKALAB_BIN=str(BIN / "kafkalab"),
        KAFKALAB_NETNS=ns,
        KAFKALAB_KAFKA_ARCHIVE=str(kafka_artifact.resolve_kafka(topo.kafka_version)),
        ANSIBLE_FORCE_COLOR="0",
        PY_COLORS="0",
    )
    try:
        proc = subprocess.run(
            netns.wrap(ns, [str(BIN / "molecule"), "-c", "../../molecule/base.yml", "test"]),
            cwd=repo_root() / "ansible" / "roles" / role,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        netns.delete(ns)
    out = proc.stdout + proc.stderr
    # The first failure explains the rest (a failed create is followed by a failed destroy):
    # show every fatal/error line, then the tail.
    first = [line[:600] for line in out.splitlines() if re.search(r"fatal:|FAILED!|error:", line)]
    assert proc.returncode == 0, "\n".join(first[:20]) + "\n...\n" + out[-4000:]
    for action in ("converge", "idempotence", "verify"):
        assert f"[default > {action}] Executed: Successful" in out, out[-3000:]
    assert "Verifier completed successfully" in out
    assert re.search(r"=+ \d+ passed", out), out[-3000:]
