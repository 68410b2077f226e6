package io.deltareplay.internal

import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.types.StructType

/** The files left after pruning and skipping, split for reading. */
private[deltareplay] case class PlannedScan(
    partitions: Array[InputPartition],
    filesAfterPruning: Long,
    filesAfterSkipping: Long,
    bytesAfterSkipping: Long,
    rowsAfterSkipping: Option[Long],
    hasDeletionVectors: Boolean,
    planMillis: Long,
    planning: String = "driver"
)

/**
 * Partition pruning (exact: the partition filters are evaluated on each file's partition values),
 * then statistics-based skipping, then splits sized by Spark's `maxPartitionBytes` rules.
 */
private[deltareplay] object ScanPlanner {

  /** File splits sized by Spark's `maxPartitionBytes` rules, packed into input partitions. */
  def splits(
      spark: SparkSession,
      snapshot: TableSnapshot,
      files: Seq[LiveFile],
      readPartitionSchema: StructType
  ): Array[DeltaInputPartition] = {
    val meta = snapshot.meta
    val tz = spark.sessionState.conf.sessionLocalTimeZone
    val values = new PartitionValues(
      readPartitionSchema,
      readPartitionSchema.fieldNames.toSeq.map(meta.physicalName),
      tz
    )
    val paths = snapshot.segment.paths
    val conf = spark.sessionState.conf
    val totalBytes = files.iterator.map(_.size + conf.filesOpenCostInBytes).sum
    val bytesPerCore = totalBytes / math.max(1, spark.sparkContext.defaultParallelism)
    val maxSplit =
      math.min(conf.filesMaxPartitionBytes, math.max(conf.filesOpenCostInBytes, bytesPerCore))
    val pieces = files.iterator
      .flatMap { f =>
        val row = values.row(f.partitionValues)
        val path = SparkPath.fromUrlString(paths.absolute(f.path))
        (0L until math.max(f.size, 1L) by maxSplit).iterator.map { start =>
          val length = math.min(maxSplit, f.size - start)
          val split = PartitionedFile(
            row,
            path,
            start,
            length,
            Array.empty,
            f.modificationTime,
            f.size,
            Map.empty
          )
          (split, f.dv)
        }
      }
      .toSeq
      .sortBy(-_._1.length)
    DeltaInputPartition.pack(pieces, maxSplit, conf.filesOpenCostInBytes)
  }

  /** The files whose partition values satisfy `partitionFilters` (exact). */
  def prunePartitions(
      spark: SparkSession,
      snapshot: TableSnapshot,
      files: Array[LiveFile],
      partitionFilters: Seq[Expression]
  ): Array[LiveFile] =
    if (partitionFilters.isEmpty) files
    else {
      val filter =
        PartitionFilter(snapshot, partitionFilters, spark.sessionState.conf.sessionLocalTimeZone)
      files.filter(f => filter.matches(f.partitionValues))
    }

  def plan(
      spark: SparkSession,
      snapshot: TableSnapshot,
      files: Array[LiveFile],
      readPartitionSchema: StructType,
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression],
      skipping: Boolean
  ): PlannedScan = {
    val started = System.nanoTime()

    // Step 1: partition pruning.
    val pruned = prunePartitions(spark, snapshot, files, partitionFilters)

    // Step 2: data skipping on min/max/nullCount.
    val skipped =
      if (!skipping || dataFilters.isEmpty) pruned
      else {
        val stats = SkippingSpec(snapshot, dataFilters, spark.sessionState.conf).build()
        pruned.filter(f => stats.mightMatch(f.stats))
      }

    // Step 3: splits.
    val partitions = splits(spark, snapshot, skipped.toIndexedSeq, readPartitionSchema)
    val rows = skipped.iterator
      .map(f => StatsRows.numRecords(f.stats).map(_ - f.dv.map(_.cardinality).getOrElse(0L)))
      .foldLeft(Option(0L)) { case (acc, r) => for (a <- acc; b <- r) yield a + b }
    PlannedScan(
      partitions = partitions.map(p => p: InputPartition),
      filesAfterPruning = pruned.length,
      filesAfterSkipping = skipped.length,
      bytesAfterSkipping = skipped.iterator.map(_.size).sum,
      rowsAfterSkipping = if (skipped.isEmpty) Some(0L) else rows,
      hasDeletionVectors = skipped.exists(_.dv.isDefined),
      planMillis = (System.nanoTime() - started) / 1000000
    )
  }
}

/** Reads `numRecords` out of a stats JSON without a full parse. */
private[deltareplay] object StatsRows {
  private val NumRecords = """"numRecords"\s*:\s*(\d+)""".r.unanchored
  def numRecords(stats: String): Option[Long] =
    if (stats == null) None
    else
      stats match {
        case NumRecords(n) => Some(n.toLong)
        case _ => None
      }
}
