"""Run ansible/site.yml against an inventory, from inside the lab network."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root, repo_root
from kafkalab.targets import netns

RECAP = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)"
)
TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(?P<name>.*)\]")
# The file site.yml's boot gate waits for (BootGate); unset, it does not wait.
GATE_ENV = "KAFKALAB_BOOT_GATE"


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
    # What kafkalab_linear compiles and minifies, for the next run (the plugin says why).
    env.setdefault("KAFKALAB_CONTROLLER_CACHE", str(cache_root() / "controller"))
    # The venv's own ansible, whatever PATH says.
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def ansible_playbook(args: list[str]) -> list[str]:
    """The command that runs ansible-playbook with `args`, the venv's, without the
    interpreter's teardown at its end (ansible_playbook.py says why)."""
    # -P: the script's directory (kafkalab/targets) is not put first on sys.path, where its
    # modules would shadow others of the same name (vagrant.py) in Ansible's process.
    return [sys.executable, "-P", str(Path(__file__).with_name("ansible_playbook.py")), *args]


class Playbook:
    """ansible-playbook running in the background: a thread writes its whole output to the
    log and reports each task by name; wait() gives its recap. The thread drains the pipe
    whatever happens (a report that fails is kept, and raised by wait()), so Ansible never
    blocks on a full pipe."""

    def __init__(
        self, cmd: list[str], env: dict[str, str], log: Path, on_task: Callable[[str], None] | None
    ) -> None:
        self.log, self.lines = log, list[str]()
        self.error: BaseException | None = None
        log.parent.mkdir(parents=True, exist_ok=True)
        self._out = log.open("w", buffering=1)  # line by line: it can be followed
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        self.reader = threading.Thread(target=self._read, args=(on_task,), daemon=True)
        self.reader.start()

    def _read(self, on_task: Callable[[str], None] | None) -> None:
        assert self.proc.stdout is not None
        with self._out as out:
            for line in self.proc.stdout:
                out.write(line)
                self.lines.append(line.rstrip("\n"))
                if on_task and self.error is None and (m := TASK.match(line)):
                    try:
                        on_task(m["name"])
                    except Exception as exc:  # raised by wait(), once Ansible is done
                        self.error = exc

    def wait(self) -> Recap:
        code = self.proc.wait()
        self.reader.join()
        if self.error is not None:
            raise self.error
        recap = parse_recap(self.lines)
        if code != 0 or recap.failed:
            detail = failure_detail(self.lines) or "\n".join(self.lines[-10:])
            raise KafkalabError(f"provisioning failed (full log: {self.log}):\n{detail}")
        return recap

    def stop(self) -> None:
        """End it without a verdict (its hosts did not come up)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        # a worker it left may still hold the pipe: the reader is not waited for long
        self.reader.join(timeout=5)


def start_playbook(
    inventory: Path,
    log: Path,
    ns: str | None,
    playbook: str = "site.yml",
    extra: list[str] | None = None,
    on_task: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> Playbook:
    """Start a playbook in the background (Playbook). `env` adds to Ansible's environment
    (ansible_env, strategy_env)."""
    cmd = ansible_playbook(
        ["-i", str(inventory), str(repo_root() / "ansible" / playbook), *(extra or [])]
    )
    if ns:
        cmd = netns.wrap(ns, cmd)
    full_env = {**ansible_env(), **strategy_env(dict(os.environ)), **(env or {})}
    return Playbook(cmd, full_env, log, on_task)


def run_playbook(inventory: Path, log: Path, ns: str | None, **options: Any) -> Recap:
    """Run a playbook (start_playbook's options: playbook, extra, on_task, env), writing its
    whole output to `log`; report each task by name."""
    return start_playbook(inventory, log, ns, **options).wait()


class BootGate:
    """Lets ansible-playbook start while the machines boot. site.yml's inventory checks need
    no host; its first play that reaches one waits until this file (GATE_ENV) says `booted`
    (or why not). Task names reported meanwhile are held back and shown once it opens.
    Ansible's start and those checks took ~2 s that a new lab's boot (~1.5 s) now covers."""

    def __init__(self, path: Path, on_task: Callable[[str], None]) -> None:
        self.path, self._on_task = path, on_task
        self._held: list[str] | None = []
        self._lock = threading.Lock()
        path.unlink(missing_ok=True)

    def env(self) -> dict[str, str]:
        return {GATE_ENV: str(self.path), "KAFKALAB_PID": str(os.getpid())}

    def on_task(self, name: str) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(name)
                return
        self._on_task(name)

    def _write(self, verdict: str) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(verdict + "\n")
        tmp.replace(self.path)

    def open(self) -> None:
        self._write("booted")
        with self._lock:
            for name in self._held or []:
                self._on_task(name)
            self._held = None

    def fail(self, why: str) -> None:
        self._write(f"not booted: {why}")


def run_while_booting(
    boot: Callable[[Callable[[], None]], None],
    write_inventory: Callable[[], None],
    inventory: Path,
    log: Path,
    ns: str | None,
    gate_file: Path,
    progress: Callable[[str], None],
    playbook: str = "site.yml",
) -> Recap:
    """site.yml on machines that `boot` brings up meanwhile: once boot has started them (it
    calls the callable it is given), the inventory is written and Ansible starts, to wait at
    the gate until the boot is over. A boot that fails (or Ctrl-C) closes the gate and stops
    Ansible."""
    gate = BootGate(gate_file, lambda name: progress(f"  {name}"))
    runs: list[Playbook] = []

    def started() -> None:
        write_inventory()
        runs.append(
            start_playbook(inventory, log, ns, playbook, on_task=gate.on_task, env=gate.env())
        )

    try:
        boot(started)
        if not runs:
            raise KafkalabError("internal: the boot never said its machines started")
    except BaseException as exc:
        gate.fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        for run in runs:
            run.stop()
        raise
    progress("provisioning with ansible/site.yml (first run: a few minutes)")
    gate.open()
    return runs[0].wait()
