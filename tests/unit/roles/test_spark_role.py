"""The spark role's templates, rendered by Ansible's templar against a generated inventory."""

from __future__ import annotations

import yaml

from kafkalab.paths import repo_root
from tests.unit.roles.templar import ROLES, host_context, render

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
    hosts = [p.get("hosts", p.get("ansible.builtin.import_playbook")) for p in plays]
    # the archive checks come before the boot gate, after which plays reach the hosts
    check = hosts.index("spark_master:spark_worker:ksqldb")
    assert check < hosts.index("boot_gate.yml") < hosts.index("kafka_controller:kafka_broker")
    assert check < hosts.index("all", 1)
    assert "spark_master:spark_worker" in hosts and "ksqldb" in hosts
