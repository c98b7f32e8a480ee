"""The embedded target: a cluster of nspawn machines in kafkalab's own network namespace.

It is an inventory cluster (kafkalab.targets.cluster: its generated inventory, reached in
its namespace) plus machine control. What boots a machine is kafkalab.targets.machines
(and .boot, .rootfs), the network .netns, the state dir .statedir, the host ports .forward;
this module puts them together for `up`, `down`, `start_machines` and whoever needs a machine.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from kafkalab import inventory
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.errors import KafkalabError, validation_line
from kafkalab.paths import state_dir
from kafkalab.targets import (
    boot,
    class_archive,
    forward,
    image,
    netns,
    provision,
    share,
    ssh,
    statedir,
)
from kafkalab.targets.cluster import InventoryCluster
from kafkalab.targets.machines import EmbeddedMachine, stop_all
from kafkalab.topology import Topology, downgrade_refusal

# Settings that cannot change under an existing cluster without losing its data.
FIXED = ("mode", "network", "controllers")


@dataclass
class UpResult:
    changed: int
    seconds: float
    recap: provision.Recap


class EmbeddedCluster(InventoryCluster):
    """One cluster: its state dir, namespace, machines and generated inventory."""

    kind = "embedded"
    ns: str

    def __init__(self, state: Path | None = None) -> None:
        self.state = state or state_dir()
        try:
            saved = self._saved()
        except statedir.StateDamaged:
            saved = {}  # said by every use of the cluster but `down --purge`, the way out
        env = os.environ.get("KAFKALAB_NETNS")
        ns: str = netns.check_name(env) if env else saved.get("netns") or "kafkalab"
        super().__init__(self.state / "inventory" / "hosts.yml", ns, self.state)
        # `up` decides (it made the namespace, or the saved cluster says it did); `_save`
        # records the claim in the namespace's own marker, which is what `down` trusts.
        self._owns_ns: bool = saved.get("owns_netns", False)

    # -- state --------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return self.ns

    @property
    def name(self) -> str:
        return self.ns

    def env(self) -> dict[str, str]:
        return {"KAFKALAB_STATE": str(self.state), "KAFKALAB_NETNS": self.ns}

    @property
    def key(self) -> Path:
        return self.state / "ssh" / "id_ed25519"

    @property
    def control_dir(self) -> Path:
        """This cluster's ssh connection-sharing sockets (kafkalab.targets.ssh)."""
        return ssh.control_dir(self.state)

    def _saved(self) -> dict[str, Any]:
        """lab.json ({} before the first `up`); a damaged one raises, with the way out."""
        return statedir.read_saved(self.state / "lab.json")

    def topology(self) -> Topology | None:
        saved = self._saved().get("topology")
        if not saved:
            return None
        try:
            return Topology(**saved)
        except ValidationError as exc:
            why = validation_line(exc, whole="topology")
            raise statedir.damaged(self.state / "lab.json", why) from None

    def layout(self) -> inventory.Layout | None:
        self._saved()  # a damaged lab.json is said first, with the way out
        return super().layout()

    def machines(self, topo: Topology | None = None) -> list[EmbeddedMachine]:
        topo = topo or self.topology()
        if topo is None:
            return []
        return [
            EmbeddedMachine(m.name, m.address, self.state / "machines" / m.name)
            for m in topo.machines()
        ]

    def machine(self, name: str) -> EmbeddedMachine:
        return cast(EmbeddedMachine, super().machine(name))  # one of machines()

    def controller_address(self, toward: str) -> str:
        """The controller side's address on the cluster's bridge."""
        topo = self.topology()
        if topo is None:
            raise KafkalabError("no lab here yet: run `kafkalab up`")
        return topo.gateway().split("/")[0]

    def boot_state(self, name: str) -> boot.BootState:
        machine = self.machine(name)
        return boot.state(machine, timeout=10) if machine.running() else boot.BootState("stopped")

    def check_compatible(self, topo: Topology) -> None:
        """Refuse, before anything is touched, a change that would need new storage, change
        a running ZooKeeper ensemble or KRaft voter set, or leave a machine running outside
        the cluster: that is `down --purge` first. (A newer Kafka release is fine: the role
        switches releases with a rolling restart; 4.x back to 3.x is not.)"""
        old = self.topology()
        if old is None:
            return
        if refusal := downgrade_refusal(old.kafka_version, topo.kafka_version):
            raise KafkalabError(refusal)
        purge = "run `kafkalab down --purge` first (it deletes the lab's data)"
        for key in FIXED:
            if getattr(old, key) != getattr(topo, key):
                raise KafkalabError(
                    f"this lab was built with {key}={getattr(old, key)}, you asked for "
                    f"{key}={getattr(topo, key)}; {purge} or keep the setting"
                )
        if topo.brokers < old.brokers:
            raise KafkalabError(
                f"this lab has {old.brokers} brokers; removing brokers would lose replicas. "
                "Run `kafkalab down --purge` first to start smaller."
            )
        if old.mode == "zookeeper" and min(old.brokers, 3) != min(topo.brokers, 3):
            raise KafkalabError(
                f"this lab's ZooKeeper ensemble is its first {min(old.brokers, 3)} broker(s); "
                f"{topo.brokers} brokers would change the ensemble under a running ZooKeeper; "
                f"{purge}, or keep brokers: {old.brokers}"
            )
        if old.mode == "kraft" and old.controllers == 0 and topo.brokers != old.brokers:
            raise KafkalabError(
                f"this lab's {old.brokers} brokers are its KRaft controllers too (controllers: "
                f"0), so {topo.brokers} brokers would change the static voter set; {purge} "
                f"(with controllers: 1 or more, brokers can be added later), or keep brokers: "
                f"{old.brokers}"
            )
        kept = {m.name for m in topo.machines()}
        dropped = [m.name for m in old.machines() if m.name not in kept]
        if dropped:
            raise KafkalabError(
                f"this lab has {', '.join(dropped)} and `up` never removes a machine; {purge} "
                "to build the lab without it"
            )

    # -- up / down ----------------------------------------------------------------------

    def up(
        self, topo: Topology, progress: Callable[[str], None], provision_hosts: bool = True
    ) -> UpResult:
        start, since = time.monotonic(), time.time()
        self.check_compatible(topo)
        netns.check_ours(self.ns, self._saved().get("netns"), self.state)
        if provision_hosts:  # a taken host port: one line, nothing touched
            forward.check_ports(self.state, topo)
        archive = kafka_artifact.resolve_kafka(topo.kafka_version, progress=progress)
        extra_archives = share.extra_archives(topo.extra_hosts, progress)
        base = image.ensure_image(progress)
        self._ensure_key()
        machines = self.machines(topo)
        # A namespace someone else made (a test harness running inside it) outlives the cluster.
        self._owns_ns = self._saved().get("owns_netns", not netns.exists(self.ns))
        netns.ensure(self.ns, topo.gateway(), {m.name: m.address for m in machines})
        progress(f"booting {len(machines)} machines in network namespace {self.ns}")
        # Saved first: if a boot fails, `kafkalab down` still knows the machines to stop.
        self._save(topo)
        tools_cds = class_archive.cached(base.parent, archive)  # an earlier lab's (image dir)
        offered = {"kafka_archive": archive, **extra_archives, **class_archive.offer(tools_cds)}
        shared = share.fill(self.state / "share", offered)

        def write_inventory() -> None:  # once the machines run: which ones see the share
            archives = {**extra_archives, **share.on_host(shared, self.state / "share", machines)}
            login = ssh.ansible_vars(self.key, self.control_dir)
            inventory.write(
                inventory.build(topo, login, archive, archives=archives, host_listener=True),
                self.inventory_path,
            )
            self._hosts = None  # read again: the inventory may have changed

        boot = lambda started: self._boot(machines, base, topo, progress, started)  # noqa: E731
        if not provision_hosts:
            boot(write_inventory)
            return UpResult(0, time.monotonic() - start, provision.Recap())
        log, gate = self.state / "logs" / "provision.log", self.state / "boot-gate"
        recap = provision.run_while_booting(
            boot, write_inventory, self.inventory_path, log, self.ns, gate, progress
        )
        forward.start(self.state, self.ns, forward.plan(topo))  # or keeps the one running
        class_archive.keep(tools_cds, [m.root for m in machines], topo.kafka_version, since)
        return UpResult(recap.changed, time.monotonic() - start, recap)

    def start_machines(self, names: list[str] | None = None) -> None:
        """Boot stopped machines again without provisioning (fault heal, a lab's reset)."""
        topo = self.topology()
        if topo is None:
            raise KafkalabError("no lab here yet: run `kafkalab up`")
        chosen = [m for m in self.machines() if names is None or m.name in names]
        self._boot(chosen, image.rootfs(), topo)

    def _boot(
        self,
        machines: list[EmbeddedMachine],
        base: Path,
        topo: Topology,
        progress: Callable[[str], None] = lambda _msg: None,
        started: Callable[[], None] = lambda: None,
    ) -> None:
        """Mount, personalise and start machines (then `started()`), wait until each one's
        boot is over and clean (a bad one is reported and rebooted once), then for its sshd.
        Machines already running are checked too: a second `up` repairs a stuck cluster."""
        prefix = ipaddress.ip_network(topo.network).prefixlen
        pubkey = self.key.with_suffix(".pub").read_text()

        def start(chosen: list[EmbeddedMachine]) -> None:
            if any(not m.running() for m in chosen):
                self._forget_ssh_connections()
            for m in chosen:
                m.prepare(base, prefix, pubkey)
                m.start(self.ns, artifacts=self.state / "share")

        was_running = {m.name for m in machines if m.running()}
        start(machines)
        started()

        def leave(m: EmbeddedMachine, state: boot.BootState) -> bool:
            return m.name in was_running and self._serves(m, state, progress)

        def reboot(chosen: list[EmbeddedMachine]) -> None:
            stop_all(chosen)
            start(chosen)

        boot.ensure_clean(machines, reboot, leave, progress)
        ssh.wait_ssh(self.ns, machines, login=self._login_probe)

    def _serves(
        self, m: EmbeddedMachine, state: boot.BootState, progress: Callable[[str], None]
    ) -> bool:
        """A running machine `degraded` by some unit but letting its user log in serves its
        cluster: it is reported, not rebooted under its broker."""
        if state.state != "degraded":
            return False
        try:
            login = subprocess.run(self._login_probe(m), capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            return False  # no answer: as stuck as a refusal
        if login.returncode:
            return False  # a stuck machine (logins refused): rebooted
        progress(f"{m.name} runs degraded, left running: {state.describe()}")
        return True

    def _login_probe(self, m: EmbeddedMachine) -> list[str]:
        return ssh.login_probe(self.ns, self.key, m.address)

    def _forget_ssh_connections(self) -> None:
        ssh.forget_connections(self.control_dir)

    def down(self, purge: bool, progress: Callable[[str], None]) -> None:
        """Stop the machines; with `purge`, remove what the cluster made and nothing else: its
        machines, its namespace if it made it, its state dir if kafkalab made that. A
        damaged lab.json does not stop a purge (the machines are the dirs under machines/)."""
        if purge:
            statedir.check_ours(self.state)
        forward.stop(self.state)
        try:
            saved = self._saved()
            machines = self.machines()
        except statedir.StateDamaged:
            if not purge:
                raise
            saved, machines = {}, []
        machines += self._machines_on_disk(known={m.name for m in machines})
        running = [m for m in machines if m.running()]
        if running:
            if saved:
                self._stop_zookeeper_mode_brokers(running, progress)
            progress(f"stopping {', '.join(m.name for m in running)}")
            stop_all(running)
            self._forget_ssh_connections()
        for m in (m for m in machines if m not in running):  # stopped by itself: cgroups left
            m.remove_cgroups()
        if not purge:
            return
        for m in machines:
            m.unmount()
        mounted = statedir.mounts_under(self.state)
        if mounted:
            raise KafkalabError(
                f"{mounted[0]} is still mounted, so {self.state} is not removed: "
                f"`umount {mounted[0]}`, then run `kafkalab down --purge` again"
            )
        self._delete_netns(saved, progress)
        shutil.rmtree(self.control_dir, ignore_errors=True)
        if self.state.exists():
            progress(f"removing {self.state}")
            shutil.rmtree(self.state)

    def _machines_on_disk(self, known: set[str]) -> list[EmbeddedMachine]:
        """Machine dirs lab.json does not name (it is damaged, or lost one): still ours."""
        root = self.state / "machines"
        homes = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        return [EmbeddedMachine(p.name, "", p) for p in homes if p.name not in known]

    def _delete_netns(self, saved: dict[str, Any], progress: Callable[[str], None]) -> None:
        """Delete the namespaces this cluster made: the claim under /etc/netns names it.
        A cluster saved before claims existed (its lab.json says it made its namespace, and
        the namespace has no claim of anyone's) deletes the namespace it saved, as before."""
        for ns in dict.fromkeys(n for n in (self.ns, saved.get("netns")) if n):
            legacy = ns == saved.get("netns") and saved.get("owns_netns") and not netns.claimed(ns)
            existed = netns.exists(ns)
            if netns.delete(ns, None if legacy else self.state):
                if existed:
                    progress(f"deleted network namespace {ns}")
            elif existed:
                progress(f"left network namespace {ns} alone: this lab did not make it")

    def _stop_zookeeper_mode_brokers(
        self, running: list[EmbeddedMachine], progress: Callable[[str], None]
    ) -> None:
        """A ZooKeeper-mode broker shuts down cleanly only while its ensemble is there:
        stopped together with the ZooKeeper machines it waits out its whole stop timeout.
        So its brokers stop first (in parallel), then every machine."""
        topo = self.topology()
        if topo is None or topo.mode != "zookeeper":
            return
        broker_names = {m.name for m in topo.machines() if "kafka_broker" in m.groups}
        brokers = [m.name for m in running if m.name in broker_names]
        if not brokers:
            return
        progress(f"stopping the brokers first ({', '.join(brokers)}): ZooKeeper stays up for them")
        procs = [
            subprocess.Popen(
                self.ssh_command(name, ["sudo", "systemctl", "stop", "kafka"]),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for name in brokers
        ]
        for proc in procs:
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()

    def _ensure_key(self) -> None:
        if self.key.exists():
            return
        self.key.parent.mkdir(parents=True, exist_ok=True)
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kafkalab", "-f"]
        subprocess.run([*keygen, str(self.key)], check=True)

    def _save(self, topo: Topology) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        statedir.mark(self.state)
        if self._owns_ns:
            self._owns_ns = self._claim_netns()
        data = {"netns": self.ns, "owns_netns": self._owns_ns, "topology": topo.model_dump()}
        statedir.write_json(self.state / "lab.json", data)

    def _claim_netns(self) -> bool:
        """Record under /etc/netns that this cluster owns its namespace (it made it); False
        when another cluster's claim on the very same namespace stands."""
        if not netns.exists(self.ns):
            return True  # nothing to claim: `up` saves after it made the namespace
        claimed = netns.owner(self.ns)
        if claimed is not None and claimed != self.state.resolve():
            return False
        netns.claim(self.ns, self.state)
        return True
