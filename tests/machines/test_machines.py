"""Embedded machines on the real thing (booted, not provisioned): each has cgroups of its
own, a boot is checked and a bad one repaired, a machine's links never lead the host's
writes out of it, the artifact cache is shared read-only, and Ctrl-C or a kill during `up`
leaves a lab that `down` can stop."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench.boot_soak import processes_of  # the lab's launchers and nspawns, as the soak finds them
from kafkalab.paths import repo_root
from kafkalab.targets import boot
from kafkalab.targets.machines import EmbeddedMachine
from kafkalab.targets.share import ARTIFACTS_ON_MACHINE
from tests import host_side
from tests.conftest import PREFIX

pytestmark = pytest.mark.cluster

NS = f"{PREFIX}-m"
STATE = repo_root() / ".kafkalab-test" / NS
ENV = dict(os.environ, KAFKALAB_STATE=str(STATE), KAFKALAB_NETNS=NS, COLUMNS="200")


def kafkalab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return host_side.kafkalab(ENV, *args, check=check)


def machine(name: str) -> EmbeddedMachine:
    return EmbeddedMachine(name, "", STATE / "machines" / name)


def in_machine(name: str, *command: str) -> subprocess.CompletedProcess[str]:
    pid = machine(name).pid()
    assert pid is not None, f"{name} is not running"
    init = boot.init_pid(pid)
    assert init is not None
    # As the machine's root (kafkalab's own checks run as nobody): the tests play the user.
    enter = ["nsenter", "-t", str(init), "-m", "-u", "-i", "-n", "-p", "--"]
    return subprocess.run([*enter, *command], capture_output=True, text=True)


def cgroup_exists(path: str) -> bool:
    """Is there a cgroup at `path` in the cgroup2 tree (mounted privately to look)?"""
    script = (
        'd=$(mktemp -d); mount -t cgroup2 none "$d"; test -e "$d/$1"; r=$?; '
        'umount "$d"; rmdir "$d"; exit $r'
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", path]
    )
    return proc.returncode == 0


@pytest.fixture(scope="module")
def lab() -> Iterator[None]:
    kafkalab("down", "--purge", check=False)
    try:
        kafkalab("up", "--brokers", "2", "--no-provision")
        yield
    finally:
        kafkalab("down", "--purge", check=False)


def test_boot_soak_with_a_cold_page_cache() -> None:
    """Five boots of three machines, the page cache dropped before each: every machine
    `running`, no reboot needed, each in a cgroup of its own (bench/boot_soak.py). Each boot
    follows an `up` stopped at a random moment (Ctrl-C or SIGKILL) and a purge that left no
    process of the lab (item 11's soak)."""
    env = dict(os.environ, KAFKALAB_SOAK_NS=f"{PREFIX}-soak")
    proc = subprocess.run(
        [sys.executable, "-m", "bench.boot_soak", "--boots", "5", "--interrupt", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo_root(),
        timeout=900,
    )
    report = json.loads(proc.stdout)
    assert report["summary"]["boots"] == 5
    for r in report["rounds"]:
        assert r["interrupted"].startswith(("SIGINT", "SIGKILL")), (report["summary"]["seed"], r)
        assert not r["interrupt_problems"], (report["summary"]["seed"], r)
        assert not r["error"] and not r["first_boot_problems"], r
        assert set(r["states"].values()) == {"running"}, r
        assert r["cgroups_distinct"], r
        for name, group in r["cgroups"].items():
            assert group.startswith(f"/kafkalab/{PREFIX}-soak/{name}/payload/"), r
    assert report["summary"]["bad"] == 0 and proc.returncode == 0
    assert not cgroup_exists(f"kafkalab/{PREFIX}-soak")  # the soak purged its lab


def test_each_machine_has_its_own_cgroup(lab: None) -> None:
    seen = {}
    for name in ("kafka1", "kafka2"):
        out = in_machine(name, "cat", "/proc/self/cgroup").stdout
        pid = machine(name).pid()
        assert pid is not None
        init = boot.init_pid(pid)
        host_view = Path(f"/proc/{init}/cgroup").read_text()
        seen[name] = next(ln for ln in host_view.splitlines() if ln.startswith("0::"))
        assert f"/kafkalab/{NS}/{name}/payload" in seen[name]
        # Inside, the machine's own cgroup namespace: its tree starts at its payload.
        assert "kafkalab" not in out
    assert seen["kafka1"] != seen["kafka2"]


def test_each_machine_made_its_own_host_key(lab: None) -> None:
    """One Ed25519 host key per machine, made at its first boot (not in the image), and
    sshd offers it; no RSA key (ssh-keygen -A's took seconds of a boot's CPU)."""
    keys = {}
    for name in ("kafka1", "kafka2"):
        listing = in_machine(name, "ls", "/etc/ssh").stdout.split()
        assert [f for f in listing if f.startswith("ssh_host_")] == [
            "ssh_host_ed25519_key",
            "ssh_host_ed25519_key.pub",
        ]
        offered = in_machine(name, "sshd", "-T").stdout.splitlines()
        assert [ln for ln in offered if ln.startswith("hostkey ")] == [
            "hostkey /etc/ssh/ssh_host_ed25519_key"
        ]
        keys[name] = in_machine(name, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").stdout
        assert keys[name].startswith("ssh-ed25519 ")
    assert keys["kafka1"] != keys["kafka2"]


def test_status_and_doctor_show_boot_state(lab: None) -> None:
    data = json.loads(kafkalab("status", "--json").stdout)
    assert {m["host"]: m["boot"] for m in data["machines"]} == {
        "kafka1": {"state": "running", "failed_units": [], "ok": True},
        "kafka2": {"state": "running", "failed_units": [], "ok": True},
    }
    out = kafkalab("doctor", check=False).stdout
    assert "machine kafka1" in out and "machine kafka2" in out


def test_a_degraded_machine_is_reported_and_a_stuck_one_rebooted_by_up(lab: None) -> None:
    """A failed unit (here one made to fail) leaves kafka2 `degraded`: status says so with
    the unit. While its user can log in, the next `up` reports it and leaves it running
    (its broker serves). Once logins are refused (/run/nologin, what a failed
    systemd-user-sessions leaves), `up` shows the unit and its journal and reboots kafka2,
    and only kafka2."""
    failing = in_machine(
        "kafka2",
        "systemd-run",
        "--unit=kltest-broken",
        "--wait",
        "sh",
        "-c",
        "echo broken-on-purpose; exit 3",
    )
    assert failing.returncode != 0
    assert in_machine("kafka2", "systemctl", "is-system-running").stdout.strip() == "degraded"
    data = json.loads(kafkalab("status", "--json").stdout)
    kafka2 = next(m for m in data["machines"] if m["host"] == "kafka2")
    assert kafka2["boot"] == {
        "state": "degraded",
        "failed_units": ["kltest-broken.service"],
        "ok": False,
    }
    assert "running, boot degraded (failed: kltest-broken.service)" in kafkalab("status").stdout
    before = {n: machine(n).pid() for n in ("kafka1", "kafka2")}
    up = kafkalab("up", "--no-provision")
    left = "kafka2 runs degraded, left running: degraded, failed: kltest-broken.service"
    assert left in up.stdout
    assert "rebooting" not in up.stdout
    assert machine("kafka2").pid() == before["kafka2"]
    # Stuck: logins refused as on the bad boots of issue 10.
    assert in_machine("kafka2", "touch", "/run/nologin").returncode == 0
    up = kafkalab("up", "--no-provision")
    assert "kafka2 did not boot cleanly: degraded, failed: kltest-broken.service" in up.stdout
    assert "broken-on-purpose" in up.stdout  # its journal lines
    assert "rebooting kafka2 once" in up.stdout and "kafka1 did not" not in up.stdout
    assert machine("kafka1").pid() == before["kafka1"]
    assert machine("kafka2").pid() not in (None, before["kafka2"])
    assert in_machine("kafka2", "systemctl", "is-system-running").stdout.strip() == "running"


def test_host_writes_never_follow_a_machines_links(lab: None, tmp_path: Path) -> None:
    """The attack of issue 10: links made inside a machine to host files, then `up`."""
    secret = tmp_path / "host-shadow"
    secret.write_text("root:do-not-touch\n")
    secret.chmod(0o640)
    hosts = tmp_path / "host-hosts"
    hosts.write_text("127.0.0.1 the-host\n")
    # As the vagrant user (it owns ~/.ssh), and as root for /etc/hosts.
    kafkalab("exec", "kafka1", "--", "ln", "-sf", str(secret), "/home/vagrant/.ssh/authorized_keys")
    assert in_machine("kafka1", "ln", "-sf", str(hosts), "/etc/hosts").returncode == 0
    assert in_machine("kafka1", "test", "-L", "/home/vagrant/.ssh/authorized_keys").returncode == 0
    # root's keys (Ansible logs in as root) as the machine's root could link them
    root_keys = tmp_path / "host-root-keys"
    root_keys.write_text("ssh-ed25519 AAAA the-host-owner\n")
    link = in_machine("kafka1", "ln", "-sf", str(root_keys), "/root/.ssh/authorized_keys")
    assert link.returncode == 0
    kafkalab("up", "--no-provision")
    assert secret.read_text() == "root:do-not-touch\n"
    assert root_keys.read_text() == "ssh-ed25519 AAAA the-host-owner\n"
    assert in_machine("kafka1", "test", "-L", "/root/.ssh/authorized_keys").returncode == 1
    st = secret.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o640, os.getuid(), os.getgid())
    assert hosts.read_text() == "127.0.0.1 the-host\n"
    # The machine got regular files back, and logins work with the rewritten key.
    assert in_machine("kafka1", "test", "-L", "/home/vagrant/.ssh/authorized_keys").returncode == 1
    assert (
        kafkalab("exec", "kafka1", "--", "getent", "hosts", "kafka1").stdout.split()[0]
        == "10.77.0.11"
    )


def test_the_archives_are_shared_read_only_and_a_changed_copy_put_back(lab: None) -> None:
    """The inventory names each archive where the machines see it, in the lab's share: the
    bytes of the host's cache. A machine's plain writes there fail (read-only); its root can
    remount its view writable (nspawn leaves it CAP_SYS_ADMIN), and what it changes then is
    the lab's own copy, never the cache, and the next `up` puts the cache's bytes back."""
    hostvars = yaml.safe_load((STATE / "inventory" / "hosts.yml").read_text())["all"]["vars"]
    archive = Path(hostvars["kafka_archive"])
    inside = hostvars["kafka_archive_on_host"]
    assert inside == f"{ARTIFACTS_ON_MACHINE}/{archive.name}"
    assert hostvars["kafka_python_wheel_on_host"].startswith(f"{ARTIFACTS_ON_MACHINE}/kafka_python")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()

    def seen_in(name: str) -> str:
        seen = kafkalab("exec", name, "--", "sha256sum", inside)
        return seen.stdout.split()[0]

    assert seen_in("kafka1") == seen_in("kafka2") == digest
    # As the machine's own root (over ssh and sudo: nsenter from here keeps the host's
    # capabilities, which the machine's processes do not have).
    write = kafkalab("exec", "kafka1", "--", "sudo", "truncate", "-s", "0", inside, check=False)
    assert write.returncode != 0 and "Read-only file system" in write.stderr + write.stdout
    kafkalab("exec", "kafka1", "--", "sudo", "mount", "-o", "remount,rw", ARTIFACTS_ON_MACHINE)
    kafkalab("exec", "kafka1", "--", "sudo", "truncate", "-s", "0", inside)
    assert seen_in("kafka2") != digest  # the lab's copy, which both machines see
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == digest  # the cache: untouched
    kafkalab("up", "--no-provision")
    assert seen_in("kafka1") == seen_in("kafka2") == digest


def test_ctrl_c_and_kill_during_up_leave_a_lab_down_can_stop(lab: None) -> None:
    for how in (signal.SIGINT, signal.SIGKILL):
        kafkalab("down")
        proc = host_side.on_host(  # up is the host's to run (the main thread is in a lab's)
            lambda: subprocess.Popen(
                [sys.executable, "-m", "kafkalab", "up", "--no-provision"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=ENV,
            )
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if "booting" in line:
                break
        time.sleep(0.3)  # inside the boot: machines starting
        proc.send_signal(how)
        start = time.monotonic()
        rest = proc.communicate(timeout=30)[0]
        assert time.monotonic() - start < 5, f"{how.name}: took {time.monotonic() - start:.1f}s"
        if how == signal.SIGINT:
            assert proc.returncode == 130 and "interrupted" in rest, rest
        assert processes_of(STATE), "the signal came too late: no machine was booting"
        kafkalab("down")
        assert processes_of(STATE) == [], f"after {how.name}, down left machines running"
        assert not cgroup_exists(f"kafkalab/{NS}")
    # And the lab boots again, reachable over ssh (a login, not just a banner).
    kafkalab("up", "--no-provision")
    assert kafkalab("exec", "kafka2", "--", "hostname").stdout.strip() == "kafka2"


def test_ctrl_c_in_exec_is_the_commands(lab: None, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) during `exec` stops the command at
    once; kafkalab says `interrupted`, nothing about machines, and exits 130."""
    # Files, not pipes: ssh's shared connection (ControlPersist) outlives the command and
    # would hold a pipe open.
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab", "exec", "kafka1", "--", "sleep", "60"],
            stdin=subprocess.DEVNULL,
            stdout=o,
            stderr=e,
            env=ENV,
            start_new_session=True,
        )
    time.sleep(3)  # logged in and sleeping
    assert proc.poll() is None, (out.read_text(), err.read_text())
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=10) == 130, (out.read_text(), err.read_text())
    assert "interrupted" in err.read_text()
    assert "machines that were started" not in err.read_text()
