"""PySpark jobs on the cluster's Spark hosts (a Spark standalone cluster), submitted from the
controller side.

The driver runs here, where the cluster is reached (its network namespace, or the
controller for an inventory without one), with this environment's Python (so a
job can import confluent-kafka and kafkalab), on the Spark build the cluster runs (the
cached tarball, unpacked once: same jars, same Kafka connector). Executors run on the
spark_worker machines. This is client deploy mode: Spark's standalone cluster mode does
not take Python applications, and a driver here keeps the job's console output, its
Ctrl-C and its exit code on the learner's terminal.

Checkpoints: the driver writes offsets and commits, executors write the state of
aggregations. Without a shared filesystem both sides use the same local path,
/var/tmp/kafkalab-<cluster name>/checkpoints/<job> (the name is the embedded cluster's
namespace; writable by root here and by the spark user
on the machines, and kept across reboots); a restarted job finds its offsets here and its
state on the worker. With more than one worker, state may land on any of them: give
the jobs a shared checkpoint filesystem first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.artifacts import spark as spark_artifact
from kafkalab.errors import INTERRUPTS, KafkalabError
from kafkalab.paths import repo_root
from kafkalab.processes import stop_group
from kafkalab.targets import resolve
from kafkalab.targets.cluster import InventoryCluster

MASTER_PORT = 7077
MASTER_WEBUI_PORT = 8080
# What the cluster gives one job: one executor on the worker, the least memory Spark takes.
EXECUTOR_MEMORY = "512m"
DRIVER_MEMORY = "512m"
EXECUTOR_PYTHON = "/usr/bin/python3"
# The jobs' few keys do not need Spark's 200 shuffle partitions (each one a state store).
SHUFFLE_PARTITIONS = 2
# Short-lived JVMs on a couple of shared cores: the quick JIT and the serial collector.
JVM_OPTIONS = "-Djava.net.preferIPv4Stack=true -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A job's name becomes a path on every machine (its checkpoint, deleted as root by `reset`).
JOB_NAME = re.compile(r"[a-z0-9_-]+")
# A cluster's network namespace name becomes a path here (/var/tmp/kafkalab-<ns>): no `/`.
_NS_NAME = re.compile(r"[A-Za-z0-9_.-]+")

LOG4J2 = """# Written by kafkalab: the driver logs warnings only, the jobs print their own progress.
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# Harmless at start-up on a machine without Hadoop native libraries.
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
# The Kafka sink's producer warns about every fresh metadata fetch.
logger.kafka.name = org.apache.kafka
logger.kafka.level = error
"""


@dataclass
class SparkCluster:
    """Where a cluster's Spark and Kafka are, as a driver on the controller side sees them."""

    cluster: InventoryCluster  # the cluster the Spark hosts are part of
    master_host: str
    master_address: str
    driver_address: str
    bootstrap: str
    workers: list[str]

    @property
    def master_url(self) -> str:
        return f"spark://{self.master_address}:{MASTER_PORT}"

    @property
    def webui(self) -> str:
        return f"http://{self.master_address}:{MASTER_WEBUI_PORT}"

    @property
    def checkpoint_root(self) -> str:
        return f"{checkpoint_root(self.cluster.name)}/checkpoints"

    def checkpoint(self, job: str) -> str:
        """A job's checkpoint folder, by the job's name (job_name)."""
        if not JOB_NAME.fullmatch(job):
            raise KafkalabError(f"job name {job!r}: a-z, 0-9, _ and - only")
        return f"{self.checkpoint_root}/{job}"


def locate(cluster: InventoryCluster | None = None) -> SparkCluster:
    """The Spark hosts of this cluster (by default the one kafkalab.targets.resolve picks:
    KAFKALAB_INVENTORY, a Vagrant lab up here, the embedded one); a clear error when it
    has none."""
    cluster = cluster or resolve.cluster()
    topo = cluster.layout()
    if topo is None:
        add = cluster.how_to_add("--with spark", "a Spark host")
        raise KafkalabError(f"no lab here yet: {add}")
    machines = topo.machines()
    masters = [m for m in machines if "spark_master" in m.groups]
    if not masters:
        raise KafkalabError(
            f"this lab has no Spark host: {cluster.how_to_add('--with spark', 'a Spark host')}"
            " (the Kafka cluster stays as it is)"
        )
    brokers = [m for m in machines if "kafka_broker" in m.groups]
    return SparkCluster(
        cluster=cluster,
        master_host=masters[0].name,
        master_address=masters[0].address,
        driver_address=cluster.controller_address(masters[0].address),
        bootstrap=",".join(f"{m.address}:9092" for m in brokers),
        workers=[m.name for m in machines if "spark_worker" in m.groups],
    )


