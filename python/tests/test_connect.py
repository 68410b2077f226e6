"""The package from a Spark Connect client, on a real Connect server, next to a classic session.

The server is pyspark's own (``SparkConnectServer`` through spark-submit) with the
connector jar, delta-spark and both extensions (``delta_replay.connect.start_server``).
The client runs in a subprocess: a Connect session switches PySpark's process-wide mode,
which the shared classic session of this test run must not see.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import delta_replay
from delta_replay import connect

CLIENT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import delta_replay
    from delta_replay.connect import is_connect

    url, table, missing, unsupported, sink, ckpt = sys.argv[1:]
    spark = SparkSession.builder.remote(url).getOrCreate()
    out = {"is_connect": is_connect(spark)}
    out["available"] = delta_replay.connector_available(spark)
    out["version"] = delta_replay.connector_version(spark)
    routed = spark.read.format("delta").load(table).where("id < 5")
    out["routed_ids"] = sorted(r["id"] for r in routed.collect())
    out["metrics"] = delta_replay.scan_metrics(routed)
    out["read_count"] = delta_replay.read(spark, table).count()
    out["read_v0_count"] = delta_replay.read(spark, table, version=0).count()
    q = (
        spark.readStream.format("delta").option("maxFilesPerTrigger", "1").load(table)
        .writeStream.format("delta").option("checkpointLocation", ckpt)
        .trigger(availableNow=True).start(sink)
    )
    q.awaitTermination()
    out["stream_count"] = spark.read.format("delta").load(sink).count()
    out["stream_sources"] = [p["sources"][0]["description"] for p in q.recentProgress]
    def error(path):
        try:
            spark.read.format("delta-replay").load(path).collect()
        except Exception as e:
            return str(e)
        return None
    out["missing_error"] = error(missing)
    out["unsupported_error"] = error(unsupported)
    # delta-spark's DeltaTable API needs Delta Connect's server plugins (docs/usage.md)
    from delta.tables import DeltaTable
    try:
        DeltaTable.forPath(spark, table).toDF().count()
        out["delta_table_error"] = None
    except Exception as e:
        out["delta_table_error"] = str(e)
    # ... and SQL does the same on the server
    spark.sql(f"DELETE FROM delta.`{sink}` WHERE id = 0")
    out["after_sql_delete"] = spark.read.format("delta").load(sink).count()
    spark.stop()
    print("RESULT " + json.dumps(out))
    """
)


ERRORS_CLIENT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    url, cases = sys.argv[1], json.loads(sys.argv[2])
    spark = SparkSession.builder.remote(url).getOrCreate()
    # a Connect client shows the server's JVM stack in every error's text unless told not to
    # (Spark's setting, true by default, for Spark's errors as for the connector's)
    spark.conf.set("spark.sql.connect.serverStacktrace.enabled", "false")
    out = {}
    for name, (path, options) in cases.items():
        try:
            spark.read.format("delta-replay").options(**options).load(path).collect()
            out[name] = None
        except Exception as e:
            out[name] = {
                "classes": [f"{c.__module__}.{c.__name__}" for c in type(e).__mro__],
                "condition": e.getCondition(),
                "state": e.getSqlState(),
                "parameters": e.getMessageParameters(),
                "text": str(e),
            }
    spark.stop()
    print("RESULT " + json.dumps(out))
    """
)


class Server:
    """`delta-replay demo connect-server` in a process of its own, as a user starts it."""

    def __init__(self, spark_conf_dir: Path) -> None:
        self.port = connect.free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        # the test settings (delta-spark's snapshot shuffle in 2 partitions, ...) through
        # spark-defaults.conf: the command takes none of its own
        env = {**os.environ, "SPARK_CONF_DIR": str(spark_conf_dir)}
        command = [sys.executable, "-m", "delta_replay", "demo", "connect-server"]
        self.proc = subprocess.Popen(
            [*command, "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # ends when the command exits
            if line.startswith("[connect-server] listening"):
                return
        raise AssertionError(f"no server: {self.proc.wait()} {self.proc.stderr.read()}")

    def children(self) -> list[int]:
        """The processes the command started (the server's JVM)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                found.append(int(stat.parent.name))
        return found

    def stop(self) -> None:
        """SIGTERM to the command (it stops its JVM); SIGKILL to both if that did not work.
        The JVM's pid is taken first: once the command is gone it is no longer its child."""
        jvms = self.children()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in jvms:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def started(spark_conf_dir: Path) -> Iterator[Server]:
    server = Server(spark_conf_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(started: Server) -> str:
    return started.url


def _tables(spark: SparkSession, root: Path) -> dict[str, str]:
    table = str(root / "t")
    for i in range(3):
        spark.range(i * 10, (i + 1) * 10).coalesce(1).write.format("delta").mode("append").save(
            table
        )
    unsupported = str(root / "unsupported")
    spark.range(3).write.format("delta").save(unsupported)
    protocol = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["fancyNewFeature"],
            "writerFeatures": ["fancyNewFeature"],
        }
    }
    (Path(unsupported) / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(protocol) + "\n")
    return {"table": table, "missing": str(root / "nothing-here"), "unsupported": unsupported}


