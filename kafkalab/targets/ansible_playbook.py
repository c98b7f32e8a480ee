"""ansible-playbook without the interpreter's teardown at its end (kafkalab.targets.provision
runs playbooks with it: `python ansible_playbook.py ARGS` takes ansible-playbook's ARGS).

When a playbook is done, Ansible's process has its whole run in memory; the interpreter
then frees every object before the process exits, and a changed=0 run of site.yml spent
0.5 s on that after its last line (the recap), with kafkalab waiting for the exit status
(strace: the multiplexer reaped at .290, exit_group at .809, nothing but CPU between). Here
Ansible runs as ansible-playbook runs it; then, as a normal exit does, its non-daemon
threads are joined and its exit handlers run (logging's flush, multiprocessing's, temporary
files'), its output is flushed, and the process ends with Ansible's exit status without
freeing what the system frees anyway.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading


def main() -> None:
    sys.argv[0] = "ansible-playbook"  # the name Ansible's CLI goes by
    from ansible.cli.playbook import main as ansible_playbook  # type: ignore[import-untyped]

    try:
        code: object = ansible_playbook()
    except SystemExit as done:
        code = done.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): shown, status 1, as the interpreter
        print(code, file=sys.stderr)
        code = 1
    # As the interpreter's exit: threading's exit hooks (a thread pool's shutdown) and the
    # join of every non-daemon thread, then the atexit handlers.
    getattr(threading, "_shutdown")()  # noqa: B009 (private: mypy knows no such name)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a closed stream
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
