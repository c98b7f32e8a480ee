"""isolate/isolated/heal through the machine's own firewall: the `ip -o addr` parsing, the
nft ruleset, and the scripts themselves, run by bash against stand-ins for sudo, ip, nft
and systemctl (no cluster: what the scripts load into "nft" is what a machine would get)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kafkalab import inventory
from kafkalab.errors import KafkalabError
from kafkalab.failover import faults, isolation
from kafkalab.topology import Topology

EMBEDDED = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever
2: kc-kafka1    inet 10.77.0.11/24 brd 10.77.0.255 scope global kc-kafka1\\       valid_lft forever
2: kc-kafka1    inet6 fe80::a8b1:2ff:fe33:4455/64 scope link \\       valid_lft forever
"""
# A Vagrant VM: eth0 is the management network (ssh), eth1 the lab's private network.
VAGRANT = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 192.168.121.57/24 metric 1024 brd 192.168.121.255 scope global dynamic eth0
3: eth1    inet 192.168.56.11/24 brd 192.168.56.255 scope global eth1\\       valid_lft forever
3: eth1    inet6 fd00:56::11/64 scope global \\       valid_lft forever preferred_lft forever
"""


@pytest.mark.parametrize(
    ("shown", "address", "expected"),
    [
        (EMBEDDED, "10.77.0.11", "kc-kafka1"),
        (VAGRANT, "192.168.56.11", "eth1"),
        (VAGRANT, "192.168.121.57", "eth0"),
        (VAGRANT, "fd00:56:0::11", "eth1"),  # compared as addresses, not as text
        (VAGRANT, "10.77.0.11", None),
        (VAGRANT, "192.168.56.1", None),  # an address of the same network is not the host's
        (EMBEDDED, "127.0.0.1", None),  # never loopback
        ("3: eth1@if7    inet 10.1.0.5/16 scope global eth1\n", "10.1.0.5", "eth1"),
        ("garbage\n2: x\n2: eth9    inet not-an-address\n", "10.1.0.5", None),
    ],
)
def test_the_interface_is_the_one_that_carries_the_address(shown, address, expected):
    assert isolation.interface_of(shown, address) == expected


def test_the_lab_address_must_be_an_address():
    assert isolation.lab_address("fd00:56:0::11", "kafka1") == "fd00:56::11"
    with pytest.raises(KafkalabError, match=r"kafka1: kafkalab_address 'kafka1\.lab' is not an IP"):
        isolation.lab_address("kafka1.lab", "kafka1")
    with pytest.raises(KafkalabError, match="kafka1 has no kafkalab_address"):
        isolation.lab_address(None, "kafka1")


def rules(text: str, chain: str) -> list[str]:
    """The lines of one chain (up to its closing brace on a line of its own)."""
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index(f"chain {chain} {{") + 1
    return lines[start : lines.index("}", start)]


def test_the_ruleset_drops_the_lab_interface_both_ways_but_ssh():
    text = isolation.ruleset("eth1")
    # Our table replaced whole in one transaction: made (so the delete finds it), deleted.
    assert text.splitlines()[:2] == [
        "table inet kafkalab_fault",
        "delete table inet kafkalab_fault",
    ]
    nd = "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept"
    assert rules(text, "input") == [
        "type filter hook input priority filter; policy accept;",
        'iifname "eth1" tcp dport 22 accept',
        f'iifname "eth1" {nd}',
        'iifname "eth1" drop',
    ]
    assert rules(text, "output") == [
        "type filter hook output priority filter; policy accept;",
        'oifname "eth1" tcp sport 22 accept',
        f'oifname "eth1" {nd}',
        'oifname "eth1" drop',
    ]
    assert "lo" not in text.split()  # loopback is never matched


@pytest.mark.parametrize("name", ['eth1" accept', "eth 1", "", "x" * 16, "eth1\n"])
def test_an_interface_name_that_would_break_the_rules_is_refused(name):
    with pytest.raises(KafkalabError, match="isolate handles"):
        isolation.ruleset(name)


# -- the scripts, run by bash on a stand-in machine ----------------------------------------

FAKE_NFT = """#!/bin/bash
# A stand-in for nft: one table kept as a file, what `nft -f -` was given kept whole.
state=$FAKE/nft-table
case "$*" in
  --version) echo "nftables v1.0.6" ;;
  "-f -") cat > "$FAKE/nft-loaded"; cp "$FAKE/nft-loaded" "$state" ;;
  "list table inet kafkalab_fault") [ -e "$state" ] && cat "$state" ;;
  "delete table inet kafkalab_fault") rm "$state" ;;
  *) echo "nft: unexpected $*" >&2; exit 1 ;;
esac
"""
FAKE_SYSTEMCTL = """#!/bin/bash
echo "systemctl $*" >> "$FAKE/systemctl.log"
case "$1" in
  is-active) exit 0 ;;
  show) echo 0 ;;
