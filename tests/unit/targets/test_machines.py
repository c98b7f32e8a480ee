"""ssh.wait_ssh: a banner is not a login. A machine whose sshd answers but refuses
the login (a booting machine's /run/nologin) is waited for, and each refusal is logged."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import machines, ssh


class FakeMachine:
    def __init__(self, home: Path, name: str = "kafka1") -> None:
        self.name, self.address, self.home = name, "10.77.0.11", home

    def running(self) -> bool:
        return True


class Banner:
    def __enter__(self) -> Banner:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def settimeout(self, _t: float) -> None:
        pass

    def recv(self, _n: int) -> bytes:
        return b"SSH-"


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "create_connection", lambda *_a, **_k: Banner())
    monkeypatch.setattr(machines.netns, "run_in", lambda _ns, fn: fn())
    monkeypatch.setattr(machines.time, "sleep", lambda _s: None)


def test_refused_logins_are_retried_and_logged(tmp_path: Path) -> None:
    m = FakeMachine(tmp_path)
    tries = tmp_path / "tries"
    # Refused twice (exit 255, "Connection closed"), then let in.
    script = (
        f"n=$(cat {tries} 2>/dev/null || echo 0); echo $((n+1)) > {tries}; "
        '[ "$n" -ge 2 ] || { echo "Connection closed by 10.77.0.11 port 22" >&2; exit 255; }'
    )
    done: list[str] = []
    ssh.wait_ssh("ns", [m], timeout=30, tick=done.append, login=lambda _m: ["sh", "-c", script])  # type: ignore[list-item]
    assert done == ["kafka1"]
    log = (tmp_path / "ssh-probe.log").read_text().splitlines()
    assert len(log) == 2 and all("exit 255: Connection closed" in line for line in log)


def test_a_login_never_allowed_names_the_machine_and_the_log(tmp_path: Path) -> None:
    m: Any = FakeMachine(tmp_path)
    with pytest.raises(KafkalabError, match=r"refuses the login on kafka1: see ssh-probe\.log"):
        ssh.wait_ssh("ns", [m], timeout=0, login=lambda _m: ["false"])


def test_the_machines_logins_are_tried_at_once(tmp_path: Path) -> None:
    """Each machine's login waits until the other machines' logins have started: tried in
    turn, the first would give up (exit 1) and wait_ssh, given no time, fail."""
    ms: list[Any] = [FakeMachine(tmp_path, f"kafka{i}") for i in (1, 2, 3)]

    def login(m: FakeMachine) -> list[str]:
        return [
            "sh",
            "-c",
            f"touch {tmp_path}/{m.name}.started; for _ in $(seq 50); do "
            f"[ $(ls {tmp_path} | grep -c started) = 3 ] && exit 0; sleep 0.1; done; exit 1",
        ]

    done: list[str] = []
    ssh.wait_ssh("ns", ms, timeout=0, tick=done.append, login=login)  # type: ignore[arg-type]
    assert done == ["kafka1", "kafka2", "kafka3"]


def test_a_machine_notes_the_artifact_dir_it_shares_and_forgets_a_replaced_one(
    tmp_path: Path,
) -> None:
    """shared_artifacts names the dir noted at start while that path is the same directory;
    a cache removed and made again (another inode, which the machine's mount does not
    show), a note missing, or a damaged one give None."""
    m = machines.EmbeddedMachine("kafka1", "10.77.0.11", tmp_path / "home")
    m.home.mkdir()
    cache = tmp_path / "artifacts"
    cache.mkdir()
    assert m.shared_artifacts() is None
    st = cache.stat()
    (m.home / "artifacts").write_text(f"{st.st_dev}:{st.st_ino} {cache}\n")
    assert m.shared_artifacts() == cache
    cache.rmdir()
    (tmp_path / "elsewhere").mkdir()  # takes the freed inode number, if any, first
    cache.mkdir()
    if cache.stat().st_ino != st.st_ino:
        assert m.shared_artifacts() is None
    (m.home / "artifacts").write_text("garbage\n")
    assert m.shared_artifacts() is None


def test_the_launcher_shares_the_artifact_dir_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start() writes a launcher whose nspawn binds the cache read-only at
    ARTIFACTS_ON_MACHINE, quoted (a state dir or cache may hold spaces), and notes it; a
    path nspawn's --bind-ro cannot take (a ':' in it) is not shared and not noted."""
    started: list[list[str]] = []

    class Proc:
        pid = 4242

    monkeypatch.setattr(machines.netns, "veth_pair", lambda *_a: None)
    monkeypatch.setattr(machines, "_name_in_use", lambda _n: None)
    monkeypatch.setattr(
        machines.subprocess, "Popen", lambda argv, **_k: started.append(argv) or Proc()
    )
    monkeypatch.setattr(machines.EmbeddedMachine, "remove_cgroups", lambda *_a, **_k: None)
    m = machines.EmbeddedMachine("kafka1", "10.77.0.11", tmp_path / "home")
    m.home.mkdir()
    cache = tmp_path / "my cache"
    cache.mkdir()
    assert m.start("klx", artifacts=cache) == 4242
    launcher = (m.home / "launch.sh").read_text()
    assert f"'--bind-ro={cache}:{machines.share.ARTIFACTS_ON_MACHINE}'" in launcher
    assert m.shared_artifacts() == cache
    m.pid_file.unlink()
    odd = tmp_path / "a:b"
    odd.mkdir()
    m.start("klx", artifacts=odd)
    assert "--bind-ro" not in (m.home / "launch.sh").read_text()
    assert m.shared_artifacts() is None