def _classic_error(spark: SparkSession, path: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.read.format("delta-replay").load(path).collect()
    return str(caught.value)


def test_public_functions_answer_the_same_on_connect_and_classic(
    spark: SparkSession, server: str, tmp_path: Path
) -> None:
    t = _tables(spark, tmp_path)
    args = [server, t["table"], t["missing"], t["unsupported"]]
    args += [str(tmp_path / "sink"), str(tmp_path / "ckpt")]
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, *args], capture_output=True, text=True, timeout=600
    )
    lines = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-3000:] + run.stderr[-3000:]
    got: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])

    assert got["is_connect"] is True
    assert got["available"] is True
    assert got["version"] == delta_replay.connector_version(spark)

    # a routed read: V1's rows, and the same scan figures the classic session reports
    v1 = delta_replay.read(spark, t["table"], reader="delta").where("id < 5")
    assert got["routed_ids"] == sorted(r["id"] for r in v1.collect())
    classic = delta_replay.scan_metrics(spark.read.format("delta").load(t["table"]).where("id < 5"))
    assert len(got["metrics"]) == len(classic) == 1
    for key in ("version", "liveFiles", "filesAfterPartitionPruning", "filesAfterSkipping"):
        assert got["metrics"][0][key] == classic[0][key], key
    assert got["metrics"][0]["filesAfterSkipping"] == 1

    assert got["read_count"] == 30 and got["read_v0_count"] == 10

    # a routed stream with availableNow: every row, one file per micro-batch, through our source
    assert got["stream_count"] == 30
    assert got["stream_sources"], "no progress reported"
    assert all("DeltaReplayMicroBatchStream" in d for d in got["stream_sources"])

    # DeltaTable through Connect fails as docs/usage.md says; SQL works
    assert "NO_HANDLER_FOR_EXTENSION" in (got["delta_table_error"] or ""), got["delta_table_error"]
    assert got["after_sql_delete"] == 29
    assert delta_replay.read(spark, str(tmp_path / "sink"), reader="delta").count() == 29

    # bad input: the same clear error text as on a classic session
    for key, needle in (("missing", "is not a Delta table"), ("unsupported", "fancyNewFeature")):
        classic_text = _classic_error(spark, t[key])
        remote_text = got[f"{key}_error"]
        assert remote_text is not None, f"{key}: no error through Connect"
        for text in (classic_text, remote_text):
            assert needle in text and t[key] in text, text


def test_configure_on_a_remote_builder_prints_the_server_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    builder = SparkSession.Builder().remote("sc://127.0.0.1:1")
    before = dict(builder._options)  # noqa: SLF001 - PySpark's pending options
    assert delta_replay.configure(builder) is builder
    assert dict(builder._options) == before  # noqa: SLF001 - nothing set on a client
    err = capsys.readouterr().err
    assert "configured on the server" in err and "sc://127.0.0.1:1" in err
    for key, value in connect.server_settings().items():
        assert f"--conf {key}={value}" in err


def test_connect_server_command_line() -> None:
    command = connect.server_command(15010)
    assert command[0].endswith("spark-submit") and connect.SERVER_CLASS in command
    assert "spark.connect.grpc.binding.port=15010" in command
    assert any(
        c.startswith("spark.sql.extensions=") and "DeltaReplayExtension" in c for c in command
    )


