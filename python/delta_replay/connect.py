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

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def server_settings(jar: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The ``--conf`` settings a Spark Connect server needs to serve delta-replay reads.

    ``jar`` defaults to the connector jar this package carries (``connector_jar()``).
    """
    from ._versions import DELTA_MAVEN
    from .session import DELTA_CATALOG, DELTA_EXTENSION, REPLAY_EXTENSION, connector_jar

    found = Path(jar) if jar else connector_jar()
    if found is None:
        raise FileNotFoundError(
            "delta-replay connector jar not found: build it with `./dev build` or set "
            "DELTA_REPLAY_JAR"
        )
    return {
        "spark.jars": str(found),
        "spark.jars.packages": DELTA_MAVEN,
        "spark.sql.extensions": f"{DELTA_EXTENSION},{REPLAY_EXTENSION}",
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    }


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
    while not _listening(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.terminate()
            tail = Path(log).read_text(errors="replace")[-3000:] if log else "(no log kept)"
            raise RuntimeError(
                f"the Spark Connect server did not start on port {port} "
                f"(exit code {proc.poll()}):\n{tail}"
            )
        time.sleep(0.5)
    return proc


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def register(registry: Any) -> None:
    """``delta-replay connect-server``: a local Spark Connect server with the connector."""
    parser = registry.add(
        "demo",
        "connect-server",
        "start a local Spark Connect server with delta-spark and the connector (Ctrl-C stops it)",
        _run,
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1 (default 15002)"
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
    print(f"[connect-server] starting on sc://127.0.0.1:{args.port} ...", flush=True)
    proc = start_server(args.port, master=args.master, log=None)
    print(
        f"[connect-server] listening: SparkSession.builder.remote('sc://127.0.0.1:{args.port}')",
        flush=True,
    )
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=60)
        return 0
