"""Host ports into the embedded lab: the cluster on the learner's own desk.

One forwarder process per lab (`python -m kafkalab.targets.forward`), started by `up` and
stopped by `down`. It binds every listening socket on 127.0.0.1 of the host's network
namespace first, then joins the lab's namespace (setns): a socket keeps the namespace it
was made in, so the listeners stay on the host's loopback while every connection the
forwarder makes goes out inside the lab, to a machine's lab address. Nothing else leaves
the namespace: no route, no bridge, no veth to the host; only 127.0.0.1 of the host.

What is forwarded (ports are topology settings, kafkalab.topology):
- kafka<N>'s PLAINTEXT_HOST listener (advertised as localhost:<host_kafka_port + N - 1>),
  so `localhost:9092` bootstraps and every leader is found on localhost too;
- the Spark master UI and a running job's UI (the driver runs on the controller side of
  the lab network, at its gateway address) when the lab has spark1;
- ksqlDB's REST API when it has ksql1.

Its PID file (the lab's state dir, forward.json) says which ports it holds; a PID is
trusted only while /proc/<pid>/cmdline is still this module's.
PyPI has no forwarder that binds in one namespace and connects from another (pproxy and
the like are whole proxies), so this is an asyncio stream copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns
from kafkalab.topology import HOST_LISTENER_PORT, Topology

MODULE = "kafkalab.targets.forward"
PID_FILE = "forward.json"
HOST = "127.0.0.1"
KSQLDB_PORT = 8088
SPARK_MASTER_UI_PORT = 8080
SPARK_JOB_UI_PORT = 4040
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Forward:
    """127.0.0.1:<port> on the host -> <address>:<to_port> in the lab."""

    name: str
    port: int
    setting: str
    address: str
    to_port: int

    @property
    def url(self) -> str:
        if self.name.startswith("kafka"):
            return f"localhost:{self.port}"
        return f"http://127.0.0.1:{self.port}"


def plan(topo: Topology) -> list[Forward]:
    """What this lab forwards, in the order `status` shows it."""
    machines = {m.name: m.address for m in topo.machines()}
    brokers = [m for m in topo.machines() if "kafka_broker" in m.groups]
    port = HOST_LISTENER_PORT
    out = [
        Forward(m.name, topo.host_kafka_port + i, "host_kafka_port", m.address, port)
        for i, m in enumerate(brokers)
    ]
    driver = topo.gateway().split("/")[0]  # Spark drivers run on the controller side
    extra = [
        ("spark1", "spark master UI", "host_spark_ui_port", None, SPARK_MASTER_UI_PORT),
        ("spark1", "spark job UI", "host_spark_job_ui_port", driver, SPARK_JOB_UI_PORT),
        ("ksql1", "ksqldb", "host_ksqldb_port", None, KSQLDB_PORT),
    ]
    for machine, name, setting, address, port in extra:
        if machine in machines:
            host_port = getattr(topo, setting)
            out.append(Forward(name, host_port, setting, address or machines[machine], port))
    return out


def taken_line(f: Forward, why: str) -> str:
    return (
        f"127.0.0.1:{f.port} ({f.name}) is taken ({why}): set {f.setting} in cluster.yml "
        "to a free port, or stop what listens there"
    )


def check_free(forwards: list[Forward], ours: set[int] | None = None) -> None:
    """One line naming the first taken port and its setting; ports in `ours` (held by this
    lab's own forwarder) are not in the way. Called before any machine is touched."""
    for f in forwards:
        if f.port in (ours or set()):
            continue
        try:
            listen(f.port).close()
        except OSError as exc:
            raise KafkalabError(taken_line(f, exc.strerror or str(exc))) from None


def check_ports(state: Path, topo: Topology) -> None:
    """`up`'s check: the lab's host ports are free, or held by its own forwarder."""
    held = running(state) or {"forwards": []}
    check_free(plan(topo), {f["port"] for f in held["forwards"]})


def listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


# -- bookkeeping (the `up`/`down`/`status` side) ---------------------------------------


def _pid_file(state: Path) -> Path:
    return state / PID_FILE


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22): with
    the PID it tells the process apart from a later one given the same PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def running(state: Path) -> dict[str, Any] | None:
    """The forwarder's record (pid, ns, forwards) while that very process still runs: the
    forwarder module serving the record's namespace, started when the record says."""
    try:
        record = json.loads(_pid_file(state).read_text())
        pid = int(record["pid"])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if cmdline[1:4] != [b"-m", MODULE.encode(), str(record.get("ns")).encode()]:
        return None  # gone, and its PID given to another process
    if _started(pid) != record.get("started"):
        return None
    return dict(record)


