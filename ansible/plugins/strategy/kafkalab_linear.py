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
Everything else is Mitogen's `mitogen_linear`.
"""

from __future__ import annotations

from types import CodeType
from typing import Any

import ansible_mitogen.affinity  # type: ignore[import-untyped]
import ansible_mitogen.loaders  # type: ignore[import-untyped]
import ansible_mitogen.module_finder  # type: ignore[import-untyped]
import ansible_mitogen.strategy  # type: ignore[import-untyped]

DOCUMENTATION = """
name: kafkalab_linear
short_description: Mitogen's linear strategy, without pinning Ansible's processes to CPUs
description:
  - Mitogen's mitogen_linear strategy, with ansible_mitogen.affinity's policy replaced by its
    no-op base policy, so the scheduler places the controller, its workers and ssh freely,
    and with the code Mitogen compiles to scan a module's imports kept for the next module.
"""

# The base policy's assign_* methods do nothing; every caller looks the policy up here.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

_COMPILED: dict[tuple[Any, ...], CodeType] = {}


def compile_once(source: bytes | str, filename: str, mode: str) -> CodeType:
    """compile() that reuses the code of the same source (module_finder's scan calls it)."""
    key = (source, filename, mode)
    code = _COMPILED.get(key)
    if code is None:
        code = _COMPILED[key] = compile(source, filename, mode)
    return code


# The scan looks `compile` up in its module's globals first; the mux process that runs it
# is forked after this module is loaded, so it inherits the name.
ansible_mitogen.module_finder.compile = compile_once

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):  # type: ignore[misc,valid-type]
    pass
