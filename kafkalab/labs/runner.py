"""Running labs: `kafkalab lab ...` calls one function here each (list, start, reset,
check, solve), on the cluster the command chose (kafkalab.targets.resolve).

The process joins the cluster first (`InventoryCluster.join`: its network namespace, or
the controller for an inventory without one), so the Python clients, the tools over ssh
and the lab's own scripts all reach the machines; Ctrl-C still stops everything it started.
"""

from __future__ import annotations

from kafkalab import render
from kafkalab.errors import KafkalabError
from kafkalab.inventory import Layout
from kafkalab.labs import catalog, checks
from kafkalab.labs.context import LabContext
from kafkalab.labs.definition import Lab
from kafkalab.labs.prepare import prepare
from kafkalab.labs.progress import Progress
from kafkalab.labs.solver import Solver
from kafkalab.paths import repo_root
from kafkalab.targets.cluster import InventoryCluster, embedded_hint
from kafkalab.topology import SUPPORTED_KAFKA_VERSIONS, release

# -- the cluster a lab runs on -------------------------------------------------------------


def require(
    topo: Layout | None,
    lab: Lab,
    target: InventoryCluster | None = None,
    *,
    starting: bool = True,
) -> Layout:
    """Refuse, before anything runs, a cluster the lab cannot run on. The refusal says how
    to give it what it lacks as `target` (by default the embedded lab) takes it. `starting`:
    the lab is to be (re)started there, which a lab with needs.kafka_max refuses on a newer
    release; its check looks at the cluster the learner has upgraded."""
    embedded = target is None or target.kind == "embedded"
    hint = target.how_to_add if target is not None else embedded_hint
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
            + (
                f"Run `kafkalab down --purge`, then `kafkalab up --mode {needs.modes[0]}`"
                if embedded
                else f"Use a {needs.modes[0]} cluster: kafka_mode is the inventory's to say"
            )
        )
    if needs.kafka_min and release(topo.kafka_version) < release(needs.kafka_min):
        newest = SUPPORTED_KAFKA_VERSIONS[-1]
        raise KafkalabError(
            f"{name} needs Kafka {needs.kafka_min} or newer; this cluster runs "
            f"{topo.kafka_version}: "
            + (
                f"set kafka_version: {newest} in cluster.yml (or your -t file) and run "
                "`kafkalab up` again (a KRaft lab rolls to it and keeps its data)"
                if embedded
                else f"set kafka_version: {newest} in the inventory and provision again"
            )
        )
    if starting and needs.kafka_max and too_new(topo.kafka_version, needs.kafka_max):
        older = max(
            (v for v in SUPPORTED_KAFKA_VERSIONS if not too_new(v, needs.kafka_max)), key=release
        )
        raise KafkalabError(
            f"{name} starts on Kafka {needs.kafka_max}; this cluster runs {topo.kafka_version}, "
            "and a cluster never goes back to an older line: "
            + (
                f"run `kafkalab down --purge` (it deletes the lab's data), then "
                f"`kafkalab up --kafka-version {older}`"
                if embedded
                else f"use a cluster provisioned with kafka_version: {older} on new storage"
            )
        )
    try:
        topo.check_replication_factor(lab.max_replication_factor())
    except KafkalabError as exc:
        raise KafkalabError(f"{name}: {exc}") from None
    missing = [h for h in needs.extra_hosts if h not in topo.extra_hosts]
    if missing:
        hosts = " and ".join(missing)
        add = hint(f"--with {','.join(missing)}", f"the {hosts} host(s)")
        raise KafkalabError(f"{name} needs the {hosts} host(s) this cluster does not have: {add}")
    if topo.brokers < needs.brokers:
        raise KafkalabError(
            f"{name} needs {needs.brokers} brokers; this cluster has "
            f"{topo.brokers}: {hint(f'--brokers {needs.brokers}', f'{needs.brokers} brokers')}"
            + (
                ""
                if not embedded or (topo.mode == "kraft" and topo.controllers)
                else " after `kafkalab down --purge` (its ZooKeeper ensemble or KRaft voters "
                "are fixed once it runs)"
            )
        )
    return topo