def job_name(job: Path) -> str:
    """The job's name (Spark's app name, its checkpoint folder): its file name without .py,
    `_` as `-`. Only a-z, 0-9, `_` and `-`: the name ends up in paths deleted as root."""
    if job.suffix != ".py" or not JOB_NAME.fullmatch(job.stem):
        raise KafkalabError(
            f"job file {job.name!r}: a job's file is named with a-z, 0-9, _ and - only, and"
            " ends in .py (e.g. ride_counts.py); rename it"
        )
    return job.stem.replace("_", "-")


def driver_conf_dir(sc: SparkCluster) -> Path:
    """SPARK_CONF_DIR of drivers on the controller side (log levels only)."""
    conf = sc.cluster.state / "spark" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    log4j = conf / "log4j2.properties"
    if not log4j.exists() or log4j.read_text() != LOG4J2:
        log4j.write_text(LOG4J2)
    return conf


def submit_command(
    sc: SparkCluster, job: Path, args: list[str], conf: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command line (inside the cluster's network) and its environment."""
    home = spark_artifact.unpacked()
    settings = {
        "spark.app.name": job_name(job),
        "spark.driver.host": sc.driver_address,
        "spark.driver.bindAddress": sc.driver_address,
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.pyspark.python": EXECUTOR_PYTHON,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
        "spark.sql.session.timeZone": "UTC",
        # Streaming queries do not use adaptive execution; saying so spares a warning per query.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.streaming.checkpointLocation": sc.checkpoint(job_name(job)),
        "spark.kafkalab.bootstrap.servers": sc.bootstrap,
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        **(conf or {}),
    }
    cmd = [str(home / "bin" / "spark-submit"), "--master", sc.master_url]
    cmd += ["--deploy-mode", "client"]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(job), *args]
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(home),
        SPARK_CONF_DIR=str(driver_conf_dir(sc)),
        SPARK_LOCAL_IP=sc.driver_address,
        PYTHONUNBUFFERED="1",
        # The jobs may import kafkalab (e.g. the expected counts) from this checkout.
        PYTHONPATH=os.pathsep.join(p for p in (str(repo_root()), env.get("PYTHONPATH")) if p),
    )
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return sc.cluster.wrap(cmd), env


def resolve_job(job: str | Path) -> Path:
    """A job file by path, or by name under spark/jobs/ (`ride_counts` or `ride_counts.py`)."""
    path = Path(job)
    candidates = [path, repo_root() / path, repo_root() / "spark" / "jobs" / path.name]
    candidates.append(repo_root() / "spark" / "jobs" / f"{path.name}.py")
    for c in candidates:
        if c.is_file():
            job_name(c.resolve())  # a name that is safe in paths, or a clear error
            return c.resolve()
    known = ", ".join(p.name for p in sorted((repo_root() / "spark" / "jobs").glob("*.py")))
    raise KafkalabError(f"no job {job}; jobs in spark/jobs/: {known or 'none'}")


def submit(
    job: str | Path,
    args: list[str] | None = None,
    *,
    cluster: InventoryCluster | None = None,
    conf: dict[str, str] | None = None,
    stop_after: float | None = None,
    output: Path | None = None,
) -> int:
    """Run a job to its end (or stop it like Ctrl-C after `stop_after` s); its exit code.

    Output goes to the terminal, or to `output` when given."""
    sc = locate(cluster)
    path = resolve_job(job)
    cmd, env = submit_command(sc, path, args or [], conf)
    out = output.open("ab") if output else None
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=stop_after)
        except subprocess.TimeoutExpired:
            stop(proc)
            return proc.returncode
        except INTERRUPTS:
            stop(proc)
            raise
    finally:
        if out:
            out.close()


