package io.deltareplay

import io.deltareplay.test.LocalClusterSparkSession
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[CommandMatrix]] on `local-cluster`: issue 60's seven MERGE cases and the commands that read a
 * table through routing in their own work (a table read and written by one command, a stream), with
 * the log replayed in executor JVMs (distributed replay, on a table the session read first). On
 * tables this small `auto` replays on the driver, as on `local[2]`, where [[CommandMatrixSuite]]
 * runs every command in every way.
 */
class CommandMatrixClusterSuite
    extends AnyFunSuite
    with LocalClusterSparkSession
    with CommandMatrix {

  override protected def routedRuns(command: Command): Seq[(String, Boolean)] =
    Seq(("distributed", true))

  registerCommands(commands.filter(c => c.name.contains("(case ") || c.readsThrough))
}
