"""``delta-replay bench streams``: many rate-source streams into Delta on a phased schedule.

``run`` starts N baseline streams at R rows/s (each into ``stream_table_001..N``), adds a
3R stream (``stream_table_3x_scale``) for the second phase and a 9R one
(``stream_table_9x_scale``) for the third, then goes back to baseline only, and measures
for every stream and phase target vs achieved rows/s, batch duration, input vs
processing rate and event-to-commit latency, whether the engine falls behind, and
checks at the end that each table holds its stream's ``seq`` 0..n-1 exactly once.
``run --find-max`` searches the highest sustainable total rate instead. ``status``,
``stop``, ``analyze`` and ``drop`` work on the ``--work-dir`` of a run.

In-process use (tests, notebooks)::

    from delta_replay_bench.streams.bench import run_and_report
    result, data = run_and_report(spark, Schedule.for_run(3, 20, time_scale=0.05), root)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .driver import MARKER, STATE_FILE, STOP_FILE, RunData, StreamsRun, say
from .schedule import REFERENCE_RATE, REFERENCE_STREAMS, Schedule

if TYPE_CHECKING:
    from delta_replay.cli_support import CommandRegistry
    from pyspark.sql import SparkSession

SUSTAINED_SHARE = 0.8


def run_and_report(
    spark: SparkSession,
    schedule: Schedule,
    root: str | os.PathLike[str],
    *,
    duration: float | None = None,
    trigger_s: float = 1.0,
    progress_every: float = 5.0,
    out: str | os.PathLike[str] | None = None,
    verify: bool = True,
    quiet: bool = False,
    conf: dict[str, str] | None = None,
    warm_up: bool = True,
    stop_grace_s: float = 10.0,
) -> tuple[dict[str, Any], RunData]:
    """Run ``schedule`` on ``spark`` with tables and checkpoints under ``root``.

    Returns the result document (see :func:`.measure.analyze`) and the raw run;
    writes ``streams.json/.md/.png`` to ``out`` when given. ``conf``: session settings for
    the run, restored afterwards (default ``driver.RUN_CONF``).
    """
    from . import report
    from .measure import analyze

    runner = StreamsRun(
        spark,
        schedule,
        root,
        duration=duration,
        trigger_s=trigger_s,
        progress_every=progress_every,
        quiet=quiet,
        conf=conf,
        warm_up=warm_up,
        stop_grace_s=stop_grace_s,
    )
    data = runner.run()
    if verify:
        runner.verify_tables()
    runner.save()
    result = analyze(data)
    if out is not None:
        for path in report.write(result, data, Path(out)):
            if not quiet:
                say(f"wrote {path}")
    return result, data


def find_max(
    spark: SparkSession,
    streams: int,
    start_total: int,
    root: str | os.PathLike[str],
    *,
    step_s: float = 30.0,
    trigger_s: float = 1.0,
    max_probes: int = 8,
    precision: float = 0.15,
    partitions: int = 1,
) -> dict[str, Any]:
    """Doubling, then bisection, over the total rate of ``streams`` baseline-only streams.

    A rate is sustainable when a ``step_s`` run of it has no failed query, is not behind
    (latency slope, see ``measure``) and commits at least 80% of its target rows.
    """
    from .measure import analyze, search_max

    if streams < 1 or start_total < streams:
        raise ValueError(
            f"--find-max needs --streams >= 1 and a start total >= streams, got {streams},"
            f" {start_total}"
        )
    steps: list[dict[str, Any]] = []

    def probe(total: int) -> bool:
        rate = max(1, total // streams)
        sched = Schedule(
            n_baseline=streams,
            rate=rate,
            t_3x=step_s,
            t_9x=step_s,
            t_back=step_s,
            partitions=partitions,
        )
        step_root = Path(root) / "find-max" / f"step_{len(steps) + 1:02d}_{rate * streams}"
        say(f"find-max step {len(steps) + 1}: {streams} x {rate} = {rate * streams} rows/s")
        runner = StreamsRun(
            spark,
            sched,
            step_root,
            duration=step_s,
            trigger_s=trigger_s,
            progress_every=10.0,
            warm_up=not steps,
        )
        data = runner.run()
        phase = analyze(data)["phases"][0]
        failed = any(r.error for r in data.streams.values())
        ok = (
            not failed
            and not phase["behind"]
            and phase["achieved_rps"] >= SUSTAINED_SHARE * phase["target_rps"]
        )
        steps.append(
            {
                "total_rps": rate * streams,
                "streams": streams,
                "rate": rate,
                "target_rps": phase["target_rps"],
                "achieved_rps": phase["achieved_rps"],
                "batch_ms_p95": phase["batch_ms_p95"],
                "latency_s_p95": phase["latency_s_p95"],
                "latency_slope": phase["latency_slope"],
                "behind": phase["behind"],
                "failed": failed,
                "sustainable": ok,
            }
        )
        say(
            f"find-max step {len(steps)}: achieved {phase['achieved_rps']} rows/s, latency p95"
            f" {phase['latency_s_p95']}s, slope {phase['latency_slope']} s/s ->"
            f" {'sustainable' if ok else 'NOT sustainable'}"
        )
        shutil.rmtree(step_root, ignore_errors=True)
        return ok

    best, _ = search_max(probe, start_total, max_probes=max_probes, precision=precision)
    say(f"find-max: highest sustainable total rate {best} rows/s ({streams} streams)")
    return {
        "streams": streams,
        "step_s": step_s,
        "trigger_s": trigger_s,
        "criterion": f"no failure, not behind, achieved >= {SUSTAINED_SHARE:.0%} of target",
        "max_sustainable_total_rps": best,
        "steps": steps,
    }


# -- command line ------------------------------------------------------------------------


def _schedule(args: argparse.Namespace) -> Schedule:
    return Schedule.for_run(
        args.streams,
        args.rate,
        test_mode=args.test_mode,
        time_scale=args.time_scale,
        partitions=args.partitions,
    )


def _run(args: argparse.Namespace) -> int:
    from delta_replay.cli_support import UsageError
    from delta_replay.session import local_session

    from . import report

    try:
        schedule = _schedule(args)
        if args.duration is not None and args.duration <= 0:
            raise ValueError(f"--duration must be > 0 seconds, got {args.duration}")
        if args.trigger <= 0:
            raise ValueError(f"--trigger-seconds must be > 0 seconds, got {args.trigger}")
    except ValueError as error:
        say(f"error: {error}")
        return 2
    temp = args.root is None
    if not temp:
        given = Path(args.root)
        if given.is_dir() and any(given.iterdir()) and not (given / MARKER).exists():
            raise UsageError(
                f"--work-dir {given} exists, is not empty and is not the --work-dir of a "
                "`bench streams run`: give a new or empty directory (nothing was written)"
            )
    root = Path(args.root or tempfile.mkdtemp(prefix="delta-replay-streams-"))
    out = Path(args.out)
    started = time.monotonic()
    spark = local_session(
        "delta-replay-streams", conf={"spark.sql.shuffle.partitions": str(args.shuffle_partitions)}
    )
    say(f"Spark {spark.version} up in {time.monotonic() - started:.1f}s")
    try:
        if args.find_max:
            step = args.step_seconds
            doc = find_max(
                spark,
                schedule.n_baseline,
                schedule.n_baseline * schedule.rate,
                root,
                step_s=step,
                trigger_s=args.trigger,
                max_probes=args.max_probes,
                partitions=args.partitions,
            )
            out.mkdir(parents=True, exist_ok=True)
            (out / "streams-find-max.json").write_text(json.dumps(doc, indent=1))
            (out / "streams-find-max.md").write_text(report.find_max_markdown(doc))
            print(report.find_max_markdown(doc))
            say(f"wrote {out / 'streams-find-max.json'}")
            return 0 if doc["max_sustainable_total_rps"] else 1
        result, _ = run_and_report(
            spark,
            schedule,
            root,
            duration=args.duration,
            trigger_s=args.trigger,
            progress_every=args.progress_every,
            out=out,
            warm_up=not args.no_warm_up,
            stop_grace_s=args.stop_grace,
        )
        print(report.phase_table(result))
        w = result["whole_run"]
        say(
            f"whole run: target {w['target_rps']} rows/s, in tables {w['achieved_rps']} rows/s;"
            f" first behind: {w['first_behind_phase'] or 'none'}; failed:"
            f" {len(w['failed_streams'])}; exactly once: {w['tables_exactly_once']}"
        )
        ok = not w["failed_streams"] and w["tables_exactly_once"] is not False
        return 0 if ok else 1
    except FileExistsError as error:
        say(f"error: {error}")
        return 2
    finally:
        spark.stop()
        if temp and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif not temp or args.keep:
            say(f"tables and checkpoints kept in {root}")


def _check_root(root: str) -> Path:
    from delta_replay.cli_support import UsageError

    path = Path(root)
    if not (path / MARKER).exists():
        raise UsageError(f"--work-dir {root} is not the --work-dir of a `bench streams run`")
    return path


def _read_state(root: Path) -> dict[str, Any] | None:
    path = root / STATE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _running(state: dict[str, Any] | None) -> bool:
    return bool(state and state["status"] == "running" and _alive(int(state["pid"])))


def _status(args: argparse.Namespace) -> int:
    root = _check_root(args.root)
    state = _read_state(root)
    if state is None:
        say(f"{root}: no state yet")
        return 1
    live = "alive" if _running(state) else "not running"
    say(
        f"{root}: {state['status']} (pid {state['pid']} {live}), t={state['elapsed_s']}s of"
        f" {state['duration_s']:.0f}s, phase {state['phase']}, {len(state['active'])} active,"
        f" failed {state['failed'] or 'none'}, updated {time.time() - state['updated']:.0f}s ago"
    )
    for name in state["active"]:
        say(f"  active {name}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    root = _check_root(args.root)
    if not _running(_read_state(root)):
        say(f"{root}: no run in progress")
        return 0
    (root / STOP_FILE).write_text("stop\n")
    say(f"asked the run in {root} to stop; waiting up to {args.wait:.0f}s")
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if not _running(_read_state(root)):
            say("stopped")
            return 0
        time.sleep(1.0)
    say("still running; check with `status`")
    return 1


def _analyze(args: argparse.Namespace) -> int:
    from delta_replay.session import local_session

    from . import report
    from .driver import load_run, session_conf, verify_tables
    from .measure import analyze

    root = _check_root(args.root)
    data = load_run(root)
    data.root = str(root)
    if not args.no_verify:
        conf = {"spark.sql.shuffle.partitions": "2"}
        spark = local_session("delta-replay-streams-analyze", conf=conf)
        try:
            with session_conf(spark):
                verify_tables(spark, data)
        finally:
            spark.stop()
    result = analyze(data)
    for path in report.write(result, data, Path(args.out or root)):
        say(f"wrote {path}")
    print(report.phase_table(result))
    return 0


def _drop(args: argparse.Namespace) -> int:
    root = _check_root(args.root)
    if _running(_read_state(root)):
        say(f"error: a run is still going on in {root}; `stop` it first")
        return 1
    shutil.rmtree(root)
    say(f"dropped {root} (tables, checkpoints, state)")
    return 0


def register(registry: CommandRegistry) -> None:
    from delta_replay.cli_support import positive_float, positive_int

    parser = registry.add(
        "bench", "streams", "many rate streams into Delta on a phased schedule", _run
    )
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run the phased schedule (or --find-max)")
    run.set_defaults(handler=_run)
    run.add_argument(
        "--streams", type=positive_int, default=REFERENCE_STREAMS, help="baseline streams N"
    )
    run.add_argument(
        "--rate", type=positive_int, default=REFERENCE_RATE, help="rows/s per stream R"
    )
    run.add_argument(
        "--partitions",
        type=positive_int,
        default=1,
        help="partitions of every stream's rate source (numPartitions; the reference uses 8)",
    )
    run.add_argument(
        "--test-mode", action="store_true", help="5 streams, rate reduced by the same factor"
    )
    run.add_argument(
        "--time-scale",
        type=positive_float,
        default=1.0,
        help="multiply the phase times (0.1: 18/36/60 s)",
    )
    run.add_argument(
        "--duration",
        type=positive_float,
        help="run seconds (default: to the end of the schedule's back phase of 3 min)",
    )
    run.add_argument(
        "--trigger-seconds",
        dest="trigger",
        type=positive_float,
        default=1.0,
        help="processing-time trigger of every query, seconds",
    )
    run.add_argument(
        "--progress-every", type=positive_float, default=5.0, help="seconds between lines"
    )
    run.add_argument(
        "--stop-grace",
        type=positive_float,
        default=10.0,
        help="a scheduled stop waits for the running batch, at most this many seconds",
    )
    run.add_argument("--no-warm-up", action="store_true", help="skip the throw-away warm-up stream")
    run.add_argument(
        "--work-dir",
        dest="root",
        metavar="DIR",
        help="tables + checkpoints directory, kept: new or empty (default: a temporary one, "
        "deleted unless --keep)",
    )
    run.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary directory used when --work-dir is not given",
    )
    run.add_argument(
        "--out", metavar="DIR", default=".", help="directory for streams.json/.md/.png"
    )
    run.add_argument(
        "--shuffle-partitions",
        type=positive_int,
        default=2,
        help="spark.sql.shuffle.partitions of the run",
    )
    run.add_argument(
        "--find-max",
        action="store_true",
        help="search the highest sustainable total rate (baseline streams only)",
    )
    run.add_argument(
        "--step-seconds", type=positive_float, default=30.0, help="find-max: seconds a step"
    )
    run.add_argument("--max-probes", type=positive_int, default=8, help="find-max: most steps")
    for name, handler, text in (
        ("status", _status, "state of the run in --work-dir"),
        ("stop", _stop, "stop the run in --work-dir cleanly"),
        ("analyze", _analyze, "recount the tables of --work-dir and write the report again"),
        ("drop", _drop, "delete --work-dir: tables, checkpoints, state"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.set_defaults(handler=handler)
        sub.add_argument(
            "--work-dir",
            dest="root",
            metavar="DIR",
            required=True,
            help="the --work-dir of a `run`",
        )
        if name == "stop":
            sub.add_argument(
                "--wait",
                type=positive_float,
                default=60.0,
                help="seconds to wait for the run to stop",
            )
        if name == "analyze":
            sub.add_argument("--out", metavar="DIR", help="report directory (default: --work-dir)")
            sub.add_argument("--no-verify", action="store_true", help="skip counting the tables")
