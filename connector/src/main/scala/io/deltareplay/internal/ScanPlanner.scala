package io.deltareplay.internal

import scala.collection.mutable

import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
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
 * Planning on the driver: each live file becomes a [[FileEntry]] (typed partition values, parsed
 * statistics), partition pruning and data skipping ([[FileFilter]]) keep some, and the kept files
 * are cut into splits sized by Spark's `maxPartitionBytes` rules.
 */
private[deltareplay] object ScanPlanner {

  def plan(
      spark: SparkSession,
      snapshot: TableSnapshot,
      files: Array[LiveFile],
      entry: FileEntry,
      filter: FileFilter,
      readPartitionSchema: StructType
  ): PlannedScan = {
    val started = System.nanoTime()
    val toEntry = entry.projector()
    val kept = mutable.ArrayBuffer.empty[InternalRow]
    var pruned = 0L
    files.foreach { f =>
      val e = toEntry(f)
      if (filter.keepsPartition(e)) {
        pruned += 1
        if (filter.mayMatch(e)) kept += e
      }
    }
    val partitions = splits(spark, snapshot, entry, kept.toSeq, readPartitionSchema)
    val rows = kept.iterator
      .map(e => Rows.of(entry, e))
      .foldLeft(Option(0L)) { case (acc, r) => for (a <- acc; b <- r) yield a + b }
    PlannedScan(
      partitions = partitions.map(p => p: InputPartition),
      filesAfterPruning = pruned,
      filesAfterSkipping = kept.length,
      bytesAfterSkipping = kept.iterator.map(_.getLong(entry.Ord.Size)).sum,
      rowsAfterSkipping = rows,
      hasDeletionVectors = kept.exists(e => !e.isNullAt(entry.Ord.Dv)),
      planMillis = (System.nanoTime() - started) / 1000000
    )
  }

  /** File splits of `entries` sized by Spark's `maxPartitionBytes` rules, packed as Spark packs. */
  def splits(
      spark: SparkSession,
      snapshot: TableSnapshot,
      entry: FileEntry,
      entries: Seq[InternalRow],
      readPartitionSchema: StructType
  ): Array[DeltaInputPartition] = {
    val paths = snapshot.segment.paths
    val partitionRow = entry.partitionRowReader(readPartitionSchema)
    val rowsByValues = new java.util.HashMap[InternalRow, InternalRow]()
    val conf = spark.sessionState.conf
    val totalBytes = entries.iterator.map(_.getLong(entry.Ord.Size) + conf.filesOpenCostInBytes).sum
    val bytesPerCore = totalBytes / math.max(1, spark.sparkContext.defaultParallelism)
    val maxSplit =
      math.min(conf.filesMaxPartitionBytes, math.max(conf.filesOpenCostInBytes, bytesPerCore))
    val pieces = entries.iterator
      .flatMap { e =>
        val values = partitionRow(e)
        val row = Option(rowsByValues.putIfAbsent(values, values)).getOrElse(values)
        val path = SparkPath.fromUrlString(paths.absolute(e.getUTF8String(entry.Ord.Path).toString))
        val size = e.getLong(entry.Ord.Size)
        val modified = e.getLong(entry.Ord.ModificationTime)
        val dv = DvDescriptor.fromInternalRow(e, entry.Ord.Dv)
        (0L until math.max(size, 1L) by maxSplit).iterator.map { start =>
          val length = math.min(maxSplit, size - start)
          (PartitionedFile(row, path, start, length, Array.empty, modified, size, Map.empty), dv)
        }
      }
      .toSeq
      .sortBy(-_._1.length)
    DeltaInputPartition.pack(pieces, maxSplit, conf.filesOpenCostInBytes)
  }

  /** The splits of live files (the streaming source's micro-batches). */
  def splitsOf(
      spark: SparkSession,
      snapshot: TableSnapshot,
      files: Seq[LiveFile],
      readPartitionSchema: StructType
  ): Array[DeltaInputPartition] = {
    val entry = FileEntry(snapshot.meta, spark.sessionState.conf.sessionLocalTimeZone)
    val toEntry = entry.projector()
    splits(spark, snapshot, entry, files.map(toEntry), readPartitionSchema)
  }
}

/** Rows of a file as its statistics count them, net of its deletion vector. */
private[deltareplay] object Rows {
  def of(entry: FileEntry, e: InternalRow): Option[Long] = {
    val stats = e.getStruct(entry.Ord.Stats, entry.statsSchema.length)
    val n = entry.statsSchema.fieldIndex(FileEntry.NumRecords)
    if (stats == null || stats.isNullAt(n)) None
    else Some(stats.getLong(n) - DvDescriptor.cardinalityOf(e, entry.Ord.Dv))
  }
}
