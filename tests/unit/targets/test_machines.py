"""machines.wait_ssh: a banner is not a login. A machine whose sshd answers but refuses
the login (a booting machine's /run/nologin) is waited for, and each refusal is logged."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import machines


class FakeMachine:
    def __init__(self, home: Path) -> None:
        self.name, self.address, self.home = "kafka1", "10.77.0.11", home

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
    machines.wait_ssh(
        "ns", [m], timeout=30, tick=done.append, login=lambda _m: ["sh", "-c", script]
    )  # type: ignore[list-item]
    assert done == ["kafka1"]
    log = (tmp_path / "ssh-probe.log").read_text().splitlines()
    assert len(log) == 2 and all("exit 255: Connection closed" in line for line in log)


def test_a_login_never_allowed_names_the_machine_and_the_log(tmp_path: Path) -> None:
    m: Any = FakeMachine(tmp_path)
    with pytest.raises(KafkalabError, match=r"refuses the login on kafka1: see ssh-probe\.log"):
        machines.wait_ssh("ns", [m], timeout=0, login=lambda _m: ["false"])
