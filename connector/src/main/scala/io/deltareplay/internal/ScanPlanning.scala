package io.deltareplay.internal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

/** A scan's planning result: its input partitions and what the replay behind it did. */
private[deltareplay] final case class PlanResult(planned: PlannedScan, replay: ReplaySummary)

/**
 * Where a scan's file list is pruned, skipped and split: on the driver over a replayed list
 * ([[DriverScanPlanning]]) or on the executors where the list stays ([[ExecutorScanPlanning]]).
 * [[ReadPolicy.planner]] picks one.
 */
private[deltareplay] sealed trait ScanPlanning {
  def onExecutors: Boolean

  /** Plans with `filter`; `owner` keeps any scratch files alive while it is reachable. */
  def plan(
      filter: FileFilter,
      entry: FileEntry,
      readPartitionSchema: StructType,
      owner: AnyRef
  ): PlanResult
}

/** Planning over a file list on the driver (replayed once, on first use). */
private[deltareplay] final class DriverScanPlanning(
    spark: SparkSession,
    snapshot: TableSnapshot,
    replayNow: () => ReplayResult
) extends ScanPlanning {
  lazy val replay: ReplayResult = replayNow()

  override def onExecutors: Boolean = false

  override def plan(
      filter: FileFilter,
      entry: FileEntry,
      readPartitionSchema: StructType,
      owner: AnyRef
  ): PlanResult = {
    val r = replay
    val planned = ScanPlanner.plan(spark, snapshot, r.files, entry, filter, readPartitionSchema)
    PlanResult(
      planned,
      ReplaySummary(r.mode, r.actionsReplayed, r.files.length, r.millis, r.replayTasks)
    )
  }
}

/** Planning in the distributed replay's tasks; the file list never reaches the driver. */
private[deltareplay] final class ExecutorScanPlanning(policy: ReadPolicy) extends ScanPlanning {
  override def onExecutors: Boolean = true

  override def plan(
      filter: FileFilter,
      entry: FileEntry,
      readPartitionSchema: StructType,
      owner: AnyRef
  ): PlanResult = {
    val (planned, replay) =
      ExecutorPlanning.plan(policy.spark, policy.snapshot, policy.conf, entry, filter, owner)
    PlanResult(planned, replay)
  }
}