def start(state: Path, ns: str, forwards: list[Forward]) -> dict[str, Any]:
    """Start this lab's forwarder (a running one with other ports is stopped first)."""
    current = running(state)
    wanted = [asdict(f) for f in forwards]
    if current is not None and current.get("ns") == ns and current.get("forwards") == wanted:
        return current
    stop(state)
    if not forwards:
        return {}
    log = state / "logs" / "forward.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", MODULE, ns, json.dumps(wanted)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,  # outlives `kafkalab up`; a Ctrl-C there leaves it be
        )
    try:  # from here on an error or Ctrl-C stops it (its own session: Ctrl-C misses it)
        # Recorded before the wait below, so a `down` while it waits finds it.
        record = {"pid": proc.pid, "started": _started(proc.pid), "ns": ns, "forwards": wanted}
        _pid_file(state).write_text(json.dumps(record) + "\n")
        line = _first_line(proc, START_TIMEOUT)
    except BaseException:
        _halt(state, proc)
        raise
    if line != "ready":
        _halt(state, proc)
        raise KafkalabError(line or f"the port forwarder did not start: see {log}")
    return record


def _halt(state: Path, proc: subprocess.Popen[bytes]) -> None:
    """Stop a forwarder `start` has just launched, by its handle: not through `running`,
    whose look at /proc/<pid>/cmdline can read an empty one for a few ms after Popen
    returns (the kernel closes the exec pipe before it sets up the new argv), and then
    takes the forwarder for another process. An unreaped child's PID is never reused."""
    if proc.stdout is not None:
        proc.stdout.close()
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _pid_file(state).unlink(missing_ok=True)


def _first_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data and time.monotonic() < deadline:
        chunk = proc.stdout.read()
        if chunk:
            data += chunk
        elif chunk == b"" or proc.poll() is not None:
            break
        else:
            time.sleep(0.02)
    proc.stdout.close()
    return data.decode(errors="replace").split("\n", 1)[0].strip()


def stop(state: Path) -> int | None:
    """Stop this lab's forwarder by its PID (the PID it had, or None)."""
    record = running(state)
    _pid_file(state).unlink(missing_ok=True)
    if record is None:
        return None
    pid = int(record["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)
    if Path(f"/proc/{pid}").exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # ours (this process started it): reaped, not left a zombie
    return pid


def urls(state: Path) -> dict[str, str]:
    """What the running forwarder offers, name -> bootstrap address or URL ({} when off)."""
    record = running(state)
    if record is None:
        return {}
    return {f["name"]: Forward(**f).url for f in record["forwards"]}


# -- the forwarder process --------------------------------------------------------------


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def _serve(socks: list[tuple[socket.socket, Forward]]) -> None:
    def handler(f: Forward) -> Any:
        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_r, up_w = await asyncio.open_connection(f.address, f.to_port)
            except OSError:
                writer.close()  # the machine (or a job's UI) is not there: a refused client
                return
            await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))
            for w in (writer, up_w):
                w.close()

        return one

    servers = [await asyncio.start_server(handler(f), sock=s) for s, f in socks]
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await stopping.wait()
    for server in servers:
        server.close()


def main(argv: list[str]) -> int:
    ns, forwards = argv[0], [Forward(**f) for f in json.loads(argv[1])]
    socks: list[tuple[socket.socket, Forward]] = []
    for f in forwards:  # bound here, in the host's namespace, before joining the lab's
        try:
            socks.append((listen(f.port), f))
        except OSError as exc:
            print(taken_line(f, exc.strerror or str(exc)), flush=True)
            return 1
    netns.enter(ns)  # one thread: everything from here on connects inside the lab
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    asyncio.run(_serve(socks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
