"""Bad input: one clear error line, exit code 2, nothing touched."""

import os
import subprocess
import sys

import pytest

from kafkalab import netns


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
    bad = tmp_path / "lab.yml"
    bad.write_text("mode: kraft\nbrokers: three\n")
    proc = kafkalab(tmp_path, "up", "--topology", str(bad))
    assert proc.returncode == 2
    assert "lab.yml: brokers:" in proc.stderr
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

    from kafkalab import client
    from kafkalab.errors import KafkalabError

    seen: list[object] = []

    def in_host_namespace():
        # A namespace of its own that no lab made (the suite's main thread may be in one).
        assert ctypes.CDLL(None, use_errno=True).unshare(netns.CLONE_NEWNET) == 0
        seen.append(client.in_lab_netns())
        try:
            client.admin("10.77.0.11:9092")
        except KafkalabError as exc:
            seen.append(exc)

    t = threading.Thread(target=in_host_namespace)
    t.start()
    t.join()
    assert seen[0] is False
    assert "host's network namespace" in str(seen[1])
