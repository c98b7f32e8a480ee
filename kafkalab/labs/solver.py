"""A lab's reference solution, run step by step like a learner would type it: each command
printed with where it runs, then its output; background steps, waits, checks polled until
they pass. Runs where the cluster is reached (kafkalab.labs.runner joins it).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO

from kafkalab import render
from kafkalab.errors import KafkalabError
from kafkalab.kafka.tools import JVM_EXPORT
from kafkalab.labs import checks
from kafkalab.labs.checks.base import Remedy
from kafkalab.labs.context import LabContext
from kafkalab.labs.definition import PLACEHOLDER, LabStep
from kafkalab.paths import repo_root
from kafkalab.processes import stop_group
from kafkalab.targets import netns
from kafkalab.targets.statedir import LOCK_HOLDER

UNTIL_TICK = 2.0  # seconds between two looks of an `until` step


@dataclass
class Background:
    proc: subprocess.Popen[bytes]
    out: IO[bytes]
    title: str


class Solver:
    """Runs a lab's steps like a learner would type them, printing each and its output."""

    def __init__(self, ctx: LabContext) -> None:
        self.ctx = ctx
        self.vars: dict[str, str] = {}
        self.background: dict[str, Background] = {}

    def resolve(self, text: str) -> str:
        return PLACEHOLDER.sub(lambda m: self._value(m.group(1), m.group(2).split()), text)

    def _value(self, name: str, args: list[str]) -> str:
        ctx = self.ctx
        if name in self.vars:
            return self.vars[name]
        if name == "live_broker":
            return ctx.tool_host()
        if name in ("quorum_leader", "quorum_follower"):
            now = ctx.metadata_leader(replication=name == "quorum_follower")
            if now.leader is None:
                raise KafkalabError("no metadata leader right now: cannot say who leads")
            if name == "quorum_leader":
                return now.leader
            return next(
                h for h, m in sorted(now.members.items()) if h != now.leader and m != "down"
            )
        if name == "leader":
            topic, part = args[0], int(args[1])
            t = ctx.topic(topic)
            if t is None:
                raise KafkalabError(f"no topic {topic}: cannot say who leads it")
            return ctx.host_of(t.partitions[part].leader)
        raise KafkalabError(f"unknown placeholder {name}")

    def run(self, steps: list[LabStep]) -> None:
        try:
            for n, step in enumerate(steps, start=1):
                render.step(f"step {n}/{len(steps)}: {step.title}")
                self.one(step)
        finally:
            for bg in self.background.values():
                if bg.proc.poll() is None:
                    stop_group(bg.proc, grace=10)
                bg.out.close()

    def one(self, step: LabStep) -> None:
        if step.sleep:
            time.sleep(step.sleep)
            render.detail(f"(waited {step.sleep:g}s)", "dim")
        elif step.wait:
            self._join(step.wait, step)
        elif step.stop:
            running = self.background[step.stop].proc
            if running.poll() is None:
                os.killpg(running.pid, signal.SIGINT)  # Ctrl-C in the learner's terminal 2
                render.detail(f"(Ctrl-C to {step.stop!r})", "dim")
            self._join(step.stop, step)
        elif step.until:
            self._until(step)
        else:
            argv, where, shown, fds = self._command(step)
            render.command(where, shown)
            if step.background:
                out = tempfile.TemporaryFile()  # noqa: SIM115 (run() closes it after the last step)
                bg = subprocess.Popen(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    cwd=repo_root(),
                    env=self._env(step),
                    pass_fds=fds,
                )
                self.background[step.background] = Background(bg, out, shown)
                render.detail(f"(running in the background as {step.background!r})", "dim")
                return
            # A session of its own, stopped whole: a step's script may start children (lab
            # 10's starts a JVM) that would outlive a timeout or a Ctrl-C that ends only it.
            # A kafkalab command shows its own progress as it goes (an `up` takes a minute).
            live = step.kafkalab is not None
            proc = subprocess.Popen(
                argv,
                stdout=None if live else subprocess.PIPE,
                stderr=None if live else subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=repo_root(),
                env=self._env(step),
                pass_fds=fds,
            )
            try:
                stdout, _ = proc.communicate(timeout=step.timeout)
            except subprocess.TimeoutExpired:
                stop_group(proc)
                raise KafkalabError(
                    f"step {step.title!r} did not finish within {step.timeout:.0f}s"
                ) from None
            except BaseException:
                stop_group(proc)
                raise
            if not live:
                render.output(stdout.decode(errors="replace"), step.show)
            self._verdict(step, proc.returncode)

    def _env(self, step: LabStep) -> dict[str, str]:
        if step.kafkalab is not None:
            # The learner's own kafkalab on the host: the cluster this one runs on (its
            # state dir, from the environment), under the lock this command holds.
            return {**os.environ, LOCK_HOLDER: str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        # A lab's scripts take their brokers and work dir from here: on the controller of a
        # cluster without a namespace, kafka1 does not resolve.
        where = {
            "KAFKALAB_BOOTSTRAP": self.ctx.bootstrap,
            "KAFKALAB_LAB_DIR": str(self.ctx.workdir),
        }
        env = {**os.environ, **self.ctx.cluster.env(), **where, **self.ctx.lab.spec.env}
        return {**env, "PYTHONUNBUFFERED": "1"}

    def _command(self, step: LabStep) -> tuple[list[str], str, str, tuple[int, ...]]:
        if step.kafkalab is not None:
            if self.ctx.cluster.kind != "embedded":
                raise KafkalabError(
                    f"step {step.title!r} runs `kafkalab {step.kafkalab}` on the embedded lab;"
                    " on your own hosts or VMs do what the lab's README says for them"
                )
            words = shlex.split(step.kafkalab)
            argv, fds = netns.on_host([sys.executable, "-m", "kafkalab", *words])
            return argv, "(host)", f"kafkalab {shlex.join(words)}", fds
        if step.python:
            text = self.resolve(step.python)
            script, *args = shlex.split(text)
            path = self.ctx.lab.path / script
            shown = f".venv/bin/python {path.relative_to(repo_root())}"
            shown += (" " + shlex.join(args)) if args else ""
            # as from `kafkalab shell`: where the cluster is reached (in an embedded cluster's
            # network, with its /etc/hosts: kafka1 resolves)
            argv = self.ctx.cluster.wrap([sys.executable, str(path), *args])
            return argv, "(kafkalab shell)", shown, ()
        assert step.run is not None
        host = self.resolve(step.machine or self.ctx.lab.spec.host)
        if step.remember:
            self.vars[step.remember] = host
        shown = self.resolve(step.run)
        env = self.ctx.lab.spec.env  # after the quick JVM settings: a lab may set its own
        exports = JVM_EXPORT + "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
        argv = self.ctx.cluster.login_command(host, ["bash", "-c", exports + shown])
        return argv, host, shown, ()

    def _verdict(self, step: LabStep, code: int) -> None:
        if step.expect == "fail" and code == 0:
            raise KafkalabError(f"step {step.title!r} should have failed, but it worked")
        if step.expect == "ok" and code != 0:
            raise KafkalabError(f"step {step.title!r} failed (exit {code}); see its output above")

    def _join(self, name: str, step: LabStep) -> None:
        bg = self.background[name]
        render.detail(f"(waiting for {name!r}: {bg.title})", "dim")
        try:
            code = bg.proc.wait(step.timeout)
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"{name!r} did not finish within {step.timeout:.0f}s") from None
        bg.out.seek(0)
        render.output(bg.out.read().decode(errors="replace"), step.show)
        self._verdict(step, code)

    def _until(self, step: LabStep) -> None:
        assert step.until is not None
        started = time.monotonic()
        applied: set[Remedy] = set()
        while True:
            self.ctx.forget_records()
            title, verdict = checks.run(self.ctx, step.until)
            if verdict.ok:
                render.detail(f"✓ {title} (after {time.monotonic() - started:.0f}s)", "green")
                return
            for remedy in verdict.remedies if step.remedy else []:
                if remedy not in applied:
                    applied.add(remedy)
                    self._apply(remedy)
            if time.monotonic() - started > step.timeout:
                self._show_warnings()
                raise KafkalabError(
                    f"still not true after {step.timeout:.0f}s: {title}: "
                    + "; ".join(verdict.problems)
                )
            time.sleep(UNTIL_TICK)

    def _apply(self, remedy: Remedy) -> None:
        """What a learner types when a wait shows a problem with a known remedy."""
        render.detail(f"(not waiting for it to pass by itself: {remedy.why})", "yellow")
        render.command(remedy.host, remedy.command)
        try:
            done = self.ctx.sh(remedy.host, remedy.command, timeout=180)
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"{remedy.command!r} on {remedy.host} took over 180s") from None
        render.output(done.stdout + done.stderr)
        if done.returncode != 0:
            code = done.returncode
            raise KafkalabError(f"{remedy.command!r} on {remedy.host} failed (exit {code})")

    def _show_warnings(self) -> None:
        """What the brokers logged last (WARN and ERROR): where a wait that timed out
        usually finds its reason."""
        try:
            said = self.ctx.broker_warnings()
        except (KafkalabError, subprocess.SubprocessError, OSError) as exc:
            render.detail(f"(the brokers' logs could not be read: {exc})", "dim")
            return
        for host, lines in said.items():
            render.detail(f"{host}: the last warnings and errors of its Kafka logs", "yellow")
            render.output("\n".join(lines) or "(none)")
