"""Print figures for the full VM cluster: `vagrant up` of cluster.yml's 3 brokers (KRaft by
default) from the kafkalab box, Ansible provisioning, a produce/consume check over the
private network, `vagrant destroy`.

    sudo .venv/bin/python -m bench.vm_cluster [--mode kraft|zookeeper] [--driver qemu|kvm]
                                              [--brokers 3] [--memory-mb 1536] [--keep]

Not part of `make test`: under software emulation (qemu/TCG, no usable KVM) three VMs
take far longer than the test budget. Runs libvirtd/virtlogd inside network namespace
`klvm` (kafkalab/vagrant.py: no uplink, no NAT, no default route), its own Vagrant state
(.kafkalab-bench/vm) and domain prefix (klbench-vm_); stops what it started, by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml

from kafkalab.paths import repo_root
from kafkalab.targets import box, vagrant

STATE = repo_root() / ".kafkalab-bench" / "vm"
BOX_NAME = "kafkalab/debian12"


def phase(figures: dict[str, float], name: str, cmd: list[str], env: dict[str, str]) -> None:
    start = time.monotonic()
    with (STATE / "vagrant.log").open("a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    figures[name] = round(time.monotonic() - start, 1)
    print(f"{figures[name]:8.1f} s  {name}", file=sys.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed: see {STATE / 'vagrant.log'}")


def check(env: dict[str, str], brokers: int) -> str:
    """Create a topic with replication factor min(3, brokers), produce and consume 3 records
    with the console tools on kafka1 (over the private network to every broker)."""
    rf = min(3, brokers)
    bootstrap = ",".join(f"kafka{i}:9092" for i in range(1, brokers + 1))
    script = (
        "export LOG_DIR=/tmp/kafkalab-tools; set -e; "
        f"kafka-topics.sh --bootstrap-server {bootstrap} --create --topic bench "
        f"--partitions 3 --replication-factor {rf}; "
        f"printf 'a\\nb\\nc\\n' | kafka-console-producer.sh --bootstrap-server {bootstrap} "
        "--topic bench --producer-property acks=all; "
        f"kafka-console-consumer.sh --bootstrap-server {bootstrap} --topic bench "
        "--from-beginning --max-messages 3 --timeout-ms 300000"
    )
    proc = subprocess.run(
        ["vagrant", "ssh", "kafka1", "-c", f"sudo bash -lc {shlex.quote(script)}"],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip()[-500:]}"
    return " ".join(sorted(v for v in proc.stdout.split() if v in ("a", "b", "c")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="kraft", choices=["kraft", "zookeeper"])
    parser.add_argument("--driver", default=os.environ.get("KAFKALAB_VM_DRIVER", "qemu"))
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--memory-mb", type=int, default=1536)
    parser.add_argument("--keep", action="store_true", help="leave the VMs and daemons up")
    args = parser.parse_args()

    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / "vagrant.log").write_text("")
    topology_file = STATE / "cluster.yml"
    topology_file.write_text(
        yaml.safe_dump({"mode": args.mode, "brokers": args.brokers, "memory_mb": args.memory_mb})
    )
    figures: dict[str, float] = {}
    created = vagrant.ensure_netns()
    env = vagrant.env(topology_file, STATE / ".vagrant", BOX_NAME, args.driver, "klbench-vm_")
    result = ""
    try:
        vagrant.start_libvirt(STATE)
        start = time.monotonic()
        built = box.build(progress=lambda m: print(m, file=sys.stderr))
        figures["box build (0 when cached)"] = round(time.monotonic() - start, 1)
        start = time.monotonic()
        box.add_once(built, BOX_NAME, env, STATE / "vagrant.log")
        figures["box add (once per built box)"] = round(time.monotonic() - start, 1)
        with vagrant.inside():
            phase(figures, "vagrant up --no-provision", ["vagrant", "up", "--no-provision"], env)
            phase(figures, "vagrant provision", ["vagrant", "provision"], env)
            start = time.monotonic()
            result = check(env, args.brokers)
            figures["produce/consume check"] = round(time.monotonic() - start, 1)
            if not args.keep:
                phase(figures, "vagrant destroy", ["vagrant", "destroy", "-f"], env)
    finally:
        if not args.keep:
            with vagrant.inside():
                subprocess.run(["vagrant", "destroy", "-f"], env=env, capture_output=True)
            vagrant.stop_libvirt(STATE)
            if created:
                vagrant.delete_netns()
    out = {
        "mode": args.mode,
        "brokers": args.brokers,
        "driver": args.driver,
        "memory_mb": args.memory_mb,
        "seconds": figures,
        "total_seconds": round(sum(figures.values()), 1),
        "consumed": result,
    }
    print(json.dumps(out, indent=2))
    Path(STATE / "figures.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
