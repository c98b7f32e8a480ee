"""Running labs: bring the cluster to a lab's starting state, check, solve, list.

`kafkalab lab ...` calls one function here each. The process joins the lab network
namespace first (`netns.enter`), so the Python clients, the tools over ssh and the
lab's own scripts all reach the machines; Ctrl-C still stops everything it started.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any

from rich.text import Text

from kafkalab import labs, labs_checks, labs_cluster, labs_quorum, render
from kafkalab.errors import KafkalabError
from kafkalab.labs import Lab, Progress, Step
from kafkalab.labs_cluster import QUICK_JVM, LabContext
from kafkalab.paths import repo_root
from kafkalab.targets import netns
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import Topology

UNTIL_TICK = 2.0  # seconds between two looks of an `until` step


# -- output (through render's console, so it looks like the rest of the CLI) -----------


def _detail(text: str, style: str = "") -> None:
    render.console.print(Text("    " + text, style=style))


def _command(where: str, command: str) -> None:
    render.console.print(Text(f"{where}$ ", style="bold") + Text(command, style="bold"))


def _output(text: str, limit: int | None) -> None:
    """A command's output, indented; with a limit, its first and last lines."""
    lines = text.rstrip("\n").splitlines()
    if limit and len(lines) > limit:
        head, tail = (limit + 1) // 2, limit // 2
        hidden = len(lines) - head - tail
        lines = [*lines[:head], f"… ({hidden} more lines) …", *lines[len(lines) - tail :]]
    for line in lines:
        render.console.print(Text("  " + line, style="dim"))


# -- the cluster a lab runs on -------------------------------------------------------------


def require(topo: Topology | None, lab: Lab) -> Topology:
    """Refuse, before anything runs, a cluster the lab cannot run on."""
    needs = lab.spec.needs
    name = f"lab {lab.id} ({lab.title})"
    if topo is None:
        raise KafkalabError(
            f"no cluster here yet: run `kafkalab up` first ({name} needs "
            f"{' or '.join(needs.modes)}, {needs.brokers} broker(s))"
        )
    if topo.mode not in needs.modes:
        raise KafkalabError(
            f"{name} runs on a {' or '.join(needs.modes)} cluster; this one is {topo.mode}. "
            f"Run `kafkalab down --purge`, then `kafkalab up --mode {needs.modes[0]}`"
        )
    try:
        topo.check_replication_factor(lab.max_replication_factor())
    except KafkalabError as exc:
        raise KafkalabError(f"{name}: {exc}") from None
    missing = [h for h in needs.extra_hosts if h not in topo.extra_hosts]
    if missing:
        raise KafkalabError(
            f"{name} needs the {' and '.join(missing)} host(s) this cluster does "
            f"not have: run `kafkalab up --with {','.join(missing)}`"
        )
    if topo.brokers < needs.brokers:
        raise KafkalabError(
            f"{name} needs {needs.brokers} brokers; this cluster has "
            f"{topo.brokers}: run `kafkalab up --brokers {needs.brokers}`"
            + (
                ""
                if topo.mode == "kraft" and topo.controllers
                else " after `kafkalab down --purge` (its ZooKeeper ensemble or KRaft voters "
                "are fixed once it runs)"
            )
        )
    return topo


def context(lab: Lab, cluster: EmbeddedCluster | None = None) -> LabContext:
    cluster = cluster or EmbeddedCluster()
    topo = require(cluster.topology(), lab)
    if not netns.exists(cluster.ns):
        raise KafkalabError(f"the lab network {cluster.ns} is gone: run `kafkalab up`")
    progress = Progress(cluster.state)
    baseline = progress.get(lab).get("baseline", {})
    ctx = LabContext(cluster, topo, lab, progress.workdir(lab), baseline)
    netns.enter(cluster.ns)
    return ctx


def _checks(ctx: LabContext) -> list[labs.CheckSpec]:
    return [c for c in ctx.lab.spec.checks if c.modes is None or ctx.topo.mode in c.modes]


# -- list, start, reset -------------------------------------------------------------------------


def rows() -> list[tuple[str, str, str, str, str]]:
    """One row per lab: number, title, modes, brokers, the learner's state."""
    progress = Progress()
    out = []
    for lab in labs.discover():
        if isinstance(lab, KafkalabError):
            out.append(("??", "(cannot be loaded)", "", "", str(lab)))
            continue
        needs = lab.spec.needs
        out.append(
            (lab.id, lab.title, " or ".join(needs.modes), str(needs.brokers), progress.state(lab))
        )
    return out


