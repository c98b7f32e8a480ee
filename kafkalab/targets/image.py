"""The Debian base image: built from Debian packages by mmdebstrap, cached by recipe hash.

Built under the cache lock (a second kafkalab waits, then finds it built). The Debian mirror
may be plain http (the default): apt checks every package against the mirror's Release file,
signed with the Debian archive keys, so the transport need not be trusted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from kafkalab.artifacts import cache as artifact_cache
from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root, repo_root

RECIPE = "images/debian-base.yml"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def recipe_path() -> Path:
    return repo_root() / RECIPE


def recipe_hash(recipe: Path | None = None) -> str:
    return hashlib.sha256((recipe or recipe_path()).read_bytes()).hexdigest()[:12]


def image_dir(recipe: Path | None = None) -> Path:
    """Where the rootfs for this recipe lives (whether built yet or not)."""
    return cache_root() / "images" / f"debian-base-{recipe_hash(recipe)}"


def rootfs(recipe: Path | None = None) -> Path:
    return image_dir(recipe) / "rootfs"


def is_built(recipe: Path | None = None) -> bool:
    return (image_dir(recipe) / "complete").exists()


def mmdebstrap_command(recipe: Path, target: Path, mirror: str) -> list[str]:
    """The mmdebstrap call for a recipe (pure: unit-tested)."""
    spec = yaml.safe_load(recipe.read_text())
    cmd = [
        "mmdebstrap",
        f"--variant={spec.get('variant', 'apt')}",
        "--format=directory",
        "--include=" + ",".join(spec["packages"]),
    ]
    for step in spec.get("customize", []):
        cmd.append(f'--customize-hook=chroot "$1" sh -ec {_shell_quote(step)}')
    cmd += [spec["suite"], str(target), mirror]
    return cmd


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def ensure_image(progress: Callable[[str], None] = print, recipe: Path | None = None) -> Path:
    """Return the rootfs, building it first if this recipe has no cached build."""
    recipe = recipe or recipe_path()
    root = rootfs(recipe)
    if is_built(recipe):
        return root
    with artifact_cache.cache_lock(image_dir(recipe), "the base image", progress):
        if not is_built(recipe):  # else built while this one waited
            _build(recipe, progress)
    return root


def _build(recipe: Path, progress: Callable[[str], None]) -> None:
    root = rootfs(recipe)
    if shutil.which("mmdebstrap") is None:
        raise KafkalabError(
            "mmdebstrap is missing: run `make setup` (it installs it with apt-get), "
            f"or copy a built image to {image_dir(recipe)}"
        )
    mirror = os.environ.get("KAFKALAB_DEBIAN_MIRROR", DEFAULT_MIRROR)
    work = image_dir(recipe)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    progress(f"building the base image from Debian packages ({mirror}), about a minute…")
    log = work / "build.log"
    with log.open("w") as out:
        proc = subprocess.run(
            mmdebstrap_command(recipe, root, mirror), stdout=out, stderr=subprocess.STDOUT
        )
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-5:])
        raise KafkalabError(f"building the base image failed (log: {log}):\n{tail}")
    (work / "complete").write_text(recipe_hash(recipe) + "\n")
    progress(f"base image ready: {root}")
