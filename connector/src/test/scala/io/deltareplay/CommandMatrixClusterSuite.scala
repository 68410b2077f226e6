package io.deltareplay

import io.deltareplay.test.LocalClusterSparkSession
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[CommandMatrix]] on `local-cluster`: the commands with routing in their own work (MERGE, reads
 * of a table inside a command, streams), with the log replayed in executor JVMs (distributed
 * replay, on a table the session read first). On tables this small `auto` replays on the driver, as
 * on `local[2]`, where [[CommandMatrixSuite]] runs every command in every way.
 */
class CommandMatrixClusterSuite
    extends AnyFunSuite
    with LocalClusterSparkSession
    with CommandMatrix {

  override protected def routedRuns(command: Command): Seq[(String, Boolean)] =
    Seq(("distributed", true))

  registerCommands(commands.filter(_.routedInside))
}
