"""The spark role's templates, rendered by Ansible's templar against a generated inventory,
and the controller-side pieces of kafkalab.spark that need no running lab."""

from __future__ import annotations

import ast
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from kafkalab import topology
from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root
from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark
from kafkalab.targets.embedded import EmbeddedCluster
from tests.streaming import helpers
from tests.unit.test_ksqldb_role import ROLES, host_context, render

MASTER_UNIT = "etc/systemd/system/spark-master.service.j2"
WORKER_UNIT = "etc/systemd/system/spark-worker.service.j2"


def settings(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out


def test_units_run_spark_class_with_the_master_url():
    master = render("spark", MASTER_UNIT, "spark1", ["spark"])
    assert (
        "ExecStart=/opt/spark/bin/spark-class org.apache.spark.deploy.master.Master"
        " --host 10.77.0.21 --port 7077 --webui-port 8080" in master
    )
    worker = render("spark", WORKER_UNIT, "spark1", ["spark"])
    assert "org.apache.spark.deploy.worker.Worker --host 10.77.0.21 --port 7078" in worker
    assert "--cores 2 --memory 768m" in worker
    assert worker.rstrip().splitlines()[-1] == "WantedBy=multi-user.target"
    assert "spark://10.77.0.21:7077" in worker
    assert "After=network-online.target spark-master.service" in worker
    for unit in (master, worker):
        assert "User=spark" in unit
        assert 'Environment="SPARK_CONF_DIR=/etc/spark"' in unit


def test_master_address_does_not_depend_on_the_extra_hosts_order():
    # spark1 is 10.77.0.21 however --with lists the extra hosts (ksql1 comes after it)
    worker = render("spark", WORKER_UNIT, "spark1", ["ksqldb", "spark"])
    assert "spark://10.77.0.21:7077" in worker


def test_spark_env_binds_to_the_lab_address():
    env = render("spark", "etc/spark/spark-env.sh.j2", "spark1", ["spark"])
    assert "SPARK_LOCAL_IP=10.77.0.21" in env
    assert "SPARK_MASTER_HOST=10.77.0.21" in env
    assert "SPARK_DAEMON_MEMORY=256m" in env
    assert "PYSPARK_PYTHON=/usr/bin/python3" in env


def test_spark_defaults_point_at_the_master_and_every_broker():
    conf = settings(render("spark", "etc/spark/spark-defaults.conf.j2", "spark1", ["spark"]))
    assert conf["spark.master"] == "spark://10.77.0.21:7077"
    assert conf["spark.executor.memory"] == "512m"
    assert conf["spark.kafkalab.bootstrap.servers"] == (
        "10.77.0.11:9092,10.77.0.12:9092,10.77.0.13:9092"
    )
    conf = settings(
        render(
            "spark",
            "etc/spark/spark-defaults.conf.j2",
            "spark1",
            ["spark"],
            spark_extra_defaults={"spark.eventLog.enabled": True},
        )
    )
    assert conf["spark.eventLog.enabled"] == "true"


def test_archive_default_is_the_cache_path(monkeypatch, tmp_path):
    from ansible.template import trust_as_template

    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path))
    templar = host_context("spark", "spark1", ["spark"])
    archive = templar.template(trust_as_template("{{ spark_archive }}"))
    assert archive == str(tmp_path / "artifacts" / "spark-4.0.0-bin-kafkalab.tgz")


