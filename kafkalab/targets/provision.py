"""Run ansible/site.yml against an inventory, from inside the lab network."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root
from kafkalab.targets import netns

RECAP = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)"
)
TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(?P<name>.*)\]")


@dataclass
class Recap:
    hosts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(h["changed"] for h in self.hosts.values())

    @property
    def failed(self) -> int:
        return sum(h["failed"] + h["unreachable"] for h in self.hosts.values())


def parse_recap(lines: list[str]) -> Recap:
    recap = Recap()
    for line in lines:
        if m := RECAP.match(line.strip()):
            recap.hosts[m["host"]] = {
                k: int(m[k]) for k in ("ok", "changed", "unreachable", "failed")
            }
    return recap


def failure_detail(lines: list[str], keep: int = 12) -> str:
    """The failed tasks with their result lines (the yaml callback indents them)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith(("fatal:", "failed:", "ERROR!")):
            task = next((ln for ln in reversed(lines[:i]) if TASK.match(ln)), "")
            out.append(task.rstrip("* "))
            out.append(line)
            out.extend(ln for ln in lines[i + 1 : i + 1 + keep] if ln.startswith(" "))
    return "\n".join(out[-40:])


def mitogen_strategy_dir() -> Path | None:
    """Where the installed Mitogen keeps its strategy plugins (None: not installed)."""
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "plugins" / "strategy"


# kafkalab's own strategy: Mitogen's linear one without its CPU pinning (the plugin says why).
STRATEGY_DIR = repo_root() / "ansible" / "plugins" / "strategy"
STRATEGY = "kafkalab_linear"


def strategy_env(environ: dict[str, str]) -> dict[str, str]:
    """Mitogen's linear strategy (unpinned), unless KAFKALAB_MITOGEN=0 or Mitogen is missing.

    A module task costs ~0.17 s of CPU a host with the stock strategy, whatever it does:
    python3 on the machine compiles ansible's module_utils from the AnsiballZ zip every
    time (zipimport keeps no bytecode). Mitogen keeps one interpreter a host with its
    imports, so a changed=0 run takes about half the time (bench/ansible_speed.py
    prints both). Playbook runs only: an unreachable host's reason from Mitogen reads
    "Task failed: EOF on stream; last 100 lines received: ...", so the ad-hoc ping of
    kafkalab.targets.hosts keeps Ansible's own strategy and its one-line ssh reason.
    """
    if environ.get("KAFKALAB_MITOGEN", "1") == "0" or mitogen_strategy_dir() is None:
        return {}
    return {"ANSIBLE_STRATEGY_PLUGINS": str(STRATEGY_DIR), "ANSIBLE_STRATEGY": STRATEGY}


def ansible_env() -> dict[str, str]:
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(repo_root() / "ansible" / "ansible.cfg")
    env.setdefault("ANSIBLE_FORCE_COLOR", "0")
    # The venv's own ansible, whatever PATH says.
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def run_playbook(
    inventory: Path,
    log: Path,
    ns: str | None,
    playbook: str = "site.yml",
    extra: list[str] | None = None,
    on_task: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> Recap:
    """Run a playbook, writing its whole output to `log`; report each task by name. `env`
    adds to Ansible's environment (ansible_env, strategy_env)."""
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "-i",
        str(inventory),
        str(repo_root() / "ansible" / playbook),
        *(extra or []),
    ]
    if ns:
        cmd = netns.wrap(ns, cmd)
    lines: list[str] = []
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**ansible_env(), **strategy_env(dict(os.environ)), **(env or {})},
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            lines.append(line.rstrip("\n"))
            if on_task and (m := TASK.match(line)):
                on_task(m["name"])
        code = proc.wait()
    recap = parse_recap(lines)
    if code != 0 or recap.failed:
        detail = failure_detail(lines) or "\n".join(lines[-10:])
        raise KafkalabError(f"provisioning failed (full log: {log}):\n{detail}")
    return recap
