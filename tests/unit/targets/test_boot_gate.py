"""The boot gate (ansible/boot_gate.yml, provision.run_while_booting): ansible-playbook starts
while the machines boot and reaches no host before kafkalab says they booted; a boot that
fails stops it there. A real ansible-playbook, on a local host."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root
from kafkalab.targets import provision

PLAYBOOK = """
- name: The gate
  ansible.builtin.import_playbook: {gate}
- name: After the gate
  hosts: all
  gather_facts: false
  tasks:
    - name: Reach the host
      ansible.builtin.command: touch {marker}
      changed_when: true
"""


def setup(tmp_path: Path) -> tuple[Path, Path]:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        f"h1 ansible_connection=local ansible_python_interpreter={sys.executable}\n"
    )
    playbook = tmp_path / "play.yml"
    marker = tmp_path / "reached"
    gate = repo_root() / "ansible" / "boot_gate.yml"
    playbook.write_text(PLAYBOOK.format(gate=gate, marker=marker))
    return inventory, playbook


def run(tmp_path: Path, boot, progress: list[str]) -> provision.Recap:
    inventory, playbook = setup(tmp_path)
    written: list[bool] = []

    def machines_started_then(started) -> None:
        started()  # the machines run: the inventory is written and Ansible starts
        assert written == [True]
        boot()

    return provision.run_while_booting(
        machines_started_then,
        lambda: written.append(True),
        inventory,
        tmp_path / "provision.log",
        None,
        tmp_path / "boot-gate",
        progress.append,
        playbook=str(playbook),
    )


def at_the_gate(tmp_path: Path) -> None:
    """Until ansible-playbook has started the gate's task (it is waiting there), then 1 s."""
    log, deadline = tmp_path / "provision.log", time.monotonic() + 120
    while "TASK [Wait until kafkalab has booted every machine]" not in (
        log.read_text() if log.exists() else ""
    ):
        assert time.monotonic() < deadline, "ansible-playbook never reached the gate"
        time.sleep(0.1)
    time.sleep(1)


def test_the_host_is_reached_only_once_the_machines_booted(tmp_path):
    marker, seen, progress = tmp_path / "reached", {}, []

    def boot() -> None:
        at_the_gate(tmp_path)
        seen["reached while booting"] = marker.exists()

    recap = run(tmp_path, boot, progress)
    assert seen["reached while booting"] is False
    assert marker.exists() and recap.changed == 1
    # task names are shown after the boot's own lines, in order
    start = progress.index("provisioning with ansible/site.yml (first run: a few minutes)")
    assert progress[start + 1 :] == [
        "  Wait until kafkalab has booted every machine",
        "  Reach the host",
    ]


def test_a_boot_that_fails_stops_ansible_at_the_gate(tmp_path):
    def boot() -> None:
        at_the_gate(tmp_path)
        raise KafkalabError("kafka2 did not boot")

    with pytest.raises(KafkalabError, match="kafka2 did not boot"):
        run(tmp_path, boot, [])
    assert not (tmp_path / "reached").exists()
    log = (tmp_path / "provision.log").read_text()
    assert "Reach the host" not in log


def test_the_gate_gives_up_when_kafkalab_is_gone(tmp_path):
    """ansible-playbook left behind by a kafkalab killed mid-boot does not wait for ever."""
    inventory, playbook = setup(tmp_path)
    gone = subprocess.Popen(["true"])
    gone.wait()
    env = {
        **provision.ansible_env(),
        **provision.strategy_env(dict(os.environ)),
        provision.GATE_ENV: str(tmp_path / "never-written"),
        "KAFKALAB_PID": str(gone.pid),
    }
    ansible = Path(sys.executable).parent / "ansible-playbook"
    proc = subprocess.run(
        [str(ansible), "-i", str(inventory), str(playbook)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "kafkalab stopped before the machines booted" in proc.stdout
    assert not (tmp_path / "reached").exists()


def test_a_report_that_fails_leaves_no_playbook_blocked(tmp_path):
    """The output is drained and logged whole when showing a task fails (a closed terminal:
    BrokenPipeError); wait() raises that error once Ansible is done."""
    script = "import sys\nfor i in range(20000): print(f'TASK [task {i}] ' + 'x' * 40)\n"
    shown: list[str] = []

    def show(name: str) -> None:
        shown.append(name)
        raise BrokenPipeError("the terminal went away")

    run = provision.Playbook(
        [sys.executable, "-c", script], dict(os.environ), tmp_path / "p.log", show
    )
    with pytest.raises(BrokenPipeError):
        run.wait()
    assert shown == ["task 0"]
    assert run.proc.returncode == 0
    assert len((tmp_path / "p.log").read_text().splitlines()) == 20000