def test_argument_specs_and_readme_cover_every_default():
    specs = yaml.safe_load((ROLES / "spark" / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((ROLES / "spark" / "defaults" / "main.yml").read_text())
    assert set(defaults) <= set(options)
    readme = (ROLES / "spark" / "README.md").read_text()
    for name in defaults:
        assert f"`{name}`" in readme, f"README lacks {name}"


def test_site_yml_has_the_streaming_plays():
    plays = yaml.safe_load((repo_root() / "ansible" / "site.yml").read_text())
    hosts = [p["hosts"] for p in plays]
    # the archive checks come before the first play that touches hosts (common)
    check = hosts.index("spark_master:spark_worker:ksqldb")
    assert check < hosts.index("all", 1)
    assert "spark_master:spark_worker" in hosts and "ksqldb" in hosts


# --- the controller side of kafkalab.spark ---------------------------------------------------


def lab_with(tmp_path: Path, extra: list[str]) -> EmbeddedCluster:
    lab = EmbeddedCluster(tmp_path / "state")
    lab._save(topology.load(overrides={"extra_hosts": extra}))
    return lab


def test_cluster_finds_master_driver_address_and_brokers(tmp_path):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    assert sc.master_url == "spark://10.77.0.21:7077"
    assert sc.driver_address == "10.77.0.1"
    assert sc.bootstrap == "10.77.0.11:9092,10.77.0.12:9092,10.77.0.13:9092"
    ns = sc.cluster.ns
    assert sc.checkpoint("ride-counts") == f"/var/tmp/kafkalab-{ns}/checkpoints/ride-counts"


def test_cluster_without_spark_says_how_to_add_it(tmp_path):
    with pytest.raises(KafkalabError, match="--with spark"):
        spark.locate(lab_with(tmp_path, []))


def test_submit_command_runs_the_driver_in_the_lab_network(tmp_path, monkeypatch):
    home = tmp_path / "spark-home"
    monkeypatch.setattr(spark.spark_artifact, "unpacked", lambda: home)
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    job = repo_root() / "spark" / "jobs" / "ride_counts.py"
    cmd, env = spark.submit_command(sc, job, ["--once"], {"spark.ui.enabled": "false"})
    assert cmd[:4] == ["ip", "netns", "exec", sc.cluster.ns]
    assert cmd[4] == str(home / "bin" / "spark-submit")
    assert cmd[-2:] == [str(job), "--once"]
    confs = {
        cmd[i + 1].split("=", 1)[0]: cmd[i + 1].split("=", 1)[1]
        for i, a in enumerate(cmd)
        if a == "--conf"
    }
    assert confs["spark.driver.host"] == "10.77.0.1"
    assert confs["spark.pyspark.driver.python"] == sys.executable
    assert confs["spark.pyspark.python"] == "/usr/bin/python3"
    assert confs["spark.executor.memory"] == "512m"  # one executor fits the worker (768m)
    assert confs["spark.sql.streaming.checkpointLocation"] == sc.checkpoint("ride-counts")
    assert confs["spark.ui.enabled"] == "false"
    assert "--deploy-mode" in cmd and cmd[cmd.index("--deploy-mode") + 1] == "client"
    assert env["SPARK_HOME"] == str(home)
    assert (Path(env["SPARK_CONF_DIR"]) / "log4j2.properties").exists()


def test_resolve_job_by_name_or_path():
    assert spark.resolve_job("ride_counts").name == "ride_counts.py"
    assert spark.resolve_job("spark/jobs/rider_locations.py").name == "rider_locations.py"


def test_jobs_are_valid_python_with_a_main():
    for job in (repo_root() / "spark" / "jobs").glob("*.py"):
        tree = ast.parse(job.read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "main" in names, job.name


# --- the expected counts -------------------------------------------------------------------


def test_expected_counts_per_minute_and_location():
    rows = [
        streaming.RideRow(datetime(2020, 7, 1, 8, 0, 5), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 0, 59), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 1, 0), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 4, 0), 48),
    ]
    assert streaming.expected_counts(rows) == {
        ("2020-07-01 08:00:00", 236): 2,
        ("2020-07-01 08:01:00", 236): 1,
        ("2020-07-01 08:04:00", 48): 1,
    }
    # watermark 08:02:00: only the windows ending by then are final
    closed = streaming.expected_counts(rows, closed_before=streaming.watermark_after(rows))
    assert closed == {("2020-07-01 08:00:00", 236): 2, ("2020-07-01 08:01:00", 236): 1}


def test_compare_counts_reports_missing_wrong_and_duplicates():
    expected = {("t0", 1): 2, ("t0", 2): 1, ("t1", 1): 4}
    got = [(("t0", 1), 2), (("t0", 1), 2), (("t0", 2), 3), (("t9", 9), 1)]
    report = streaming.compare_counts(expected, got)
    assert not report.ok
    assert report.duplicates == [("t0", 1)]
    assert report.missing == [("t1", 1)]
    assert report.wrong == [(("t0", 2), 3, 1)]
    assert report.unexpected == [("t9", 9)]
    assert streaming.compare_counts(expected, [(k, v) for k, v in expected.items()]).ok


def test_the_shipped_csv():
    rides = streaming.read_rides()
    assert len(rides) == 3000
    header = (repo_root() / "spark" / "data" / "rides.csv").read_text().splitlines()[0]
    assert header.split(",")[:3] == ["VendorID", "tpep_pickup_datetime", "tpep_dropoff_datetime"]
    assert len(streaming.expected_counts(rides)) == 357
    assert 0 < helpers.max_lateness(rides).total_seconds() < 120


def test_riders_within_5_miles_take_the_latest_location():
    seed = [
        ("c2309eec", 37.7877, -122.4205),
        ("18f4ea86", 37.3903, -122.0643),
        ("4ab5cbad", 37.3952, -122.0813),
    ]
    assert helpers.riders_within(seed) == {"18f4ea86", "4ab5cbad"}
    moved = [*seed, ("4ab5cbad", 37.7749, -122.4194)]
    assert helpers.riders_within(moved) == {"18f4ea86"}
    assert helpers.latest_by_key([("a", '{"x": 1}'), ("b", '{"x": 2}'), ("a", None)]) == {
        "b": {"x": 2}
    }
