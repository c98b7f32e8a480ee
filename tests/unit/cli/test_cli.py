"""Bad input: one clear error line, exit code 2, nothing touched."""

import json
import os
import subprocess
import sys

import pytest

from kafkalab.cli.main import _interrupt_hint
from kafkalab.targets import netns


def kafkalab(tmp_path, *args):
    env = dict(os.environ, KAFKALAB_STATE=str(tmp_path / "state"), KAFKALAB_NETNS="klbadinput")
    return subprocess.run(
        [sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, env=env
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["up", "--mode", "kraftt"], "mode: Input should be 'kraft' or 'zookeeper'"),
        (["up", "--brokers", "0"], "brokers: Input should be greater than or equal to 1"),
        (["up", "--with", "flink"], "extra_hosts"),
        (["up", "--kafka-version", "4.9.9"], "kafka_version: "),
        (["up", "--mode", "zookeeper", "--kafka-version", "4.3.1"], "has no ZooKeeper mode"),
        (["up", "--mode", "zookeeper", "--controllers", "2"], "controllers is a KRaft setting"),
    ],
)
def test_bad_topology_touches_nothing(tmp_path, args, expected):
    proc = kafkalab(tmp_path, *args)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "state").exists()
    assert not netns.exists("klbadinput")


def test_missing_topology_file_values(tmp_path):
    bad = tmp_path / "cluster.yml"
    bad.write_text("mode: kraft\nbrokers: three\n")
    proc = kafkalab(tmp_path, "up", "--topology", str(bad))
    assert proc.returncode == 2
    assert "cluster.yml: brokers:" in proc.stderr
    assert not (tmp_path / "state").exists()


def test_exec_on_unknown_machine(tmp_path):
    proc = kafkalab(tmp_path, "exec", "kafka9", "--", "true")
    assert proc.returncode == 2
    assert "no machine named 'kafka9'" in proc.stderr


def test_status_without_a_lab(tmp_path):
    proc = kafkalab(tmp_path, "status", "--json")
    assert proc.returncode == 0
    assert '"lab": null' in proc.stdout


def test_clients_refuse_the_host_namespace():
    import ctypes
    import threading

    from kafkalab.errors import KafkalabError
    from kafkalab.kafka import clients

    seen: list[object] = []

    def in_host_namespace():
        # A namespace of its own that no lab made (the suite's main thread may be in one).
        assert ctypes.CDLL(None, use_errno=True).unshare(netns.CLONE_NEWNET) == 0
        seen.append(netns.current() is not None)
        try:
            clients.admin("10.77.0.11:9092")
        except KafkalabError as exc:
            seen.append(exc)

    t = threading.Thread(target=in_host_namespace)
    t.start()
    t.join()
    assert seen[0] is False
    assert "host's network namespace" in str(seen[1])


# -- topology files and changes (issue 10, items 6 and 9) ---------------------------------

# The CLI as a learner runs it, except that nothing can be fetched, built or booted: an
# `up` that gets past every check prints the lab's machines and exits 3 instead.
GUARDED = """
import json, os, sys
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.targets import image
from kafkalab.targets import netns
from kafkalab.targets.embedded import EmbeddedCluster

def touched(*_args, **_kwargs):
    print("touched", file=sys.stderr)
    os._exit(99)

kafka_artifact.resolve_kafka = image.ensure_image = netns.ensure = touched

def up(self, topo, progress, provision_hosts=True):
    self.check_compatible(topo)
    print(json.dumps({m.name: m.address for m in topo.machines()}))
    raise SystemExit(3)

EmbeddedCluster.up = up
sys.argv = ["kafkalab", *sys.argv[1:]]
from kafkalab.cli import main
main()
"""


def guarded(tmp_path, *args):
    env = dict(
        os.environ,
        KAFKALAB_STATE=str(tmp_path / "state"),
        KAFKALAB_NETNS="klbadinput",
        COLUMNS="400",  # one line stays one line on rich's console
    )
    return subprocess.run(
        [sys.executable, "-c", GUARDED, *args], capture_output=True, text=True, env=env
    )


def one_error_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def saved_lab(tmp_path, monkeypatch, **settings):
    from kafkalab.targets.embedded import EmbeddedCluster
    from kafkalab.topology import Topology

    monkeypatch.setenv("KAFKALAB_NETNS", "klbadinput")
    lab = EmbeddedCluster(tmp_path / "state")
    lab._save(Topology(**settings))
    return {p: p.read_bytes() for p in lab.state.rglob("*") if p.is_file()}


