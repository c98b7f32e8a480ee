"""The controller side of kafkalab.streaming.spark, with no cluster running: finding the Spark
hosts, the spark-submit command, jobs by name; job names and checkpoint paths (what `spark
reset` deletes, here and as root on the workers, is a quoted path built from a checked
name: the ssh commands are built, not run)."""

from __future__ import annotations

import ast
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab import inventory, topology
from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root
from kafkalab.streaming import spark
from kafkalab.targets.embedded import EmbeddedCluster


def lab_with(tmp_path: Path, extra: list[str]) -> EmbeddedCluster:
    """A saved cluster with its generated inventory, as `up` leaves them."""
    lab = EmbeddedCluster(tmp_path / "state")
    topo = topology.load(overrides={"extra_hosts": extra})
    lab._save(topo)
    inventory.write(inventory.build(topo, {}, None), lab.inventory_path)
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


def remote_words(argv: list[str]) -> list[str]:
    """The words the remote command runs, as ssh and the shells on the machine see them:
    ssh joins what follows `--` with spaces, the login shell splits that, and `bash -lc`
    parses its script once more."""
    line = " ".join(argv[argv.index("--") + 1 :])
    bash, flag, script = shlex.split(line)
    assert (bash, flag) == ("bash", "-lc")
    return shlex.split(script)


@pytest.mark.parametrize(
    "name", ["ride counts.py", "x;rm -rf ~.py", "*.py", "Ride.py", "a$(id).py", "job.sh"]
)
def test_job_files_with_other_characters_are_refused(tmp_path, name):
    job = tmp_path / name
    job.write_text("def main():\n    pass\n")
    with pytest.raises(KafkalabError, match=r"a-z, 0-9, _ and - only") as err:
        spark.resolve_job(job)
    assert "\n" not in str(err.value)
    with pytest.raises(KafkalabError):
        spark.job_name(job)


def test_shipped_jobs_have_safe_names():
    names = {spark.job_name(p) for p in (repo_root() / "spark" / "jobs").glob("*.py")}
    assert names >= {"ride-counts", "rider-locations"}
    with pytest.raises(KafkalabError):
        spark.job_name(Path("ride_counts.sh"))


def test_a_checkpoint_is_only_made_of_a_checked_name(tmp_path):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    assert sc.checkpoint("ride-counts").endswith("/checkpoints/ride-counts")
    for bad in ("../../etc", "a b", "*", ""):
        with pytest.raises(KafkalabError):
            sc.checkpoint(bad)


def test_the_remove_command_quotes_every_word(tmp_path):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    nasty = "/var/tmp/kafkalab-x/checkpoints/a b;touch /tmp/owned *"
    argv = spark.remove_command(sc, "spark1", nasty)
    assert argv[:3] == ["ip", "netns", "exec"]
    assert remote_words(argv) == ["sudo", "rm", "-rf", "--", nasty]


def test_reset_deletes_the_checkpoint_here_and_runs_a_quoted_rm_on_each_worker(
    tmp_path, monkeypatch
):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    root = tmp_path / "var-tmp"
    monkeypatch.setattr(spark, "checkpoint_root", lambda ns: root)
    here = root / "checkpoints" / "ride-counts"
    (here / "offsets").mkdir(parents=True)
    ran: list[list[str]] = []

    def fake_run(argv: list[str], **_kw: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(spark.subprocess, "run", fake_run)
    done = spark.reset("ride_counts", sc.cluster)
    assert not here.exists()
    assert done == [f"controller:{here}", f"spark1:{here}"]
    assert len(ran) == 1
    assert remote_words(ran[0]) == ["sudo", "rm", "-rf", "--", str(here)]


def test_reset_follows_no_link_in_the_checkpoint_path(tmp_path, monkeypatch):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    root = tmp_path / "var-tmp"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "ride-counts").mkdir(parents=True)
    (root / "checkpoints").symlink_to(elsewhere)
    monkeypatch.setattr(spark, "checkpoint_root", lambda ns: root)
    monkeypatch.setattr(spark.subprocess, "run", lambda *a, **kw: pytest.fail("ran a command"))
    with pytest.raises(KafkalabError, match="leads through a link"):
        spark.reset("ride_counts", sc.cluster)
    assert (elsewhere / "ride-counts").is_dir()


def test_reset_of_a_badly_named_job_touches_nothing(tmp_path, monkeypatch):
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    job = tmp_path / "ride counts.py"
    job.write_text("")
    monkeypatch.setattr(spark.subprocess, "run", lambda *a, **kw: pytest.fail("ran a command"))
    monkeypatch.setattr(spark.shutil, "rmtree", lambda *a, **kw: pytest.fail("deleted"))
    with pytest.raises(KafkalabError, match="rename it"):
        spark.reset(job, sc.cluster)


@pytest.mark.parametrize("ns", ["../../etc", "a/b", "x/../..", "", "lab one"])
def test_a_cluster_name_cannot_move_the_checkpoint_root(ns, monkeypatch):
    monkeypatch.setattr(spark.shutil, "rmtree", lambda *a, **kw: pytest.fail("deleted"))
    with pytest.raises(KafkalabError, match="cluster name"):
        spark.forget_checkpoints(ns)


def test_the_checkpoint_root_of_a_namespace():
    assert spark.checkpoint_root("kltest-kraft") == Path("/var/tmp/kafkalab-kltest-kraft")
    assert spark.checkpoint_root("..") == Path("/var/tmp/kafkalab-..")  # a name, not a step up


def test_reset_refuses_a_checkpoint_root_that_is_a_link(tmp_path, monkeypatch):
    """A link planted at /var/tmp/kafkalab-<ns> itself (anyone may write /var/tmp)."""
    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "checkpoints" / "ride-counts").mkdir(parents=True)
    root = tmp_path / "kafkalab-ns"
    root.symlink_to(elsewhere)
    monkeypatch.setattr(spark, "checkpoint_root", lambda ns: root)
    monkeypatch.setattr(spark.subprocess, "run", lambda *a, **kw: pytest.fail("ran a command"))
    with pytest.raises(KafkalabError, match="leads through a link"):
        spark.reset("ride_counts", sc.cluster)
    assert (elsewhere / "checkpoints" / "ride-counts").is_dir()


def test_ctrl_c_during_submit_stops_the_job(tmp_path, monkeypatch):
    """kafkalab's SIGINT handler raises errors.Interrupted (not KeyboardInterrupt): the job,
    in a session of its own, is stopped all the same, and the interrupt goes on up."""
    import os
    import signal
    import threading

    from kafkalab.errors import Interrupted

    sc = spark.locate(lab_with(tmp_path, ["spark"]))
    pid_file = tmp_path / "job.pid"
    job = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"]
    monkeypatch.setattr(spark, "locate", lambda cluster=None: sc)
    monkeypatch.setattr(spark, "resolve_job", lambda job: tmp_path / "ride_counts.py")
    monkeypatch.setattr(spark, "submit_command", lambda *a, **kw: (job, dict(os.environ)))

    def interrupt(_signum, _frame):
        raise Interrupted

    previous = signal.signal(signal.SIGINT, interrupt)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(Interrupted):
            spark.submit("ride_counts", cluster=sc.cluster)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    assert not stat.exists() or stat.read_text().split()[2] == "Z"  # gone (or a zombie)
