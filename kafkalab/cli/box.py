"""`kafkalab box ...`: the Vagrant libvirt box for offline classrooms (see docs/VMS.md)."""

from __future__ import annotations

import shlex
import subprocess
from typing import Annotated

import typer

from kafkalab import render
from kafkalab.errors import KafkalabError
from kafkalab.targets import box

app = typer.Typer(
    help="The Vagrant libvirt box, built from Debian packages: build, add, path.",
    no_args_is_help=True,
)

Name = Annotated[str, typer.Option("--name", help="box name for Vagrant (KAFKALAB_BOX)")]


@app.command()
def build(
    force: Annotated[bool, typer.Option("--force", help="rebuild even when cached")] = False,
) -> None:
    """Build the box from images/box-libvirt.yml (+ debian-base.yml), or reuse the cached one."""
    built = box.build(progress=render.step, force=force)
    render.ok(f"box: {built.file}")
    render.console.print(f"add it to Vagrant: {shlex.join(box.add_command(built))}")


@app.command()
def add(name: Name = box.DEFAULT_BOX_NAME) -> None:
    """Build (or reuse) the box and add it to Vagrant as NAME (replaces an older one)."""
    built = box.build(progress=render.step)
    cmd = box.add_command(built, name)
    render.step(shlex.join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise KafkalabError("vagrant is missing: run scripts/setup-vm.sh") from None
    if proc.returncode != 0:
        raise KafkalabError(f"vagrant box add failed:\n{proc.stderr.strip()}")
    render.ok(f"box {name} added; use it with KAFKALAB_BOX={name} vagrant up")


@app.command()
def path() -> None:
    """Print the path of the cached .box file (nothing and exit 1 when not built)."""
    cached = box.cached_box()
    if cached is None:
        raise typer.Exit(1)
    render.console.print(str(cached.file))
