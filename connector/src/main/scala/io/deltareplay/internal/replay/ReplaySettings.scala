package io.deltareplay.internal.replay

import io.deltareplay.{DeltaReplayOptions => O}
import io.deltareplay.DeltaReplayOptions.Named
import io.deltareplay.internal.log.LogSettings

/** How the replay runs: on the driver, as a Spark job, or chosen by log size. */
private[deltareplay] sealed trait ReplayMode extends Named
private[deltareplay] object ReplayMode {
  case object Auto extends ReplayMode { val name = "auto" }
  case object Local extends ReplayMode { val name = "local" }
  case object Distributed extends ReplayMode { val name = "distributed" }

  def parse(value: String): ReplayMode =
    Named.parse(O.ReplayModeKey, value, Seq(Auto, Local, Distributed))
}

/**
 * What the replay room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.planning.ReadConf]]; each field is the setting of the same name in
 * [[io.deltareplay.DeltaReplayOptions.Settings]]), with the log's settings it reads the log by.
 */
private[deltareplay] final case class ReplaySettings(
    replayMode: ReplayMode,
    distributedThresholdBytes: Long,
    replayPartitions: Int,
    tailFastPathMaxBytes: Long,
    tailBroadcastMaxBytes: Long,
    checkpointTwoPass: Boolean,
    checkpointRowSplits: Boolean,
    stateMaxTailBytes: Long,
    prefetchTail: Boolean,
    log: LogSettings
)
