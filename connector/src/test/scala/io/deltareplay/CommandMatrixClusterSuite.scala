package io.deltareplay

import io.deltareplay.test.LocalClusterSparkSession
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[CommandMatrix]] on `local-cluster`: MERGE with schema evolution on a column-mapped table (issue
 * 60's case 3: physical names through executor JVMs) and from a stream's `foreachBatch` (case 6,
 * the seed pattern), with the log replayed in executor JVMs (distributed replay, on a table the
 * session read before each command). On tables this small `auto` replays on the driver, as on
 * `local[2]`, where [[CommandMatrixSuite]] runs every case in both replay modes; here each case
 * costs about four times as much, so the two that add what separate JVMs can break (serialized
 * column-mapping metadata, a stream's batches) stand for the others (cases 1 and 4 and the MERGE
 * from a Delta table ran here too, 190 s of the cluster lane, and never differed from local[2]).
 */
class CommandMatrixClusterSuite
    extends AnyFunSuite
    with LocalClusterSparkSession
    with CommandMatrixCases {

  override protected def routedRuns(c: Case): Seq[(String, CommandMatrix.Reads)] =
    Seq(("distributed", CommandMatrix.Reads.Always))

  private val onExecutors = Seq("(case 3)", "(case 6)")

  registerCases(cases.filter(c => c.merge && onExecutors.exists(c.name.contains)))
}
