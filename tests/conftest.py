"""Shared fixtures: a real embedded cluster, brought up once per mode per test session.

The cluster fixture is parametrized by mode, so every test that uses it (infra and
cluster tiers) runs against KRaft first, then ZooKeeper; pytest tears the KRaft lab
down before it brings the ZooKeeper one up. A test for one mode only says so with
`@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)`. The main thread
joins the lab's network namespace, so testinfra's ssh and the Python clients reach
the machines. KAFKALAB_TEST_NS gives concurrent runs their own labs;
KAFKALAB_TEST_KAFKA_VERSION (e.g. 3.9.2) runs the KRaft lab on that Kafka release instead of
the KRaft default, 4.3.1 (the ZooKeeper lab stays on 3.9.2: 4.0 removed ZooKeeper).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkalab import inventory
from kafkalab.paths import repo_root
from kafkalab.targets import forward, netns
from kafkalab.topology import has_zookeeper
from tests import host_side  # captures the host's namespace before a fixture leaves it

# testinfra's ansible backend calls ansible-inventory: use the venv's.
os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"

MODES = ("kraft", "zookeeper")
# Several checkouts or developers may run the cluster tier at once: give each a prefix.
PREFIX = os.environ.get("KAFKALAB_TEST_NS", "kltest")
NETNS = {"kraft": f"{PREFIX}-kraft", "zookeeper": f"{PREFIX}-zk"}
KAFKA_VERSION = os.environ.get("KAFKALAB_TEST_KAFKA_VERSION", "")


def lab_settings(mode: str) -> dict[str, str]:
    """The topology of the test lab of this mode: the default release, or
    KAFKALAB_TEST_KAFKA_VERSION's where that release has the mode."""
    if not KAFKA_VERSION or (mode == "zookeeper" and not has_zookeeper(KAFKA_VERSION)):
        return {"mode": mode}
    return {"mode": mode, "kafka_version": KAFKA_VERSION}


@dataclass
class Cluster:
    mode: str
    ns: str
    state: Path
    env: dict[str, str]
    up_output: str

    @property
    def inventory(self) -> dict[str, Any]:
        return inventory.load(self.state / "inventory" / "hosts.yml")

    @property
    def inventory_path(self) -> Path:
        return self.state / "inventory" / "hosts.yml"

    @property
    def hosts(self) -> dict[str, dict[str, Any]]:
        return inventory.hosts(self.inventory)

    @property
    def bootstrap(self) -> str:
        return ",".join(
            f"{hv['kafkalab_address']}:9092"
            for hv in self.hosts.values()
            if "kafka_broker" in hv["groups"]
        )

    def kafkalab(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return host_side.kafkalab(self.env, *args, check=check)


def _env(ns: str) -> tuple[dict[str, str], Path]:
    state = repo_root() / ".kafkalab-test" / ns
    env = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS=ns)
    env["COLUMNS"] = "200"
    return env, state


@contextlib.contextmanager
def lab_cluster(ns: str, **settings: str) -> Iterator[Cluster]:
    """A new embedded lab named `ns` with topology `settings` (and host ports of its own),
    purged afterwards; the body runs with the calling thread in the lab's namespace."""
    mode = settings.get("mode", "kraft")
    env, state = _env(ns)
    c = Cluster(mode, ns, state, env, "")
    c.kafkalab("down", "--purge", check=False)  # leftovers of an interrupted run
    try:
        # Host ports of its own (tests/host_side.py), never a learner's 9092.
        topology = host_side.topology_file(state.parent / f"{ns}-topology.yml", **settings)
        up = c.kafkalab("up", "--mode", mode, "-t", str(topology), check=False)
        if up.returncode != 0:
            keep = state.parent / f"failed-{ns}"  # the lab's logs outlive its purge
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(state / "logs", keep, dirs_exist_ok=True)
            raise AssertionError(f"kafkalab up failed (logs: {keep}):\n{up.stdout}\n{up.stderr}")
        c.up_output = up.stdout
        with netns.inside(ns):
            yield c
    finally:
        held = forward.running(state)
        c.kafkalab("down", "--purge", check=False)
        if held is not None:  # `down` stopped the lab's port forwarder, and its ports are free
            assert forward.running(state) is None and not Path(f"/proc/{held['pid']}").exists()
            host_side.on_host(
                lambda: forward.check_free([forward.Forward(**f) for f in held["forwards"]])
            )