def prepare(ctx: LabContext) -> float:
    """The lab's starting state, without provisioning: machines and services running,
    its topics and groups deleted and made again, its work dir empty, baselines noted."""
    start = time.monotonic()
    lab = ctx.lab
    labs_cluster.ensure_running(ctx, render.step)
    labs_cluster.delete_groups(ctx, lab.spec.owns.groups)
    deleted = labs_cluster.delete_topics(ctx, lab.topics())
    if deleted:
        render.step(f"deleted topic(s) {', '.join(deleted)}")
    labs_cluster.create_topics(ctx, deleted)
    written = labs_cluster.produce_records(ctx)
    made = [t.name for t in lab.spec.setup.topics]
    if made:
        render.step(
            f"created {', '.join(made)}" + (f", wrote {written} records" if written else "")
        )
    shutil.rmtree(ctx.workdir, ignore_errors=True)
    ctx.workdir.mkdir(parents=True)
    baseline: dict[str, Any] = {}
    for c in _checks(ctx):
        kind = labs_checks.KINDS[c.kind]
        if kind.baseline:
            baseline[c.kind] = kind.baseline(ctx, kind.params(**c.params))
    ctx.baseline = baseline
    seconds = time.monotonic() - start
    Progress(ctx.cluster.state).set(
        lab, "in progress", baseline=baseline, mode=ctx.topo.mode, reset_seconds=round(seconds, 1)
    )
    return seconds


def start(ref: str) -> None:
    lab = labs.find(ref)
    ctx = context(lab)
    render.step(f"lab {lab.id}: {lab.title} — preparing the starting state")
    seconds = prepare(ctx)
    render.ok(f"lab {lab.id} is ready ({seconds:.1f}s). Goal: {lab.spec.goal}")
    render.step(f"instructions: {lab.readme}")
    render.step(f"when done: kafkalab lab check {lab.id}  (stuck? kafkalab lab solve {lab.id})")


def reset(ref: str) -> None:
    lab = labs.find(ref)
    ctx = context(lab)
    seconds = prepare(ctx)
    render.ok(f"lab {lab.id} is back at its starting state ({seconds:.1f}s)")


# -- check ---------------------------------------------------------------------------------


def run_check(ctx: LabContext, spec: labs.CheckSpec) -> tuple[str, labs_checks.Verdict]:
    kind = labs_checks.KINDS[spec.kind]
    params = kind.params(**spec.params)
    title = spec.title or kind.title(params, ctx.topo.mode)
    try:
        verdict = kind.run(ctx, params)
    except labs_checks.Unmet as exc:
        verdict = labs_checks.Verdict([str(exc)])
    except Exception as exc:  # a cluster in trouble is a failed check, not a traceback
        verdict = labs_checks.Verdict([f"could not look: {exc}"])
    return title, verdict


def check(ref: str) -> bool:
    lab = labs.find(ref)
    return _check(context(lab))


def _check(ctx: LabContext) -> bool:
    lab = ctx.lab
    progress = Progress(ctx.cluster.state)
    if progress.state(lab) == "not started":
        render.step(
            f"lab {lab.id} was not started here: `kafkalab lab start {lab.id}` sets "
            "up its starting state"
        )
    render.step(f"lab {lab.id}: {lab.title} — checking")
    failed = 0
    for spec in _checks(ctx):
        title, verdict = run_check(ctx, spec)
        (render.ok if verdict.ok else render.fail)(title)
        for fact in verdict.facts:
            _detail(fact, "dim")
        for problem in verdict.problems:
            _detail(problem)
        if not verdict.ok:
            failed += 1
            if spec.hint:
                _detail(f"→ {spec.hint}", "cyan")
    total = len(_checks(ctx))
    if failed:
        render.fail(f"{failed} of {total} checks not passed yet (lab {lab.id})")
        return False
    progress.set(lab, "passed")
    render.ok(f"lab {lab.id} passed")
    return True


