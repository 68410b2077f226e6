package io.deltareplay.internal.planning

import io.deltareplay.internal.index.ExecutorIndex
import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.replay.{LogFrames, LogJobErrors, Replay}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.InputPartition

/**
 * One input partition of executor-side planning: bin `bin` of one manifest file. The driver holds
 * one of these per input partition and no file list; the reader expands it into file splits.
 */
private[deltareplay] case class ManifestPartition(
    index: Int,
    manifest: String,
    manifestSize: Long,
    bin: Int,
    files: Long,
    bytes: Long
) extends InputPartition {
  override def preferredLocations(): Array[String] = Array.empty
}

/**
 * Planning that keeps the file list on the executors, for tables whose file list is too big for the
 * driver (`planning.mode = executors`, or `auto` above `planning.executorsMinFiles`).
 *
 * One Spark job over the snapshot index on the executors ([[ExecutorIndex]]: its persisted dataset,
 * or, when it is not kept, the replay that builds it); in the same tasks each live file is pruned
 * by the partition filters, skipped by its statistics ([[DataSkipping]]), cut into splits of at
 * most `maxPartitionBytes`, and the splits are packed into bins (a new bin when the next split
 * would overflow it, each split costing its length plus `openCostInBytes`, as Spark packs file
 * splits). Each task writes its splits, in bin order, to its own manifest Parquet file and returns
 * one summary per bin (files, bytes, rows, DVs): that is all the driver receives, one row per input
 * partition. A reader task reads the rows of its bin (the bin filter is pushed into the Parquet
 * reader; manifests have small pages) and then reads those files as a driver-planned partition
 * would.
 *
 * Manifests live in a fresh directory under `planning.scratchDir`, deleted when the scan object is
 * garbage-collected (a physical plan may run more than once, so not at query end) or at JVM exit.
 */
private[deltareplay] object ExecutorPlanning {

  /**
   * What planning on the executors did: the plan, and the rows the job's log scans read
   * (`scannedRows`) and its tasks (when the index is not persisted, this job is its replay).
   */
  final case class Planned(scan: PlannedScan, scannedRows: Long, tasks: Int)

  /** Plans over the index's entries where they are. */
  def plan(
      spark: SparkSession,
      snapshot: TableSnapshot,
      conf: PlanningSettings,
      index: ExecutorIndex,
      filter: FileFilter,
      owner: AnyRef
  ): Planned = {
    val started = System.nanoTime()
    val segment = snapshot.segment
    val entry = index.entry
    val dir = Scratch.newDir(spark, conf.scratchDir, owner)
    val sc = spark.sparkContext
    val live = sc.longAccumulator("delta-replay live files")
    val pruned = sc.longAccumulator("delta-replay files after partition pruning")
    val binner = new Binner(
      entry,
      filter,
      maxSplit = conf.log.sparkSettings.maxPartitionBytes,
      openCost = conf.log.sparkSettings.openCostInBytes,
      liveCount = live,
      prunedCount = pruned
    )
    val writer = ManifestWriter(spark, conf.log.sparkSettings.sql, dir, Manifests.schema(entry))
    val description = s"delta-replay: plan ${segment.table} v${segment.version} on the executors"
    val ((scanned, summary), tasks) = Replay.inJobGroup(spark, description) {
      val qe = index.frame.queryExecution
      val bins = qe.toRdd.mapPartitions(rows => binner.write(rows, writer))
      val summary = LogJobErrors.forLog(segment)(bins.collect())
      (LogFrames.scannedRows(qe.executedPlan), summary)
    }
    val interned = new java.util.HashMap[String, String]()
    val sorted = summary
      .map(b => b.copy(manifest = interned.computeIfAbsent(b.manifest, m => m)))
      .sortBy(b => (-b.bytes, b.manifest, b.bin))
    val partitions = sorted.zipWithIndex.map { case (b, i) => b.toPartition(i) }
    val rows = if (summary.exists(_.rowsUnknown)) None else Some(summary.map(_.rows).sum)
    val planned = PlannedScan(
      partitions = partitions.map(p => p: InputPartition),
      filesAfterPruning = pruned.sum,
      filesAfterSkipping = summary.map(_.files).sum,
      bytesAfterSkipping = summary.map(_.bytes).sum,
      rowsAfterSkipping = rows,
      hasDeletionVectors = summary.exists(_.hasDv),
      planMillis = (System.nanoTime() - started) / 1000000,
      planning = s"executors (${interned.size} manifests, ${partitions.length} bins)",
      liveFiles = live.sum
    )
    Planned(planned, scanned, tasks)
  }
}

/** One bin of one manifest, as the task that wrote it reports it (O(bins) reach the driver). */
private[deltareplay] case class BinSummary(
    manifest: String,
    manifestSize: Long,
    bin: Int,
    files: Long,
    bytes: Long,
    rows: Long,
    rowsUnknown: Boolean,
    hasDv: Boolean
) {
  def toPartition(index: Int): ManifestPartition =
    ManifestPartition(index, manifest, manifestSize, bin, files, bytes)
}
