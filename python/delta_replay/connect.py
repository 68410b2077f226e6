"""Spark Connect: the connector as a client with no JVM sees it, and a local server to try it.

On a Spark Connect client (``SparkSession.builder.remote("sc://...")``) the connector
lives on the server: the client has no py4j gateway, so this package asks the server
through the SQL functions the session extension registers there:

- ``delta_replay_version()``: the connector's version (is it loaded at all?);
- ``delta_replay_scan_metrics(TABLE(query))``: the server plans the query and returns
  what replay and skipping did for each delta-replay scan of it.

A server needs the connector jar, delta-spark and both session extensions; the
settings are :func:`server_settings`, and ``delta-replay connect-server`` starts one
on this machine (:func:`start_server`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .session import server_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def server_command(
    port: int = DEFAULT_PORT,
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    jar: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The ``spark-submit`` command line of a Spark Connect server with the connector.

    It uses the ``spark-submit`` of the installed pyspark (whose jars include Spark
    Connect's server), listens on 127.0.0.1:``port`` and keeps the UI off.
    """
    import pyspark

    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    settings = {
        **server_settings(jar),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        **(conf or {}),
    }
    command = [str(submit), "--master", master, "--class", SERVER_CLASS]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def start_server(
    port: int = DEFAULT_PORT,
    *,
    log: str | os.PathLike[str] | None = None,
    timeout: float = 300.0,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a local Spark Connect server with the connector; return once it listens.

    Its output goes to ``log`` (default: discarded). Stop it with ``proc.terminate()``.
    Raises RuntimeError, with the end of the log, when it exits or does not listen
    within ``timeout`` seconds.
    """
    if _listening(port):
        raise RuntimeError(f"port {port} on 127.0.0.1 is taken: choose another with --port")
    command = server_command(port, master=master, conf=conf)
    sink = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - owned by the process
    proc = subprocess.Popen(
        command,
        stdout=sink,
        stderr=subprocess.STDOUT,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})},
    )
    deadline = time.monotonic() + timeout
    try:
        while not _listening(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = Path(log).read_text(errors="replace")[-3000:] if log else "(no log kept)"
                raise RuntimeError(
                    f"the Spark Connect server did not start on port {port} "
                    f"(exit code {proc.poll()}):\n{tail}"
                )
            time.sleep(0.5)
    except BaseException:  # a timeout, Ctrl-C or SIGTERM while it starts: stop it
        stop_server(proc)
        raise
    return proc


def stop_server(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    """Stop a server :func:`start_server` started (SIGTERM, then SIGKILL); its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def register(registry: Any) -> None:
    """``delta-replay demo connect-server``: a local Spark Connect server with the connector."""
    from .cli_support import free_port as free_port_arg

    parser = registry.add(
        "demo",
        "connect-server",
        "start a local Spark Connect server with delta-spark and the connector (Ctrl-C or "
        "SIGTERM stops it)",
        _run,
    )
    parser.add_argument(
        "--port", type=free_port_arg, default=DEFAULT_PORT, help="free port on 127.0.0.1"
    )
    parser.add_argument("--master", default="local[2]", help="Spark master of the server")
    parser.add_argument(
        "--print-only",
        action="store_true",
        help="print the spark-submit command and the settings instead of starting it",
    )


def _run(args: Any) -> int:
    command = server_command(args.port, master=args.master)
    if args.print_only:
        print(" ".join(command))
        return 0
    from .cli_support import UsageError
    from .session import default_jvm_log

    if _listening(args.port):  # the default port is not checked by --port's type
        raise UsageError(f"port {args.port} on 127.0.0.1 is taken: choose another with --port")
    log = default_jvm_log("connect-server")
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"[connect-server] starting on sc://127.0.0.1:{args.port} (log: {log}) ...", flush=True)
    try:
        proc = start_server(args.port, master=args.master, log=log)
    except RuntimeError as error:
        print(f"[connect-server] {error}", flush=True)
        return 1
    print(
        f"[connect-server] listening: SparkSession.builder.remote('sc://127.0.0.1:{args.port}')",
        flush=True,
    )
    try:
        return proc.wait()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (delta_replay.cli.Terminated)
        code = stop_server(proc)
        print(f"[connect-server] stopped (server exit code {code})", flush=True)
        raise


__all__ = [
    "DEFAULT_PORT",
    "SERVER_CLASS",
    "free_port",
    "is_connect",
    "register",
    "server_command",
    "server_settings",
    "start_server",
    "stop_server",
]
