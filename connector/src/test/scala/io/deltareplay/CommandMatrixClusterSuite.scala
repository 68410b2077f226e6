package io.deltareplay

import io.deltareplay.test.LocalClusterSparkSession
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[CommandMatrix]] on `local-cluster`: MERGE with schema evolution by conf (issue 60's case 1, and
 * case 3 on a column-mapped table), by the DeltaTable API (case 4) and from a stream's
 * `foreachBatch` (case 6), and a MERGE from a Delta table read through routing, with the log
 * replayed in executor JVMs (distributed replay, on a table the session read before each command).
 * On tables this small `auto` replays on the driver, as on `local[2]`, where [[CommandMatrixSuite]]
 * runs every case (a run on executors of each costs four times as much).
 */
class CommandMatrixClusterSuite
    extends AnyFunSuite
    with LocalClusterSparkSession
    with CommandMatrix {

  override protected def routedRuns(c: Case): Seq[(String, CommandMatrix.Reads)] =
    Seq(("distributed", CommandMatrix.Reads.Always))

  private val onExecutors =
    Seq("(case 1)", "(case 3)", "(case 4)", "(case 6)", "from a Delta table")

  registerCases(cases.filter(c => c.merge && onExecutors.exists(c.name.contains)))
}
