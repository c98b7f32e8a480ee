"""The lab walk every lab test does: start -> check fails -> solve -> check passes ->
reset -> check fails, with the state `kafkalab lab list` shows following along. `cluster`
is any lab fixture with .kafkalab(), .state and .mode (tests/cluster, tests/streaming)."""

from __future__ import annotations

import json
import re
import time

from kafkalab.failover import forensics

RESET_LIMIT = 30.0  # seconds, with every broker up (no re-provisioning, no restart)


def listed_state(cluster, lab: str) -> str:
    """The lab's state as `kafkalab lab list` shows it."""
    out = cluster.kafkalab("lab", "list").stdout
    row = next(line for line in out.splitlines() if re.search(rf"│ {lab}\s+│", line))
    return next(s for s in ("not started", "in progress", "passed") if s in row)


def saved_state(cluster, lab: str) -> str:
    """The same, read from the state file (no CLI start-up)."""
    data = json.loads((cluster.state / "labs" / "state.json").read_text())
    return next(v["state"] for k, v in data.items() if k.startswith(f"{lab}-"))


def check(cluster, lab: str) -> tuple[bool, str]:
    proc = cluster.kafkalab("lab", "check", lab, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.returncode == 0, proc.stdout


def start_check_solve_reset(cluster, lab: str) -> str:
    """The walk; returns what `lab solve` printed."""
    out = cluster.kafkalab("lab", "start", lab).stdout
    assert f"lab {lab} is ready" in out
    assert f"labs/{lab}-" in out and "README.md" in out
    assert saved_state(cluster, lab) == "in progress"

    passed, out = check(cluster, lab)
    assert not passed, out
    assert "not passed yet" in out and "✗" in out

    # solve ends with the same check `lab check` runs: its verdict is in the output
    solved = cluster.kafkalab("lab", "solve", lab, "--no-reset", check=False)
    assert solved.returncode == 0, solved.stdout[-4000:] + solved.stderr
    assert "$ " in solved.stdout  # every command is printed before its output
    assert solved.stdout.rstrip().endswith(f"lab {lab} passed"), solved.stdout[-2000:]
    assert "✗" not in solved.stdout.split("— checking")[-1]
    assert listed_state(cluster, lab) == "passed"

    started = time.monotonic()
    out = cluster.kafkalab("lab", "reset", lab).stdout
    wall = time.monotonic() - started
    took = float(re.search(r"starting state \((\d+\.\d)s\)", out).group(1))
    print(f"lab {lab} ({cluster.mode}): reset {took:.1f}s (CLI wall {wall:.1f}s)")
    assert took < RESET_LIMIT, out
    assert "provision" not in out
    assert saved_state(cluster, lab) == "in progress"

    passed, out = check(cluster, lab)
    assert not passed, out
    return solved.stdout


def assert_none_lost(text: str, lab: str) -> None:
    """The no_acked_loss verdict in a solve's output: nothing lost, and any duplicate one a
    client re-sent after bumping its producer epoch (outside what the broker deduplicates,
    as the failover verdict allows too), never one the broker's deduplication let through."""
    flat = " ".join(text.split())  # the CLI wraps long lines
    found = list(re.finditer(r"acknowledged \d+, lost (\d+), duplicates (\d+)", flat))
    assert found, text[-3000:]
    lost, dups = map(int, found[-1].groups())
    assert lost == 0, text[-3000:]
    if dups:
        verdict = flat[found[-1].end() :]  # the last check's lines about its duplicates
        copies = re.findall(r"written \d+ times: ", verdict)
        resent = verdict.count(forensics.RESENT)
        print(f"lab {lab}: {dups} duplicates; {resent} of {len(copies)} shown re-sent after a bump")
        assert "more duplicated record" not in verdict and 0 < len(copies) == resent, text[-3000:]
