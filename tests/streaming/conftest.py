"""The streaming tier: one embedded lab with a Spark host, KRaft mode, for all its tests.

    sudo .venv/bin/pytest tests/streaming

The lab has kafka1 and spark1 (`kafkalab up --with spark --brokers 1`), and ksql1 too when
Confluent's archive is in the artifact cache (else the ksqlDB tests skip, naming it): one
broker keeps the tier inside its time budget on two cores; the jobs and checks do not
depend on the broker count. It gets its own state and network namespace
(`<KAFKALAB_TEST_NS>-spark`), and is removed at the end. The main thread joins the
namespace, so testinfra's ssh and the Python clients reach the machines; Spark drivers
are started through `ip netns exec`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.paths import repo_root
from kafkalab.streaming import spark as spark_mod
from kafkalab.targets import netns
from kafkalab.targets.embedded import EmbeddedCluster
from tests import host_side
from tests.conftest import until_last_user

PREFIX = os.environ.get("KAFKALAB_TEST_NS", "kltest")
NETNS = f"{PREFIX}-spark"
BROKERS = 1


@dataclass
class StreamingLab:
    ns: str
    state: Path
    env: dict[str, str]
    cluster: EmbeddedCluster
    timings: dict[str, float] = field(default_factory=dict)
    mode: str = "kraft"

    @property
    def spark(self) -> spark_mod.SparkCluster:
        return spark_mod.locate(self.cluster)

    @property
    def inventory_path(self) -> Path:
        return self.state / "inventory" / "hosts.yml"

    def kafkalab(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # on the host for `up`/`down`, like the cluster fixture's: the main thread may still
        # be in another tier's lab namespace, and the forwarder must listen on the host
        return host_side.kafkalab(self.env, *args, check=check)

    def python(self, script: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A script of this checkout (e.g. spark/producer.py), run in the lab network."""
        proc = subprocess.run(
            [sys.executable, str(repo_root() / script), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc


@pytest.fixture(scope="session")
def streaming_lab() -> Iterator[StreamingLab]:
    """The streaming lab, purged after the last test that uses it (tests/conftest.py)."""
    if os.geteuid() != 0:
        pytest.skip("the streaming tier needs root (network namespaces, machines)")
    with until_last_user("streaming_lab") as stack:
        yield stack.enter_context(streaming_lab_up())


@contextlib.contextmanager
def streaming_lab_up() -> Iterator[StreamingLab]:
    state = repo_root() / ".kafkalab-test" / NETNS
    env = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS=NETNS, COLUMNS="200")
    # Ansible's ssh connections are shared per (host, user) under ~/.ansible/cp: another lab
    # on the same addresses would get them. This lab keeps its own.
    env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = str(state.parent / f"{NETNS}-cp")
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    started = time.monotonic()
    spark_artifact.resolve_spark()  # outside the lab network: may fetch from PyPI/Maven
    fetched = time.monotonic() - started
    lab = StreamingLab(NETNS, state, env, EmbeddedCluster(state))
    lab.kafkalab("down", "--purge", check=False)  # leftovers of an interrupted run
    spark_mod.forget_checkpoints(NETNS)
    try:
        started = time.monotonic()
        extra = "spark,ksqldb" if ksqldb_artifact.cached() else "spark"
        ports = host_side.topology_file(state.parent / f"{NETNS}-topology.yml")  # not 9092
        up = ["up", "--mode", "kraft", "--brokers", str(BROKERS), "--with", extra]
        lab.kafkalab(*up, "-t", str(ports))
        lab.timings = {"spark artifact": fetched, "lab up": time.monotonic() - started}
        lab.cluster = EmbeddedCluster(state)
        lab.cluster.ns = NETNS
        with netns.inside(NETNS):  # back on the host after its last test
            yield lab
    finally:
        # The provisioning log outlives the lab, for a failed run's post-mortem.
        if (state / "logs").is_dir():
            shutil.copytree(state / "logs", state.parent / f"{NETNS}-logs", dirs_exist_ok=True)
        lab.kafkalab("down", "--purge", check=False)
        spark_mod.forget_checkpoints(NETNS)
        spent = ", ".join(f"{k} {v:.0f}s" for k, v in lab.timings.items())
        print(f"\nstreaming tier timings: {spent}")
