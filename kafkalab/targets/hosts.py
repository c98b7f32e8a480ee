"""Your own hosts: `kafkalab up -i <inventory>` provisions machines kafkalab did not make.

What `up` does for its embedded machines once they run, on an inventory of existing hosts:
the Kafka archive for the inventory's kafka_version (and the Spark and ksqlDB archives when
those groups have hosts) from the cache, handed to ansible/site.yml as extra vars, the same
progress lines, the roles' health gates, the changed count. Before any host is touched, a
preflight: the inventory keeps the contract (kafkalab.inventory.check_contract) and every
host answers ssh with the inventory's own settings; each problem is one line naming the host.

There is no network namespace here: Ansible runs where kafkalab runs (inside a namespace
when kafkalab was started in one, `ip netns exec <ns> kafkalab up -i ...`). kafkalab never
stops or wipes hosts it did not make (`down -i` says so and does nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalab import inventory
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import kafka_python as kafka_python_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root
from kafkalab.targets import provision, ssh, statedir

SSH_TIMEOUT = 10  # seconds ssh may take to connect to one host (Ansible's `timeout`)
SSH_RETRIES = 1  # one more try: a host's sshd may drop a first connection (ansible.cfg)
PING_DEADLINE = 90  # seconds for the whole reachability check, however many hosts
BIN = Path(sys.executable).parent
REACH = "Make sure this host can be reached over ssh: "


@dataclass
class Provisioned:
    listing: inventory.Listing
    recap: provision.Recap
    seconds: float

    @property
    def changed(self) -> int:
        return self.recap.changed


def up(path: Path, progress: Callable[[str], None]) -> Provisioned:
    """Preflight, archives, ansible/site.yml: one command at a time per inventory."""
    start = time.monotonic()
    work = work_dir(path)
    with statedir.locked(work / "lock", f"the hosts of {path}"):
        listing = preflight(path, progress)
        extra = archives(listing, progress)
        progress("provisioning with ansible/site.yml (first run: a few minutes)")
        recap = provision.run_playbook(
            path.resolve(),
            work / "provision.log",
            None,
            extra=["--extra-vars", json.dumps(extra)],
            on_task=lambda name: progress(f"  {name}"),
            env=connection_env(path),
        )
    return Provisioned(listing, recap, time.monotonic() - start)


def work_dir(path: Path) -> Path:
    """Where kafkalab keeps the log and lock of one inventory's hosts (in the cache dir:
    the hosts are not ours, and there is no state dir of machines for them)."""
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    return cache_root() / "hosts" / f"{resolved.stem}-{digest}"


def connection_env(path: Path) -> dict[str, str]:
    """Ansible's ssh connection sharing for these hosts as seen from this network namespace:
    the same addresses from another namespace are other machines, so its sockets are never
    shared with another inventory or namespace (an inventory's ansible_control_path_dir
    still wins)."""
    here = os.stat("/proc/self/ns/net").st_ino
    sockets = ssh.control_dir(Path(f"{path.resolve()}@netns-{here}"))
    return {"ANSIBLE_SSH_CONTROL_PATH_DIR": str(sockets / "ansible")}


def preflight(path: Path, progress: Callable[[str], None]) -> inventory.Listing:
    """The inventory as Ansible reads it, when it keeps the contract and every host answers
    ssh; else one KafkalabError with a line a problem."""
    listing = read(path)
    problems = inventory.check_contract(listing)
    progress(f"checking that the {len(listing.hostvars)} hosts of {path} answer ssh")
    problems += unreachable(path, list(listing.hostvars))
    if problems:
        lines = "\n".join(f"  {line}" for line in problems)
        raise KafkalabError(f"{path}: refused before any host was touched:\n{lines}")
    return listing


def read(path: Path) -> inventory.Listing:
    """`ansible-inventory --list` of the file (YAML or INI, with its group_vars/host_vars)."""
    if not path.exists():
        raise KafkalabError(f"{path}: no such inventory (copy inventory/example.yml)")
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(path), "--list"],
        capture_output=True,
        text=True,
        env={**provision.ansible_env(), "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True"},
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise KafkalabError(f"{path}: not an inventory Ansible can read: {_why(proc.stderr)}")
    listing = inventory.Listing.from_ansible(json.loads(proc.stdout))
    if not listing.hostvars:
        raise KafkalabError(f"{path}: no hosts in it (copy inventory/example.yml)")
    return listing


def _why(stderr: str) -> str:
    """The first reason Ansible gives for not reading an inventory, with where."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    reason = next((ln.split(" plugin: ", 1)[1] for ln in lines if " plugin: " in ln), None)
    origin = next((ln.removeprefix("Origin: ") for ln in lines if ln.startswith("Origin: ")), "")
    if reason is None:
        return lines[-1] if lines else "ansible-inventory failed"
    return f"{reason} ({origin})" if origin else reason


