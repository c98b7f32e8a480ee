"""Cutting a machine off the lab network with firewall rules on the machine itself.

`fault isolate` works the same way on an embedded machine, a Vagrant VM or one of your
own hosts: kafkalab logs in (ssh, sudo) and loads one nftables table of its own,
`inet kafkalab_fault`, that drops every packet in and out of the interface carrying the
host's `kafkalab_address` (found with `ip -o addr` on the machine, whatever its name),
both directions: brokers, controllers, ZooKeeper and clients alike. Two kinds of packet
pass: ssh to the machine (tcp port 22, the connection's packets both ways), so kafkalab
still reaches it to heal it or run a fault, and IPv6 neighbour discovery, which ssh to
an IPv6 lab address needs (IPv4's ARP is not in the `inet` family: untouched). Loopback
is another interface and never matched. `heal` deletes the table. The rules live in the
kernel only, nothing is saved: a reboot of the machine heals it as well.

Why nftables and not iptables: nf_tables is in every kernel we run (built into the
controller's 6.18 kernel, a module Debian's loads on demand), and an nspawn machine has
its own network namespace with CAP_NET_ADMIN in it (it gets its link with
`--network-interface`), so `nft` works inside it exactly as on a VM; checked on the
embedded lab (tests/failover/test_faults.py). A table of our own is created and
deleted whole in one transaction (`nft -f`), and leaves the host's other rules alone;
a drop in any table is final, so a host firewall's accept cannot let lab traffic past
ours. iptables rules would go into the shared INPUT/OUTPUT chains, to be found again
by their text for removal. Debian 12 and Ubuntu ship `nftables` (`nft`); the base image
and the Vagrant box install it (images/debian-base.yml, the machines are offline), the
`common` role on your own hosts when it is missing.
"""

from __future__ import annotations

import ipaddress
import re

from kafkalab.errors import KafkalabError

TABLE = "inet kafkalab_fault"
SSH_PORT = 22
# `ip` and `nft` are in /usr/sbin or /sbin on some systems, not on a user's PATH.
_PATH = "PATH=$PATH:/usr/sbin:/sbin"
# Interface names we put between quotes in the ruleset (Linux allows more; none of ours).
_IFNAME = re.compile(r"[A-Za-z0-9_.@-]{1,15}")
_HEREDOC = "KAFKALAB_NFT"

ADDRESSES = f"{_PATH} ip -o addr show"
_EXISTS = f"sudo nft list table {TABLE} >/dev/null 2>&1"
IS_ISOLATED = f"if {_EXISTS}; then echo isolated; else echo connected; fi"
# Part of `heal` on every machine: prints `reconnected` when it deleted the table.
RECONNECT = f"if {_EXISTS}; then sudo nft delete table {TABLE} || exit 3; echo reconnected; fi"
_NEEDS_NFT = (
    "sudo sh -c 'command -v nft' >/dev/null || { echo 'nft is missing (Debian package "
    "nftables): provisioning installs it (`kafkalab up`, or ansible/site.yml)' >&2; exit 3; }"
)


def lab_address(address: object, host: str) -> str:
    """The host's `kafkalab_address` as an IP address in its canonical form."""
    if address is None:
        raise KafkalabError(f"{host} has no kafkalab_address in the inventory")
    try:
        return str(ipaddress.ip_address(str(address)))
    except ValueError:
        raise KafkalabError(
            f"{host}: kafkalab_address {address!r} is not an IP address; isolate finds the "
            "lab interface by its address: put the address in the inventory"
        ) from None


def interface_of(ip_addr: str, address: str) -> str | None:
    """The interface that carries `address`, from the lines of `ip -o addr show`
    (`2: eth1    inet 10.77.0.11/24 brd ... scope global eth1\\ ...`); loopback never."""
    wanted = ipaddress.ip_address(address)
    for line in ip_addr.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
            continue
        try:
            found = ipaddress.ip_address(fields[3].split("/", 1)[0])
        except ValueError:
            continue
        name = fields[1].split("@", 1)[0]
        if found == wanted and name != "lo":
            return name
    return None


def ruleset(interface: str) -> str:
    """The nft script isolate loads: our table replaced whole in one transaction (made
    first so the delete always finds it), a drop of everything on `interface` in both
    directions but ssh to the machine and IPv6 neighbour discovery."""
    if not _IFNAME.fullmatch(interface):
        raise KafkalabError(f"interface name {interface!r}: isolate handles [A-Za-z0-9_.@-] only")
    dev = f'"{interface}"'
    nd = "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept"
    return (
        f"table {TABLE}\n"
        f"delete table {TABLE}\n"
        f"table {TABLE} {{\n"
        "  chain input {\n"
        "    type filter hook input priority filter; policy accept;\n"
        f"    iifname {dev} tcp dport {SSH_PORT} accept\n"
        f"    iifname {dev} {nd}\n"
        f"    iifname {dev} drop\n"
        "  }\n"
        "  chain output {\n"
        "    type filter hook output priority filter; policy accept;\n"
        f"    oifname {dev} tcp sport {SSH_PORT} accept\n"
        f"    oifname {dev} {nd}\n"
        f"    oifname {dev} drop\n"
        "  }\n"
        "}\n"
    )


def isolate_script(interface: str) -> str:
    """The shell script that loads `ruleset(interface)` on the machine."""
    return f"{_NEEDS_NFT}\nsudo nft -f - <<'{_HEREDOC}'\n{ruleset(interface)}{_HEREDOC}\n"