esac
"""


class Machine:
    def __init__(self, name: str, runs: bool) -> None:
        self.name, self.runs = name, runs

    def running(self) -> bool:
        return self.runs


class FakeCluster:
    """A cluster whose `sh` runs the script with bash here, as if it were on the machine:
    `ip -o addr` answers what the machine has; sudo runs its command."""

    def __init__(self, tmp_path: Path, shown: str = EMBEDDED, nft: bool = True) -> None:
        topo = Topology(extra_hosts=["spark"])
        self.inventory_path = inventory.write(
            inventory.build(topo, {}, None), tmp_path / "inventory" / "hosts.yml"
        )
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.scripts: list[str] = []
        self.stopped: set[str] = set()
        self.unreachable = False
        stubs = {
            "sudo": '#!/bin/sh\nexec "$@"\n',
            "ip": f"#!/bin/sh\ncat <<'EOF'\n{shown}EOF\n",
            "systemctl": FAKE_SYSTEMCTL,
        }
        if nft:
            stubs["nft"] = FAKE_NFT
        for name, text in stubs.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "FAKE": str(tmp_path)}
        self.fake = tmp_path

    def hosts(self) -> dict[str, dict[str, Any]]:
        """Its hosts with their merged variables, as an InventoryCluster gives them."""
        return inventory.hosts(inventory.load(self.inventory_path))

    def machines(self) -> list[Machine]:
        return [Machine(n, n not in self.stopped) for n in ("kafka1", "kafka2", "kafka3", "spark1")]

    def machine(self, name: str) -> Machine:
        return next(m for m in self.machines() if m.name == name)

    def sh(self, host: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        self.scripts.append(script)
        if self.unreachable:
            return subprocess.CompletedProcess([], 255, "", "ssh: connect: timed out")
        return subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env},
        )


def test_isolate_loads_the_rules_for_the_interface_and_heal_deletes_them(tmp_path):
    lab = FakeCluster(tmp_path)
    assert not faults.isolated(lab, "kafka1")  # type: ignore[arg-type]
    faults.isolate(lab, "kafka1")  # type: ignore[arg-type]
    assert (tmp_path / "nft-loaded").read_text() == isolation.ruleset("kc-kafka1")
    assert faults.isolated(lab, "kafka1")  # type: ignore[arg-type]
    # ssh stays open: a broker fault on the isolated machine goes through, nothing special
    # (pause: the stand-in systemctl only logs; kill would write its drop-in under /run)
    faults.pause(lab, "kafka1")  # type: ignore[arg-type]
    assert (
        "systemctl kill --kill-whom=main --signal=SIGSTOP kafka"
        in (tmp_path / "systemctl.log").read_text()
    )

    healed = {h.host: h.actions for h in faults.heal(lab)}  # type: ignore[arg-type]
    assert healed["kafka1"][0] == "reconnected"
    assert healed["spark1"] == []  # the heal runs on every machine, a non-broker too
    assert not (tmp_path / "nft-table").exists()
    assert not faults.isolated(lab, "kafka1")  # type: ignore[arg-type]
    healed = {h.host: h.actions for h in faults.heal(lab, ["kafka1"])}  # type: ignore[arg-type]
    assert "reconnected" not in healed["kafka1"]


def test_isolate_any_machine_again_replaces_the_table(tmp_path):
    lab = FakeCluster(tmp_path, shown=VAGRANT.replace("192.168.56.11", "10.77.0.21"))
    faults.isolate(lab, "spark1")  # type: ignore[arg-type]
    faults.isolate(lab, "spark1")  # type: ignore[arg-type]
    assert (tmp_path / "nft-table").read_text() == isolation.ruleset("eth1")


def test_isolate_says_when_no_interface_has_the_address(tmp_path):
    lab = FakeCluster(tmp_path, shown=VAGRANT)
    with pytest.raises(KafkalabError) as err:
        faults.isolate(lab, "kafka2")  # type: ignore[arg-type]
    assert "isolate on kafka2: no interface carries its kafkalab_address 10.77.0.12" in str(
        err.value
    )
    assert not (tmp_path / "nft-loaded").exists()


def test_without_nft_isolate_says_what_installs_it_and_nothing_is_isolated(tmp_path):
    lab = FakeCluster(tmp_path, nft=False)
    with pytest.raises(KafkalabError, match=r"isolate on kafka1: nft is missing .*provisioning"):
        faults.isolate(lab, "kafka1")  # type: ignore[arg-type]
    assert not faults.isolated(lab, "kafka1")  # type: ignore[arg-type]


def test_a_stopped_machine_is_not_isolated_and_not_asked(tmp_path):
    lab = FakeCluster(tmp_path)
    lab.stopped.add("kafka3")
    assert not faults.isolated(lab, "kafka3")  # type: ignore[arg-type]
    assert lab.scripts == []
    with pytest.raises(KafkalabError, match="machine kafka3 is not running"):
        faults.isolate(lab, "kafka3")  # type: ignore[arg-type]


def test_an_unreachable_machine_is_said_so(tmp_path):
    lab = FakeCluster(tmp_path)
    lab.unreachable = True
    with pytest.raises(KafkalabError, match=r"^isolated on kafka1: cannot reach it over ssh$"):
        faults.isolated(lab, "kafka1")  # type: ignore[arg-type]
    with pytest.raises(KafkalabError, match=r"^heal on kafka2: cannot reach it over ssh$"):
        faults.heal(lab, ["kafka2"])  # type: ignore[arg-type]
