"""The perf-test harness: a JSON plan, one fresh process per timed run, a timer table, a report.

``delta-replay bench mor --plan PLAN.json --out DIR``: prepares the datasets (in this
process), then starts ``python -m delta_replay_bench.mor.runner`` once per run
(fresh JVM each time, nothing cached across runs), each appending a row to the timer
Delta table ``<work>/timer``, and finally writes the summary, charts and
recommendation (``report``) to DIR.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .plan import Plan, expand

TINY = Plan(
    name="mor-tiny",
    base_rows=2000,
    change_rows=(100,),
    batches=2,
    files=2,
    runs=1,
    predicate="id BETWEEN 100 AND 199",
    remat_modes=("overwrite", "merge"),  # replace_where: tests/test_mor_remat.py
    run_timeout_seconds=600,
)


def run_plan(
    plan: Plan,
    work: Path,
    timer: str,
    *,
    log: Callable[[str], None] = print,
    python: str = sys.executable,
) -> list[dict[str, Any]]:
    """Run every timed run of ``plan`` in its own process; the timer rows they printed."""
    specs = expand(plan)
    (work / "specs").mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for i, spec in enumerate(specs, start=1):
        doc = {"plan": plan.to_dict(), "spec": asdict(spec), "work": str(work), "timer": timer}
        spec_file = work / "specs" / f"{i:04d}.json"
        spec_file.write_text(json.dumps(doc))
        cmd = [python, "-m", "delta_replay_bench.mor.runner", str(spec_file)]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=plan.run_timeout_seconds, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(
                f"run {spec.label} took over {plan.run_timeout_seconds}s: raise "
                "run_timeout_seconds in the plan or use smaller data"
            ) from exc
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"run {spec.label} failed with exit {proc.returncode}:\n{tail}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        fresh = row.get("freshness_seconds")
        extra = f", visible after {fresh:.2f}s" if fresh is not None else ""
        log(
            f"[bench mor] {i}/{len(specs)} {spec.label}: {row['seconds']:.3f}s{extra} "
            f"(load {row['load_avg']}, {time.monotonic() - started:.0f}s elapsed)"
        )
    return rows


def bench(args: Any) -> int:
    import tempfile

    from delta_replay.cli_support import UsageError, claim_work_dir
    from delta_replay.session import local_session

    from .prepare import prepare
    from .report import report

    if (args.skip_prepare or args.report_only) and not args.work:
        raise UsageError("--skip-prepare and --report-only need the --work-dir of an earlier run")
    if args.work:
        claim_work_dir(args.work)
    try:
        plan = TINY if args.tiny else Plan.load(args.plan) if args.plan else Plan()
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"--plan {args.plan}: not a test plan: {error}") from error
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="delta-replay-mor-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        timer = str(work / "timer")
        print(
            f"[bench mor] plan {plan.name}: {len(expand(plan))} runs, work dir {work}", flush=True
        )
        (out / "plan.json").write_text(json.dumps(plan.to_dict(), indent=2))
        spark = local_session(
            "mor-bench-prepare", conf=plan.spark_conf, driver_memory=plan.driver_memory
        )
        try:
            if not (args.skip_prepare or args.report_only):
                info = prepare(spark, plan, work)
                (out / "datasets.json").write_text(json.dumps(info, indent=2, default=str))
            if not args.report_only:
                run_plan(plan, work, timer, log=lambda m: print(m, flush=True))
            doc = report(spark, timer, out, plan.remat_every_batches)
        finally:
            spark.stop()
    for rec in doc["recommendation"]:
        print(f"[bench mor] recommendation: {json.dumps(rec)}", flush=True)
    print(f"[bench mor] wrote {out}/summary.md, summary.json, timings.csv, {doc['charts']}")
    return 0


__all__ = ["TINY", "bench", "run_plan"]
