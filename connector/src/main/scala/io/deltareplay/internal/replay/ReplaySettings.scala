package io.deltareplay.internal.replay

import io.deltareplay.{DeltaReplayOptions => O}
import io.deltareplay.DeltaReplayOptions.Named
import io.deltareplay.internal.log.{LogSegment, LogSettings}

/** How the replay runs: on the driver, as a Spark job, or chosen by log size. */
private[deltareplay] sealed trait ReplayMode extends Named
private[deltareplay] object ReplayMode {
  case object Auto extends ReplayMode { val name = "auto" }
  case object Local extends ReplayMode { val name = "local" }
  case object Distributed extends ReplayMode { val name = "distributed" }

  /** Every choice (the settings table's `OneOf` of this setting is made of their names). */
  val all: Seq[ReplayMode] = Seq(Auto, Local, Distributed)

  def parse(value: String): ReplayMode = Named.parse(O.ReplayModeKey, value, all)
}

/**
 * What the replay room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.scan.ReadConf]]; each field is the setting of the same name in
 * [[io.deltareplay.DeltaReplayOptions.Settings]]), with the log's settings it reads the log by.
 */
private[deltareplay] final case class ReplaySettings(
    replayMode: ReplayMode,
    distributedThresholdBytes: Long,
    replayPartitions: Int,
    tailBroadcastMaxBytes: Long,
    checkpointTwoPass: Boolean,
    checkpointRowSplits: Boolean,
    stateMaxTailBytes: Long,
    prefetchTail: Boolean,
    log: LogSettings
) {

  /** Commits after a checkpoint up to this many bytes are reconciled on the driver (the log's). */
  def tailFastPathMaxBytes: Long = log.tailFastPathMaxBytes

  /**
   * Whether a replay of `segment` takes the fast path: a checkpoint and a tail of at most
   * `tailFastPathMaxBytes` reconciled on the driver.
   */
  def fastPath(segment: LogSegment): Boolean = segment.tailWithin(tailFastPathMaxBytes)
}
