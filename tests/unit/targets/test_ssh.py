"""ssh.wait_ssh: a banner is not a login. A machine whose sshd answers but refuses
the login (a booting machine's /run/nologin) is waited for, and each refusal is logged;
the machines' logins are tried at once, and one that hangs fails only its own machine."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import ssh


class FakeMachine:
    def __init__(self, home: Path, name: str = "kafka1") -> None:
        self.name, self.address, self.home = name, "10.77.0.11", home
        home.mkdir(exist_ok=True)

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
    monkeypatch.setattr(ssh.netns, "run_in", lambda _ns, fn: fn())
    monkeypatch.setattr(ssh.time, "sleep", lambda _s: None)


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


def test_a_hung_login_fails_only_its_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka1's login hangs past the login timeout: kafka2's and kafka3's, which answered
    long before, still count, and only kafka1 is named, with the hang in its probe log."""
    monkeypatch.setattr(ssh, "LOGIN_TIMEOUT", 1.0)
    ms: list[Any] = [FakeMachine(tmp_path / f"kafka{i}", f"kafka{i}") for i in (1, 2, 3)]

    def login(m: FakeMachine) -> list[str]:
        return ["sleep", "30"] if m.name == "kafka1" else ["true"]

    done: list[str] = []
    with pytest.raises(KafkalabError) as err:
        ssh.wait_ssh("ns", ms, timeout=0, tick=done.append, login=login)
    assert done == ["kafka2", "kafka3"]
    assert "after 0s: kafka1 (" in str(err.value)
    assert "no answer within 1s" in (tmp_path / "kafka1" / "ssh-probe.log").read_text()
    assert not (tmp_path / "kafka2" / "ssh-probe.log").exists()