def test_the_connect_example_of_the_docs_runs(server: str, tmp_path: Path) -> None:
    """docs/usage.md's Connect block (marked `connect`), on this server, in a client process."""
    from test_docs import python_blocks

    [block] = python_blocks("connect")
    code = block.code.replace("sc://127.0.0.1:15002", server)
    assert code != block.code, "the block no longer names the server the docs start"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0] == "True" and "'filesAfterPartitionPruning': 4" in lines[1], lines
    assert lines[2] == "1000", lines


def test_errors_arrive_as_pyspark_classes_with_their_conditions(
    spark: SparkSession, server: str, tmp_path: Path
) -> None:
    """The connector's errors through Connect: PySpark's Connect classes of the same names as on
    a classic session (test_errors.py), the condition, SQLSTATE and one-line message (with the
    server's stack trace turned off, as Connect shows it in the text of every error by default)."""
    t = _tables(spark, tmp_path)
    corrupt = Path(shutil.copytree(t["table"], tmp_path / "corrupt"))
    commit = corrupt / "_delta_log" / f"{2:020d}.json"
    (corrupt / "_delta_log" / f".{commit.name}.crc").unlink()
    text = commit.read_bytes()
    commit.write_bytes(text[: int(len(text) * 0.6)])
    no_file = Path(shutil.copytree(t["table"], tmp_path / "no-file"))
    sorted(no_file.glob("*.parquet"))[0].unlink()
    cases = {  # name: (path, options), (Spark class, condition, SQLSTATE)
        "missing": ((t["missing"], {}), ("AnalysisException", "NOT_A_DELTA_TABLE", "42P01")),
        "version": (
            (t["table"], {"versionAsOf": "99"}),
            ("AnalysisException", "VERSION_NOT_FOUND", "22023"),
        ),
        "option": (
            (t["table"], {"versionAsOf": "0", "timestampAsOf": "2020-01-01"}),
            ("AnalysisException", "BAD_OPTION", "42616"),
        ),
        "unsupported": (
            (t["unsupported"], {}),
            ("AnalysisException", "UNSUPPORTED_TABLE", "0A000"),
        ),
        "corrupt": ((str(corrupt), {}), ("SparkRuntimeException", "CORRUPT_LOG", "XX001")),
        "no_file": ((str(no_file), {}), ("SparkRuntimeException", "MISSING_FILE", "58030")),
    }
    reads = {name: read for name, (read, _) in cases.items()}
    run = subprocess.run(
        [sys.executable, "-c", ERRORS_CLIENT, server, json.dumps(reads)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stdout[-3000:] + run.stderr[-3000:]
    got: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    for name, ((path, _), (kind, condition, state)) in cases.items():
        error = got[name]
        assert error is not None, f"{name}: no error through Connect"
        classes = error["classes"]
        assert classes[0] == f"pyspark.errors.exceptions.connect.{kind}", (name, classes)
        assert f"pyspark.errors.exceptions.base.{kind}" in classes, (name, classes)
        assert error["condition"] == f"DELTA_REPLAY_{condition}", (name, error)
        assert error["state"] == state, (name, error)
        message = error["text"]
        assert len(message.splitlines()) == 1, (name, message)
        assert message.startswith(f"[DELTA_REPLAY_{condition}] "), (name, message)
        assert path in message and "Source: REDACTED" not in message, (name, message)
        assert "at io.deltareplay" not in message, (name, message)
        assert error["parameters"] == {
            "message": message.split("] ", 1)[1].rsplit(" SQLSTATE", 1)[0]
        }


def test_sigterm_stops_the_server_and_its_jvm(started: Server) -> None:
    """Last in this module: it stops the server the tests above used."""
    jvms = started.children()
    assert jvms and _listening(started.port)
    started.proc.send_signal(signal.SIGTERM)
    assert started.proc.wait(timeout=90) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 30
    while _listening(started.port) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _listening(started.port)
    assert not [pid for pid in jvms if Path(f"/proc/{pid}").exists()], jvms
    assert started.proc.stderr is not None
    assert "terminated (SIGTERM)" in started.proc.stderr.read()
