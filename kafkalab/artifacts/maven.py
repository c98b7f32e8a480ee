"""Jars from Maven Central (`mvn dependency:copy-dependencies`) and builds against them
(`mvn_run`), with the cache's own local repository (`<cache>/m2`), offline first, strict
checksums, one mvn at a time."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafkalab.artifacts.cache import cache_lock
from kafkalab.errors import KafkalabError

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
MVN_TIMEOUT = 1800  # seconds; the first assembly downloads ~60 MB of jars


class MavenError(KafkalabError):
    """mvn ran and failed; `output` is what it printed."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def mvn_copy_dependencies(
    pom: Path, out: Path, cache: Path, what: str, hint: str, settings: Path | None = None
) -> None:
    """`mvn dependency:copy-dependencies` of `pom` into `out`, with the cache's own local
    repository: offline first when it has one, so a pre-filled cache needs no network.
    Strict checksums: a download that does not match its repository checksum fails. One
    mvn at a time uses the local repository (the lock), which Maven does not guard.

    `what` names the thing fetched in errors, `hint` says what to do instead."""
    goals = [
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    mvn_run(pom, goals, cache, what, hint, settings)


def mvn_run(
    pom: Path, goals: list[str], cache: Path, what: str, hint: str, settings: Path | None = None
) -> None:
    """`mvn <goals>` on `pom` with the cache's own local repository (`<cache>/m2`), as
    mvn_copy_dependencies does: offline first, strict checksums, one mvn at a time."""
    m2 = cache / "m2"
    with cache_lock(m2, "the Maven repository of the cache"):
        _run_mvn(m2, pom, goals, what, hint, settings)


def _run_mvn(
    m2: Path, pom: Path, goals: list[str], what: str, hint: str, settings: Path | None
) -> None:
    base = [
        "mvn",
        "-B",
        "-q",
        "--strict-checksums",
        *(["-s", str(settings)] if settings else []),
        "-f",
        str(pom),
        f"-Dmaven.repo.local={m2}",
        *goals,
    ]
    attempts = [[*base, "-o"], base] if m2.is_dir() else [base]
    output = ""
    for cmd in attempts:
        try:
            result = subprocess.run(
                cmd, capture_output=True, text=True, timeout=MVN_TIMEOUT, check=False
            )
        except FileNotFoundError:
            raise KafkalabError(
                f"{what} comes from Maven Central, but `mvn` is not installed. Install Maven"
                f" (apt-get install maven), or {hint}"
            ) from None
        except subprocess.TimeoutExpired:
            raise KafkalabError(f"mvn took over {MVN_TIMEOUT}s fetching {what}; {hint}") from None
        if result.returncode == 0:
            return
        output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if "ERROR" in line][:3]
    detail = "\n".join(errors) or output.strip()[-600:]
    raise MavenError(f"mvn could not fetch {what} from Maven Central:\n{detail}\n{hint}", output)