# -- solve ---------------------------------------------------------------------------------


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
        return labs.PLACEHOLDER.sub(lambda m: self._value(m.group(1), m.group(2).split()), text)

    def _value(self, name: str, args: list[str]) -> str:
        ctx = self.ctx
        if name in self.vars:
            return self.vars[name]
        if name == "live_broker":
            return ctx.tool_host()
        if name in ("quorum_leader", "quorum_follower"):
            now = labs_quorum.metadata_leader(ctx, replication=name == "quorum_follower")
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

    def run(self, steps: list[Step]) -> None:
        try:
            for n, step in enumerate(steps, start=1):
                render.step(f"step {n}/{len(steps)}: {step.title}")
                self.one(step)
        finally:
            for bg in self.background.values():
                if bg.proc.poll() is None:
                    os.killpg(bg.proc.pid, signal.SIGTERM)
                    bg.proc.wait(10)
                bg.out.close()

    def one(self, step: Step) -> None:
        if step.sleep:
            time.sleep(step.sleep)
            _detail(f"(waited {step.sleep:g}s)", "dim")
        elif step.wait:
            self._join(step.wait, step)
        elif step.until:
            self._until(step)
        else:
            argv, where, shown = self._command(step)
            _command(where, shown)
            if step.background:
                out = tempfile.TemporaryFile()  # noqa: SIM115 (run() closes it after the last step)
                bg = subprocess.Popen(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    cwd=repo_root(),
                    env=self._env(),
                )
                self.background[step.background] = Background(bg, out, shown)
                _detail(f"(running in the background as {step.background!r})", "dim")
                return
            try:
                done = subprocess.run(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    timeout=step.timeout,
                    cwd=repo_root(),
                    env=self._env(),
                )
            except subprocess.TimeoutExpired:
                raise KafkalabError(
                    f"step {step.title!r} did not finish within {step.timeout:.0f}s"
                ) from None
            _output(done.stdout.decode(errors="replace"), step.show)
            self._verdict(step, done.returncode)

    def _env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.ctx.lab.spec.env}

    def _command(self, step: Step) -> tuple[list[str], str, str]:
        if step.python:
            text = self.resolve(step.python)
            script, *args = shlex.split(text)
            path = self.ctx.lab.path / script
            shown = f".venv/bin/python {path.relative_to(repo_root())}"
            shown += (" " + shlex.join(args)) if args else ""
            # as from `kafkalab shell`: in the lab network, with its /etc/hosts (kafka1 resolves)
            argv = netns.wrap(self.ctx.cluster.ns, [sys.executable, str(path), *args])
            return argv, "(kafkalab shell)", shown
        assert step.run is not None
        host = self.resolve(step.machine or self.ctx.lab.spec.host)
        if step.remember:
            self.vars[step.remember] = host
        shown = self.resolve(step.run)
        env = {"KAFKA_JVM_PERFORMANCE_OPTS": QUICK_JVM, **self.ctx.lab.spec.env}
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
        argv = self.ctx.cluster.login_command(host, ["bash", "-c", exports + shown])
        return argv, host, shown

    def _verdict(self, step: Step, code: int) -> None:
        if step.expect == "fail" and code == 0:
            raise KafkalabError(f"step {step.title!r} should have failed, but it worked")
        if step.expect == "ok" and code != 0:
            raise KafkalabError(f"step {step.title!r} failed (exit {code}); see its output above")

    def _join(self, name: str, step: Step) -> None:
        bg = self.background[name]
        _detail(f"(waiting for {name!r}: {bg.title})", "dim")
        try:
            code = bg.proc.wait(step.timeout)
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"{name!r} did not finish within {step.timeout:.0f}s") from None
        bg.out.seek(0)
        _output(bg.out.read().decode(errors="replace"), step.show)
        self._verdict(step, code)

    def _until(self, step: Step) -> None:
        assert step.until is not None
        started = time.monotonic()
        while True:
            self.ctx._records.clear()
            title, verdict = run_check(self.ctx, step.until)
            if verdict.ok:
                _detail(f"✓ {title} (after {time.monotonic() - started:.0f}s)", "green")
                return
            if time.monotonic() - started > step.timeout:
                raise KafkalabError(
                    f"still not true after {step.timeout:.0f}s: {title}: "
                    + "; ".join(verdict.problems)
                )
            time.sleep(UNTIL_TICK)


def solve(ref: str, from_start: bool = True) -> bool:
    lab = labs.find(ref)
    ctx = context(lab)
    if from_start:
        render.step(f"lab {lab.id}: {lab.title} — back to the starting state first")
        prepare(ctx)
    steps = [s for s in lab.spec.steps if s.modes is None or ctx.topo.mode in s.modes]
    render.step(
        f"the reference solution of lab {lab.id} on {ctx.topo.mode}: {len(steps)} "
        f"steps, as in {lab.readme.relative_to(repo_root())}"
    )
    Solver(ctx).run(steps)
    ctx._records.clear()
    return _check(ctx)