def too_new(kafka_version: str, kafka_max: str) -> bool:
    """Whether `kafka_version` is past a lab's needs.kafka_max ("3.9.2" is not past "3.9")."""
    newest = release(kafka_max)
    return release(kafka_version)[: len(newest)] > newest


def context(lab: Lab, cluster: InventoryCluster, *, starting: bool = True) -> LabContext:
    """The lab against the cluster, with this process where the cluster is reached."""
    topo = require(cluster.layout(), lab, cluster, starting=starting)
    progress = Progress(cluster.state)
    baseline = progress.get(lab).get("baseline", {})
    ctx = LabContext(cluster, topo, lab, progress.workdir(lab), baseline)
    cluster.join()
    return ctx


# -- list, start, reset -------------------------------------------------------------------------


def rows(cluster: InventoryCluster) -> list[tuple[str, str, str, str, str]]:
    """One row per lab: number, title, modes, brokers, the learner's state on `cluster`."""
    progress = Progress(cluster.state)
    out = []
    for lab in catalog.discover():
        if isinstance(lab, KafkalabError):
            out.append(("??", "(cannot be loaded)", "", "", str(lab)))
            continue
        needs = lab.spec.needs
        out.append(
            (lab.id, lab.title, " or ".join(needs.modes), str(needs.brokers), progress.state(lab))
        )
    return out


def start(ref: str, cluster: InventoryCluster) -> None:
    lab = catalog.find(ref)
    ctx = context(lab, cluster)
    render.step(f"lab {lab.id}: {lab.title} — preparing the starting state")
    seconds = prepare(ctx)
    render.ok(f"lab {lab.id} is ready ({seconds:.1f}s). Goal: {lab.spec.goal}")
    render.step(f"instructions: {lab.readme}")
    render.step(f"when done: kafkalab lab check {lab.id}  (stuck? kafkalab lab solve {lab.id})")


def reset(ref: str, cluster: InventoryCluster) -> None:
    lab = catalog.find(ref)
    ctx = context(lab, cluster)
    seconds = prepare(ctx)
    render.ok(f"lab {lab.id} is back at its starting state ({seconds:.1f}s)")


# -- check and solve -----------------------------------------------------------------------


def check(ref: str, cluster: InventoryCluster) -> bool:
    lab = catalog.find(ref)
    return _check(context(lab, cluster, starting=False))


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
    specs = checks.applicable(ctx)
    for spec in specs:
        title, verdict = checks.run(ctx, spec)
        (render.ok if verdict.ok else render.fail)(title)
        for fact in verdict.facts:
            render.detail(fact, "dim")
        for problem in verdict.problems:
            render.detail(problem)
        if not verdict.ok:
            failed += 1
            if spec.hint:
                render.detail(f"→ {spec.hint}", "cyan")
    if failed:
        render.fail(f"{failed} of {len(specs)} checks not passed yet (lab {lab.id})")
        return False
    progress.set(lab, "passed")
    render.ok(f"lab {lab.id} passed")
    return True


def solve(ref: str, cluster: InventoryCluster, from_start: bool = True) -> bool:
    lab = catalog.find(ref)
    ctx = context(lab, cluster, starting=from_start)
    if from_start:
        render.step(f"lab {lab.id}: {lab.title} — back to the starting state first")
        prepare(ctx)
    steps = [s for s in lab.spec.steps if s.modes is None or ctx.topo.mode in s.modes]
    render.step(
        f"the reference solution of lab {lab.id} on {ctx.topo.mode}: {len(steps)} "
        f"steps, as in {lab.readme.relative_to(repo_root())}"
    )
    Solver(ctx).run(steps)
    ctx.forget_records()
    return _check(ctx)
