package io.deltareplay.internal.planning

import io.deltareplay.{DeltaReplayOptions => O}
import io.deltareplay.DeltaReplayOptions.Named
import io.deltareplay.internal.log.LogSettings
import io.deltareplay.internal.replay.{ReplayMode, ReplaySettings}
import org.apache.spark.storage.StorageLevel

/** Where a batch scan's file list is pruned, skipped and split (see `planning.mode`). */
private[deltareplay] sealed trait PlanningMode extends Named
private[deltareplay] object PlanningMode {
  case object Auto extends PlanningMode { val name = "auto" }
  case object Driver extends PlanningMode { val name = "driver" }
  case object Executors extends PlanningMode { val name = "executors" }

  /** Every choice (the settings table's `OneOf` of this setting is made of their names). */
  val all: Seq[PlanningMode] = Seq(Auto, Driver, Executors)

  def parse(value: String): PlanningMode = Named.parse(O.PlanningModeKey, value, all)
}

/**
 * What the planning room takes of a read's settings, resolved once at the load (by
 * [[io.deltareplay.internal.scan.ReadConf]]; each field is the setting of the same name in
 * [[io.deltareplay.DeltaReplayOptions.Settings]], `stateCacheBudgetBytes` and `executorsMinFiles`
 * with their heap-derived defaults applied), with the replay's settings its indexes are built by.
 */
private[deltareplay] final case class PlanningSettings(
    replay: ReplaySettings,
    stateCache: Boolean,
    filterCheckpoint: Boolean,
    indexInBackground: Boolean,
    stateCacheBudgetBytes: Long,
    indexStorageLevel: StorageLevel,
    planningMode: PlanningMode,
    executorsMinFiles: Long,
    scratchDir: String
) {

  /** The log's settings (the replay's). */
  def log: LogSettings = replay.log

  def replayMode: ReplayMode = replay.replayMode
}
