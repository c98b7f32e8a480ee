"""Ansible callback for bench/ansible_speed.py: the wall time of each task (from its start
to the next task's, all hosts together) as JSON lines in $KAFKALAB_BENCH_TASK_TIMES."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase  # type: ignore[import-untyped]

DOCUMENTATION = """
name: task_times
type: aggregate
short_description: wall time of each task, as JSON lines in $KAFKALAB_BENCH_TASK_TIMES
description: Used by bench/ansible_speed.py only.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.start = time.monotonic()
        self.current: tuple[str, str, float, float] | None = None
        self.rows: list[dict[str, Any]] = []

    def _close(self) -> None:
        if self.current:
            name, action, began, wall = self.current
            self.rows.append(
                {"task": name, "action": action, "secs": time.monotonic() - began, "at": wall}
            )
            self.current = None

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._close()
        self.current = (f"PLAY {play.get_name()}", "play", time.monotonic(), time.time())

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._close()
        self.current = (task.get_name(), task.action, time.monotonic(), time.time())

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._close()
        path = os.environ.get("KAFKALAB_BENCH_TASK_TIMES")
        if not path:
            return
        with open(path, "a") as out:
            for row in self.rows:
                out.write(json.dumps(row) + "\n")
            out.write(
                json.dumps(
                    {"task": "TOTAL", "action": "total", "secs": time.monotonic() - self.start}
                )
                + "\n"
            )