def files(tmp_path):
    return {p: p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file()}


def write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "missing.yml", "missing.yml: no such topology file"),
        (lambda d: d, "is a directory"),
        (lambda d: write(d / "l.yml", b"mode: kraft\n# \xe9t\xe9\n"), "not UTF-8 text (byte 0xe9"),
        (lambda d: write(d / "l.yml", b"network: 127.0.0.0/24\n"), "l.yml: network: must be a"),
        (lambda d: write(d / "l.yml", b"network: 169.254.0.0/24\n"), "RFC 1918"),
        (lambda d: write(d / "l.yml", b"controllers: true\n"), "valid integer (got True)"),
        (lambda d: write(d / "l.yml", b"brokers: '3'\n"), "brokers: Input should be a valid int"),
        (lambda d: write(d / "l.yml", b"kafka_heap_mb: 4096\n"), "more than half of memory_mb"),
        (lambda d: write(d / "l.yml", b"mode: [kraft\n"), "not valid YAML: line 2, column 1"),
    ],
)
def test_bad_topology_file_is_one_line(tmp_path, make, expected):
    given = tmp_path / "given"
    given.mkdir()
    proc = guarded(tmp_path, "up", "-t", str(make(given)))
    assert expected in one_error_line(proc)
    assert not (tmp_path / "state").exists()
    assert not netns.exists("klbadinput")


def test_fetch_refuses_a_missing_topology_file(tmp_path):
    proc = guarded(tmp_path, "fetch", "-t", str(tmp_path / "missing.yml"))
    assert "missing.yml: no such topology file" in one_error_line(proc)


@pytest.mark.parametrize(
    ("saved", "args", "expected"),
    [
        ({"mode": "zookeeper", "brokers": 1}, ["--brokers", "3"], "ZooKeeper ensemble"),
        ({"brokers": 3}, ["--brokers", "4"], "static voter set"),
        ({"brokers": 3}, ["--brokers", "2"], "removing brokers"),
        ({"mode": "zookeeper"}, ["--mode", "kraft"], "built with mode=zookeeper"),
    ],
)
def test_unsafe_change_to_a_lab_is_refused_untouched(tmp_path, monkeypatch, saved, args, expected):
    before = saved_lab(tmp_path, monkeypatch, **saved)
    line = one_error_line(guarded(tmp_path, "up", *args))
    assert expected in line and "kafkalab down --purge" in line
    assert files(tmp_path) == before
    assert not netns.exists("klbadinput")


def test_with_on_a_lab_keeps_its_extra_hosts_and_their_addresses(tmp_path, monkeypatch):
    saved_lab(tmp_path, monkeypatch, extra_hosts=["spark"])
    proc = guarded(tmp_path, "up", "--with", "ksqldb")
    assert proc.returncode == 3, proc.stderr
    machines = json.loads(proc.stdout)
    assert (machines["spark1"], machines["ksql1"]) == ("10.77.0.21", "10.77.0.22")


def test_a_topology_file_on_a_lab_keeps_its_extra_hosts(tmp_path, monkeypatch):
    saved_lab(tmp_path, monkeypatch, extra_hosts=["ksqldb"])
    f = write(tmp_path / "cluster.yml", b"brokers: 3\nextra_hosts: [spark]\n")
    proc = guarded(tmp_path, "up", "-t", str(f))
    assert proc.returncode == 3, proc.stderr
    machines = json.loads(proc.stdout)
    assert (machines["spark1"], machines["ksql1"]) == ("10.77.0.21", "10.77.0.22")


def test_adding_brokers_where_it_is_safe_goes_on(tmp_path, monkeypatch):
    saved_lab(tmp_path, monkeypatch, mode="zookeeper", brokers=3)
    proc = guarded(tmp_path, "up", "--brokers", "5")
    assert proc.returncode == 3, proc.stderr
    assert "kafka5" in json.loads(proc.stdout)


def test_ctrl_c_during_up_of_your_own_hosts_says_a_second_run_finishes_it():
    assert "`kafkalab down` stops them" in _interrupt_hint(["up", "--mode", "kraft"])
    for args in (["up", "-i", "mine.yml"], ["up", "--inventory=mine.yml"]):
        hint = _interrupt_hint(args)
        assert "`kafkalab up -i` again finishes it" in hint and "down" not in hint
