"""Mitogen's linear strategy without its CPU pinning (kafkalab.targets.provision picks it).

Mitogen pins Ansible's processes to CPUs (ansible_mitogen.affinity): on a machine with 2 or 3
CPUs its connection multiplexer gets CPU 0, and the top-level process, every task's worker
and the ssh clients all share CPU 1. kafkalab runs its embedded machines on the same CPUs, so
the controller queued behind the brokers on one core while the other had time to spare. With
the pinning off, a changed=0 `kafkalab up` of three brokers took about a third less time
(bench/ansible_speed.py prints both).

It also keeps what Mitogen compiles to find a module's module_utils. Mitogen scans each
module a run uses (command, file, user, ...) once, and each scan compiled every module_utils
file it reached (46 for most modules, basic.py among them), again for every module: 0.12 s
a module, about 1.2 s of a run for nine, while the task waited. The compiled code of an
unchanged file is the same, so a second scan reuses it (the nine scans: 0.36 s).

Each run's connection multiplexer is a new process, so each run also compiled again what
Mitogen scans to find the modules a host asks for (mitogen.master) and minified again the
sources it sends (mitogen.minify): ~0.9 s of its CPU in a changed=0 run, mostly while the
first task's hosts waited for their modules. When kafkalab names a directory (CACHE_ENV,
in its cache), both are also kept there, by a hash of the source, its name and Python's
bytecode version: a later run reads them back. The compiled code only lists imports; the
minified source is what the machines run, as Mitogen made it from that same source.
Everything else is Mitogen's `mitogen_linear`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import secrets
from pathlib import Path
from types import CodeType
from typing import Any

import ansible_mitogen.affinity  # type: ignore[import-untyped]
import ansible_mitogen.loaders  # type: ignore[import-untyped]
import ansible_mitogen.module_finder  # type: ignore[import-untyped]
import ansible_mitogen.strategy  # type: ignore[import-untyped]
import mitogen  # type: ignore[import-untyped]
import mitogen.master  # type: ignore[import-untyped]
import mitogen.minify  # type: ignore[import-untyped]

DOCUMENTATION = """
name: kafkalab_linear
short_description: Mitogen's linear strategy, without pinning Ansible's processes to CPUs
description:
  - Mitogen's mitogen_linear strategy, with ansible_mitogen.affinity's policy replaced by its
    no-op base policy, so the scheduler places the controller, its workers and ssh freely,
    and with the code Mitogen compiles to scan a module's imports kept for the next module,
    and (in the directory KAFKALAB_CONTROLLER_CACHE names) that code and the sources Mitogen
    minifies kept for the next run.
"""

# The base policy's assign_* methods do nothing; every caller looks the policy up here.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

_COMPILED: dict[tuple[Any, ...], CodeType] = {}
CACHE_ENV = "KAFKALAB_CONTROLLER_CACHE"  # set by kafkalab.targets.provision


def _kept(kind: str, *parts: bytes) -> Path | None:
    """Where CACHE_ENV's directory keeps what was made of `parts` (None: not set), by this
    Python's bytecode and this Mitogen's minifier."""
    root = os.environ.get(CACHE_ENV)
    if not root:
        return None
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + repr(mitogen.__version__).encode())
    for part in parts:
        digest.update(len(part).to_bytes(8, "little") + part)
    return Path(root) / kind / digest.hexdigest()


def _read(path: Path | None) -> bytes | None:
    """What _keep wrote, whole (its digest checked), or None."""
    try:
        data = path.read_bytes() if path is not None else b""
    except OSError:
        return None
    body, check = data[:-32], data[-32:]
    return body if len(data) >= 32 and hashlib.sha256(body).digest() == check else None


def _keep(path: Path | None, data: bytes) -> None:
    """Written beside (a name no other process or thread uses) and renamed, with its digest
    last: a reader sees all of it or nothing, and a torn file is made again."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data + hashlib.sha256(data).digest())
        os.replace(tmp, path)
    except OSError:  # a cache that cannot be written: only slower
        with contextlib.suppress(OSError):
            tmp.unlink()


def _raw(source: bytes | str) -> bytes:
    return source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source


def compile_once(source: bytes | str, filename: str, mode: str) -> CodeType:
    """compile() that reuses the code of the same source: this run's, or a run's before it
    (the scans of module_finder and mitogen.master call it)."""
    key = (source, filename, mode)
    code = _COMPILED.get(key)
    if code is None:
        path = _kept("code", _raw(source), filename.encode(), mode.encode())
        data = _read(path)
        try:
            code = marshal.loads(data) if data is not None else None
        except (EOFError, ValueError, TypeError):
            code = None
        if not isinstance(code, CodeType):
            code = compile(source, filename, mode)
            _keep(path, marshal.dumps(code))
        _COMPILED[key] = code
    return code


_minimize_source = mitogen.minify.minimize_source


def minimize_once(source: bytes | str) -> str:
    """mitogen.minify.minimize_source, kept (CACHE_ENV) for the next run."""
    path = _kept("minified", _raw(source))
    data = _read(path)
    if data is not None:
        return data.decode("utf-8", "surrogateescape")
    text: str = _minimize_source(source)
    _keep(path, text.encode("utf-8", "surrogateescape"))
    return text


# Both scans look `compile` up in their module's globals first, and Mitogen calls the
# minifier through its module; the mux process that runs them is forked after this module
# is loaded, so it inherits all three.
ansible_mitogen.module_finder.compile = compile_once
mitogen.master.compile = compile_once
mitogen.minify.minimize_source = minimize_once

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):  # type: ignore[misc,valid-type]
    pass