def unreachable(path: Path, hosts: list[str]) -> list[str]:
    """`kafka3: unreachable by ssh: <ssh's reason>` for each host that does not answer
    Ansible's ping with the inventory's connection settings (user, key, port, ssh args,
    become), all hosts at once, in bounded time."""
    if not hosts:
        return []
    with tempfile.TemporaryDirectory(prefix="kafkalab-ping-") as tree:
        env = {
            **provision.ansible_env(),
            **connection_env(path),
            "ANSIBLE_TIMEOUT": str(SSH_TIMEOUT),
            "ANSIBLE_SSH_RETRIES": str(SSH_RETRIES),
            # one JSON file a host, whatever the screen output looks like
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "True",
            "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
            "ANSIBLE_CALLBACK_TREE_DIR": tree,
        }
        cmd = [str(BIN / "ansible"), "all", "-i", str(path.resolve()), "-m", "ansible.builtin.ping"]
        cmd += ["--forks", str(min(max(len(hosts), 10), 50))]
        # its own session: at the deadline Ansible goes with its workers and their ssh
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=PING_DEADLINE)
        except subprocess.TimeoutExpired:
            pass  # the hosts without an answer are said below
        finally:  # the deadline, or Ctrl-C
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        answers = {p.name: json.loads(p.read_text()) for p in Path(tree).iterdir()}
    return [line for host in hosts if (line := _ping_problem(host, answers.get(host)))]


def _ping_problem(host: str, answer: dict[str, object] | None) -> str | None:
    if answer is None:
        return f"{host}: unreachable by ssh: no answer within {PING_DEADLINE}s"
    msg = str(answer.get("msg", ""))
    if answer.get("unreachable"):
        reason = msg.split(REACH, 1)[-1]
        said = [ln.strip() for ln in reason.splitlines() if ln.strip()]
        said = [ln for ln in said if not ln.startswith("Warning: Permanently added")]
        return f"{host}: unreachable by ssh: {' / '.join(said) or 'no reason given'}"
    if answer.get("failed"):
        first = msg.strip().splitlines()[0] if msg.strip() else "no reason given"
        return f"{host}: answers ssh, but Ansible cannot work there: {first}"
    return None


def archives(listing: inventory.Listing, progress: Callable[[str], None]) -> dict[str, str]:
    """The extra vars that hand the roles their archives from the cache: kafka_archive for
    the inventory's kafka_version, kafka_python_wheel, spark_archive and ksqldb_archive when
    those groups have hosts (a missing one is an error that says where to put it, before any
    host is touched)."""
    first = next(iter(listing.hostvars.values()))
    found = {
        "kafka_archive": kafka_artifact.resolve_kafka(first["kafka_version"], progress=progress),
        "kafka_python_wheel": kafka_python_artifact.resolve_kafka_python(progress=progress),
    }
    spark_hosts = listing.hosts_of("spark_master", "spark_worker")
    if spark_hosts:
        version = listing.hostvars[spark_hosts[0]].get(
            "spark_version", spark_artifact.SPARK_VERSION
        )
        found["spark_archive"] = spark_artifact.resolve_spark(str(version), progress=progress)
    ksqldb_hosts = listing.hosts_of("ksqldb")
    if ksqldb_hosts:
        version = listing.hostvars[ksqldb_hosts[0]].get(
            "ksqldb_confluent_version", ksqldb_artifact.CONFLUENT_VERSION
        )
        found["ksqldb_archive"] = ksqldb_artifact.resolve_ksqldb(str(version))
    return {var: str(archive) for var, archive in found.items()}


def refuse_down(path: Path, embedded_inventory: Path) -> KafkalabError:
    """What `down -i` says instead of doing anything: kafkalab stops only what it made."""
    if path.resolve() == embedded_inventory.resolve():
        return KafkalabError(
            f"{path} is the embedded cluster's own inventory: `kafkalab down` (without -i) "
            "stops its machines"
        )
    if path.name == "vagrant_ansible_inventory" and len(path.resolve().parents) > 4:
        folder = path.resolve().parents[4]
        return KafkalabError(
            f"{path} lists Vagrant VMs: `vagrant halt` (or `vagrant destroy`) in {folder} "
            "stops them"
        )
    return KafkalabError(
        f"{path} lists your own hosts, and kafkalab never stops or wipes hosts it did not "
        f"make; to stop Kafka there: ansible all -i {path} -b -m ansible.builtin.systemd "
        "-a 'name=kafka state=stopped'"
    )
