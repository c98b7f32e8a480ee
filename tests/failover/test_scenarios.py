"""Every shipped scenario on the embedded cluster (KRaft; the controller kill in ZooKeeper
mode too). acks=all, RF 3, min.insync.replicas 2: nothing acknowledged may be lost. Each
scenario heals what it broke, so the cluster is healthy for the next one."""

from __future__ import annotations

import json
import time

import pytest

from kafkalab.failover import scenario as scenarios
from tests.failover.helpers import healthy, wait_healthy

pytestmark = pytest.mark.cluster

# The two with several broker restarts also carry `slow` (-m "not slow" skips them).
SLOW = {"leader-hard-bounce", "rolling-restart"}
NO_LOSS = [
    pytest.param(s.name, marks=[pytest.mark.slow] if s.name in SLOW else [])
    for s in scenarios.catalog()
    if s.expect.loss == "none"
]
NEGATIVE = [s.name for s in scenarios.catalog() if s.expect.loss == "allowed"]
TIMES: dict[str, float] = {}


def run(cluster, name, tmp_path):
    report = tmp_path / f"{name}.json"
    started = time.monotonic()
    proc = cluster.kafkalab("scenario", "run", name, "--report", str(report), check=False)
    TIMES[f"{name} ({cluster.mode})"] = time.monotonic() - started
    print(proc.stdout)  # the verdict table, shown with -s or on failure
    assert report.exists(), proc.stdout + proc.stderr
    return proc, json.loads(report.read_text())


def check_no_loss(proc, data):
    d = data["delivery"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["passed"], data["reasons"]
    assert d["acked"] > 0
    assert d["lost"] == 0, d["lost_records"][:10]
    if data["expect"]["duplicates"] == "none":
        assert d["duplicates"] == 0
    else:  # after-epoch-bump: each copy explained by the log (kafka-dump-log.sh)
        assert len(data["duplicates"]) == d["duplicates"]
        assert all(x["cause"].startswith("re-sent by the client") for x in data["duplicates"])
    assert d["consumed"] == d["acked"] + d["duplicate_records"]
    assert data["sends"]["failed"] == 0
    assert data["recovery"]["isr_s"] is not None
    assert data["recovery"]["healthy_after_s"] is not None


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
@pytest.mark.parametrize("name", NO_LOSS)
def test_no_acknowledged_record_is_lost(cluster, name, tmp_path):
    proc, data = run(cluster, name, tmp_path)
    check_no_loss(proc, data)
    assert data["recovery"]["leader_s"] is not None
    if name == "controller-kill":
        assert data["recovery"]["controller_s"] is not None
    if name == "follower-isolated":
        assert data["recovery"]["isr_shrink_s"] is not None
    if name == "leader-hard-bounce":
        assert len(data["recovery"]["each"]["leader_s"]) == 5
    ok, detail = healthy(cluster.bootstrap)
    assert ok, detail


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
@pytest.mark.parametrize("name", NEGATIVE)
def test_negative_control_reports_its_loss(cluster, name, tmp_path):
    proc, data = run(cluster, name, tmp_path)
    d = data["delivery"]
    assert proc.returncode == 0, proc.stdout + proc.stderr  # loss allowed: the verdict passes
    assert data["expect"]["loss"] == "allowed"
    assert d["acked"] == d["consumed"] - d["duplicate_records"] + d["lost"] - d["unacked_consumed"]
    assert len(d["lost_records"]) == min(d["lost"], 1000)
    if d["lost"]:
        assert f"{d['lost']} acknowledged records lost" in proc.stdout
        assert "lost records" in proc.stdout
    wait_healthy(cluster.bootstrap)


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_scenario_for_another_mode_says_so(cluster):
    proc = cluster.kafkalab(
        "scenario", "run", "controller-kill", "--mode", "zookeeper", check=False
    )
    assert proc.returncode == 2
    assert "needs a zookeeper lab" in proc.stderr
    assert "runs kraft" in proc.stderr


@pytest.mark.parametrize("cluster", ["zookeeper"], indirect=True)
def test_controller_kill_in_zookeeper_mode(cluster, tmp_path):
    wait_healthy(cluster.bootstrap)
    proc, data = run(cluster, "controller-kill", tmp_path)
    check_no_loss(proc, data)
    assert data["mode"] == "zookeeper"
    assert data["recovery"]["controller_s"] is not None
    ok, detail = healthy(cluster.bootstrap)
    assert ok, detail


def teardown_module():
    if TIMES:
        print("\nscenario times: " + ", ".join(f"{k} {v:.0f}s" for k, v in TIMES.items()))