# -- a session lab stops after its last test -----------------------------------------------
# pytest keeps a session fixture until the session ends: the ZooKeeper lab stayed up through
# the machines, molecule, streaming, targets and VM tiers, the streaming lab through the last
# two. An idle lab of three 4.3.1 brokers took 11 % of a core (330 jiffies in 30 s, read in
# /proc/stat, ~4 % per broker: KRaft heartbeats and the metadata log's no-op records), taken
# from every later tier and from the VM under emulation. Each such lab enters its context in
# an ExitStack of `until_last_user`; the stack is closed right after the teardown of the last
# collected test that uses it (LAST_USER, from the final order), and again, as a no-op, when
# pytest finalizes the fixture.
OPEN_LABS: dict[str, contextlib.ExitStack] = {}
LAST_USER: dict[str, str] = {}  # lab key -> nodeid of the last test that uses it


def lab_keys(item: pytest.Item) -> list[str]:
    """The session labs a test uses: cluster[<mode>], the streaming lab, the VM."""
    names = getattr(item, "fixturenames", ())
    keys = []
    callspec = getattr(item, "callspec", None)
    if "cluster" in names and callspec is not None and "cluster" in callspec.params:
        keys.append(f"cluster[{callspec.params['cluster']}]")
    keys += [name for name in ("streaming_lab", "vm_lab") if name in names]
    return keys


@contextlib.contextmanager
def until_last_user(key: str) -> Iterator[contextlib.ExitStack]:
    """An ExitStack for a session lab: closed after the last test that uses `key`."""
    with contextlib.ExitStack() as stack:
        OPEN_LABS[key] = stack
        try:
            yield stack
        finally:
            OPEN_LABS.pop(key, None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    result = yield
    for key in lab_keys(item):
        if LAST_USER.get(key) == item.nodeid and key in OPEN_LABS:
            OPEN_LABS.pop(key).close()
    return result


@pytest.fixture(scope="session", params=MODES)
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    mode = request.param
    with until_last_user(f"cluster[{mode}]") as stack:
        c = stack.enter_context(lab_cluster(NETNS[mode], **lab_settings(mode)))
        netns.enter(c.ns)  # for the rest of its tests: the tests' clients reach it
        yield c


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vm-full",
        action="store_true",
        help="also the long VM checks (the testinfra tier on the VM); `make test-vm` sets it",
    )


# After pytest's own reordering (which groups the tests of each cluster mode): these run last
# on the ZooKeeper lab, in this order. Lab 15 leaves it migrated to KRaft, and it is purged
# right after (until_last_user).
LAST_ON_ZOOKEEPER = "tests/labs/test_lab_zookeeper_to_kraft.py"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --vm-full the VM tier is a smoke (boot, provision, a topic end to end): the
    long checks are deselected, not skipped, and pytest's summary counts them. Then the
    migration labs move behind every other test of the ZooKeeper lab, and each session lab
    learns its last test."""
    if not config.getoption("--vm-full"):
        full = [item for item in items if item.get_closest_marker("vm_full")]
        if full:
            config.hook.pytest_deselected(items=full)
            items[:] = [item for item in items if not item.get_closest_marker("vm_full")]
    last = [item for item in items if item.nodeid.startswith(LAST_ON_ZOOKEEPER)]
    rest = [item for item in items if not item.nodeid.startswith(LAST_ON_ZOOKEEPER)]
    on_zk = [i for i, item in enumerate(rest) if "cluster[zookeeper]" in lab_keys(item)]
    at = on_zk[-1] + 1 if on_zk else len(rest)
    items[:] = rest[:at] + last + rest[at:]
    LAST_USER.clear()
    for item in items:
        for key in lab_keys(item):
            LAST_USER[key] = item.nodeid


TIER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Seconds per tier (tests/<tier>/...), setup and teardown included: a lab's bring-up
    counts for the tier whose test needed it first."""
    parts = Path(report.nodeid.split("::", 1)[0]).parts
    tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]
    TIER_SECONDS[tier] = TIER_SECONDS.get(tier, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if sum(TIER_SECONDS.values()) < 60:
        return  # a quick run: the figures say nothing
    terminalreporter.section("seconds per tier")
    for tier, seconds in sorted(TIER_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:8.1f}  {tier}")
