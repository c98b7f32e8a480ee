"""netns: the calling thread goes into a namespace and comes back, even on errors; names
are checked; a lab deletes only a namespace it made (real namespaces, uniquely named)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns, statedir
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import Topology


@pytest.fixture
def scratch_ns():
    if os.geteuid() != 0:
        pytest.skip("creating a network namespace needs root")
    name = f"kltest-unit-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def test_inside_returns_to_the_original_namespace(scratch_ns):
    before = os.stat("/proc/thread-self/ns/net").st_ino
    with netns.inside(scratch_ns):
        assert netns.current() == scratch_ns
    assert os.stat("/proc/thread-self/ns/net").st_ino == before
    with pytest.raises(RuntimeError), netns.inside(scratch_ns):
        raise RuntimeError("boom")
    assert os.stat("/proc/thread-self/ns/net").st_ino == before


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["kafkalab", "kltest-kraft", "kltest-zk", "klmol-zookeeper", "klbadinput", "klvm", "a"],
)
def test_names_in_use_are_valid(name):
    assert netns.check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "Kafkalab", "../../etc", "lab/x", "-n", "1lab", "kl lab", "kl_lab", "k" * 33]
)
def test_bad_names_are_one_line_with_the_rule(name):
    with pytest.raises(KafkalabError) as err:
        netns.check_name(name)
    assert str(err.value).startswith(f"KAFKALAB_NETNS={name!r} is not a network namespace name")
    assert "lowercase letters, digits and '-'" in str(err.value)


def test_a_bad_name_touches_nothing(tmp_path):
    env = dict(os.environ, KAFKALAB_STATE=str(tmp_path / "state"), KAFKALAB_NETNS="../../tmp")
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", "down", "--purge"],
        capture_output=True,
        text=True,
        env=dict(env, COLUMNS="400"),
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "KAFKALAB_NETNS='../../tmp'" in proc.stderr
    assert not (tmp_path / "state").exists()


# -- a lab deletes only the namespace it made --------------------------------------------------


@pytest.fixture
def namespaces(monkeypatch):
    """Make real, uniquely named namespaces; each is deleted (with its /etc files) after."""
    if os.geteuid() != 0:
        pytest.skip("creating a network namespace needs root")
    made: list[str] = []

    def make(tag: str) -> str:
        name = f"klt-{tag}-{os.getpid()}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        made.append(name)
        return name

    yield make
    for name in made:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
        shutil.rmtree(netns.NETNS_ETC / name, ignore_errors=True)
        (netns.CLAIMS / f"{name}.owner").unlink(missing_ok=True)


def saved_lab(state: Path, ns: str, owns: bool) -> EmbeddedCluster:
    state.mkdir(parents=True)
    data = {"netns": ns, "owns_netns": owns, "topology": Topology(brokers=1).model_dump()}
    (state / "lab.json").write_text(json.dumps(data))
    (state / statedir.MARKER).write_text("kafkalab\n")
    return EmbeddedCluster(state)


def quiet(_msg: str) -> None:
    pass


def test_a_lab_deletes_the_namespace_it_claimed(namespaces, tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKALAB_NETNS", raising=False)
    ns = namespaces("own")
    lab = saved_lab(tmp_path / "lab", ns, owns=True)
    lab._save(Topology(brokers=1))  # what `up` does after it made the namespace
    assert netns.owner(ns) == (tmp_path / "lab").resolve()
    lab.down(True, quiet)
    assert not netns.exists(ns)
    assert not (netns.NETNS_ETC / ns).exists()


def test_another_labs_namespace_is_never_deleted(namespaces, tmp_path, monkeypatch):
    ns = namespaces("other")
    netns.claim(ns, tmp_path / "the-other-lab")
    # saved as its own (a lab.json may say anything), or named by KAFKALAB_NETNS
    lab = saved_lab(tmp_path / "lab", ns, owns=True)
    lab._save(Topology(brokers=1))  # `up` on it does not take the claim over
    assert lab._saved()["owns_netns"] is False
    monkeypatch.setenv("KAFKALAB_NETNS", ns)
    EmbeddedCluster(tmp_path / "lab").down(True, quiet)
    assert netns.exists(ns)
    assert netns.owner(ns) == (tmp_path / "the-other-lab").resolve()
    assert not netns.delete(ns)  # not even by a harness: a lab claims it
    assert netns.exists(ns)


def test_a_harness_namespace_outlives_the_lab(namespaces, tmp_path, monkeypatch):
    """As tests/molecule does: the harness makes the namespace, the lab runs inside it."""
    ns = namespaces("harness")
    netns.write_hosts(ns, {"kafka1": "10.77.0.11"})
    monkeypatch.setenv("KAFKALAB_NETNS", ns)
    lab = EmbeddedCluster(tmp_path / "lab")
    lab._owns_ns = lab._saved().get("owns_netns", not netns.exists(ns))  # as `up` decides
    lab._save(Topology(brokers=1))
    assert lab._saved()["owns_netns"] is False and not netns.claimed(ns)
    lab.down(True, quiet)
    assert netns.exists(ns) and (netns.NETNS_ETC / ns / "hosts").exists()
    assert netns.delete(ns)  # the harness removes what it made
    assert not netns.exists(ns) and not (netns.NETNS_ETC / ns).exists()


def test_a_claim_is_for_one_namespace_not_its_name(namespaces, tmp_path):
    """After a reboot (or a delete) a namespace of the same name is someone else's."""
    ns = namespaces("again")
    netns.claim(ns, tmp_path / "lab")
    subprocess.run(["ip", "netns", "delete", ns], check=True)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    assert netns.claimed(ns) and netns.owner(ns) is None
    assert not netns.delete(ns, tmp_path / "lab")
    assert netns.exists(ns)


def test_a_lab_from_before_claims_deletes_the_namespace_it_saved(namespaces, tmp_path):
    ns = namespaces("legacy")
    lab = saved_lab(tmp_path / "lab", ns, owns=True)
    lab.down(True, quiet)
    assert not netns.exists(ns)
    # ... but not one it says it did not make
    ns2 = namespaces("legacy2")
    saved_lab(tmp_path / "lab2", ns2, owns=False).down(True, quiet)
    assert netns.exists(ns2)


def test_a_cluster_keeps_its_namespace_and_never_takes_anothers(namespaces, tmp_path):
    ns = namespaces("mine")
    netns.claim(ns, tmp_path / "other-cluster")
    with pytest.raises(KafkalabError, match=f"network namespace {ns} belongs to the cluster at"):
        netns.check_ours(ns, None, tmp_path / "this-cluster")
    netns.check_ours(ns, None, tmp_path / "other-cluster")  # its own: fine
    with pytest.raises(KafkalabError, match="this cluster runs in network namespace kafkalab"):
        netns.check_ours(ns, "kafkalab", tmp_path / "other-cluster")