def start(
    job: str | Path,
    args: list[str] | None = None,
    *,
    cluster: InventoryCluster | None = None,
    conf: dict[str, str] | None = None,
    output: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start a job in the background (its own process group); its output goes to the
    terminal, or to `output` when given."""
    sc = locate(cluster)
    cmd, env = submit_command(sc, resolve_job(job), args or [], conf)
    if output is None:
        return subprocess.Popen(cmd, env=env, start_new_session=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("ab") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Stop a job like Ctrl-C does: SIGTERM to its process group (spark-submit's JVM and
    the Python driver), SIGKILL if it is still there after `timeout`."""
    stop_group(proc, grace=timeout)


def reset(job: str | Path, cluster: InventoryCluster | None = None) -> list[str]:
    """Forget a job's progress: delete its checkpoint here and on every worker."""
    sc = locate(cluster)
    name = job_name(resolve_job(job))
    path = sc.checkpoint(name)
    done = []
    here = Path(path)
    if here.exists() or here.is_symlink():
        # /var/tmp is anyone's: delete nothing unless every folder from there down is ours.
        root = checkpoint_root(sc.cluster.name)
        if (why := _not_ours(here, root.parent)) is not None:
            raise KafkalabError(
                f"not deleting {here}: it leads through a link or a folder not only yours "
                f"({why}); remove {root} and try again"
            )
        shutil.rmtree(here)
        done.append(f"controller:{path}")
    for worker in sc.workers:
        proc = subprocess.run(
            remove_command(sc, worker, path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if proc.returncode != 0:
            raise KafkalabError(f"could not delete {path} on {worker}: {proc.stderr.strip()}")
        done.append(f"{worker}:{path}")
    return done


def remove_command(sc: SparkCluster, worker: str, path: str) -> list[str]:
    """`sudo rm -rf -- <path>` on a worker; login_command quotes every word for the
    remote shell (ssh itself would join the words and let that shell split them again)."""
    return sc.cluster.login_command(worker, ["sudo", "rm", "-rf", "--", path])


def checkpoint_root(name: str) -> Path:
    """The controller side's checkpoints of a cluster's jobs (its machines keep theirs), by
    the cluster's name (an embedded cluster's: its network namespace)."""
    if not _NS_NAME.fullmatch(name):
        raise KafkalabError(f"cluster name {name!r}: use letters, digits, `_`, `.` and `-` only")
    path = Path(f"/var/tmp/kafkalab-{name}")
    if path.parent != Path("/var/tmp"):  # the pattern already makes sure; deletions trust it
        raise KafkalabError(f"internal: checkpoint folder {path} is not in /var/tmp")
    return path


def _not_ours(path: Path, base: Path) -> str | None:
    """Why a folder below `base` (/var/tmp) is not safe to delete: a link, not a directory,
    not ours, or writable by others, at any level from there down (None: safe)."""
    at = base
    for part in path.relative_to(base).parts:
        at = at / part
        st = at.lstat()
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return f"{at} is a link or not a folder"
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return f"{at} is not only yours (owner {st.st_uid}, mode {st.st_mode & 0o7777:o})"
    return None


def forget_checkpoints(ns: str) -> None:
    """Delete the controller side's checkpoints of a cluster (with it, on `down --purge`:
    a new cluster's topics start at offset 0, old checkpoints would skip their records).
    A folder that is not only ours (someone else's in /var/tmp) is left alone."""
    root = checkpoint_root(ns)
    if (root.exists() or root.is_symlink()) and _not_ours(root, root.parent) is None:
        shutil.rmtree(root, ignore_errors=True)


def master_state(sc: SparkCluster, timeout: float = 10) -> dict[str, Any]:
    """The master's JSON view (/json): status, workers, running applications."""

    def fetch() -> dict[str, Any]:
        with urllib.request.urlopen(f"{sc.webui}/json/", timeout=timeout) as resp:
            data: dict[str, Any] = json.load(resp)
            return data

    return sc.cluster.run(fetch)
