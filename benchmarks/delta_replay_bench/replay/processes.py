"""The replay benchmark's fresh processes: a table generated in its own process, a measurement in
its own Python process (``worker``), so that no reader's JVM state reaches another's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def generate_table(root: Path, extra: list[str], driver_memory: str, timeout_s: float) -> dict:
    """Generates (or reuses) one table in its own process; returns its manifest."""
    cmd = [sys.executable, "-m", "delta_replay_bench.synth", f"--root={root}", *extra]
    cmd.append(f"--driver-memory={driver_memory}")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    found: dict | None = None
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("MANIFEST "):
                found = json.loads(line.removeprefix("MANIFEST "))
            else:
                print(line, end="", flush=True)
        code = proc.wait(timeout=timeout_s)
    except BaseException:  # a timeout, Ctrl-C or SIGTERM: the generator's JVM goes too
        proc.kill()
        proc.wait()
        raise
    if code != 0 or found is None:
        raise RuntimeError(f"table generation failed ({' '.join(cmd)}): see its output above")
    return found


def run_job(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One measurement in a fresh Python process; errors, OOM and timeouts come back as results."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        job = {**job, "launched_at": time.time()}
        json.dump(job, f)
    cmd = [sys.executable, "-m", "delta_replay_bench.replay.worker", f.name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f}s"}
    finally:
        os.unlink(f.name)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return _with_jvm_failure(dict(json.loads(line.removeprefix("RESULT "))), proc.stderr)
    lines = [x for x in proc.stderr.strip().splitlines() if "Error" in x or "Exception" in x]
    tail = (lines or proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail[:400]}"}


def _with_jvm_failure(result: dict[str, Any], stderr: str) -> dict[str, Any]:
    """A cell whose JVM died under it (Python sees only a refused connection) names why."""
    error = result.get("error")
    if not isinstance(error, str) or "OutOfMemoryError" in error:
        return result
    lines = stderr.strip().splitlines()
    oom = next((x.strip() for x in lines if "OutOfMemoryError" in x), None)
    died = oom or next((x.strip() for x in lines if "SparkUncaughtExceptionHandler" in x), None)
    if died:
        result["error"] = f"{error} (the JVM: {died[:300]})"
    return result
