"""One package file from PyPI into the artifact cache's `pypi/` dir, with `pip download`.

Both Python packages the artifact step fetches (the kafka-python wheel for the machines,
the pyspark package Spark's jars are taken from) come this way: pip downloads into a
temporary dir beside the target, the caller's check runs on that file, and only then is it
moved in. A failed, interrupted or refused download leaves nothing in the cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


class DownloadFailed(Exception):
    """Why pip did not deliver (one line); the caller adds where to put the file by hand."""


def download(
    requirement: str,
    into: Path,
    timeout: float,
    binary_only: bool = False,
    check: Callable[[Path], None] | None = None,
) -> Path:
    """`pip download --no-deps requirement`, checked by `check`, moved into `into`; the
    path of the one file pip fetched."""
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=into) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps"]
        cmd += ["--only-binary=:all:"] if binary_only else []
        cmd += ["--dest", tmp, requirement]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DownloadFailed(f"pip took over {timeout:g}s") from None
        got = sorted(Path(tmp).iterdir())
        if proc.returncode != 0 or len(got) != 1:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no package file"]
            raise DownloadFailed(f"pip download failed: {tail[0]}")
        if check is not None:
            check(got[0])
        target = into / got[0].name
        os.replace(got[0], target)
        return target
