package io.deltareplay.internal.planning

import scala.collection.mutable

import io.deltareplay.internal.index.{DriverIndex, KeptFile}
import io.deltareplay.internal.log.{DvDescriptor, FileEntry, SparkSettings, TableSnapshot}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.paths.SparkPath
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
    planning: String = "driver",
    liveFiles: Long = -1
)

/**
 * Planning on the driver over the snapshot index ([[DriverIndex]]): partition pruning and data
 * skipping ([[FileFilter]]) run over the index rows, and the kept files are cut into splits sized
 * by Spark's `maxPartitionBytes` rules.
 */
private[deltareplay] object ScanPlanner {

  def plan(
      settings: SparkSettings,
      snapshot: TableSnapshot,
      index: DriverIndex,
      filter: FileFilter,
      readPartitionSchema: StructType
  ): PlannedScan = {
    val started = System.nanoTime()
    val entry = index.entry
    val keep = keeper(entry, readPartitionSchema)
    val kept = mutable.ArrayBuffer.empty[KeptFile]
    var pruned = 0L
    // Column-wise first passes leave out rows the predicates would refuse; the compiled
    // predicates then run only on the rows left in.
    index.foreachChunk { (batch, live) =>
      val skip = filter.skipCandidates(batch)
      if (filter.prunes) {
        filter.pruneCandidates(batch).foreach(live.and)
        foreachSet(live) { i =>
          val e = batch.getRow(i)
          if (filter.keepsPartition(e)) {
            pruned += 1
            if (skip.forall(_.get(i)) && filter.mayMatch(e)) kept += keep(e)
          }
        }
      } else {
        pruned += live.cardinality()
        skip.foreach(live.and)
        foreachSet(live) { i =>
          val e = batch.getRow(i)
          if (filter.mayMatch(e)) kept += keep(e)
        }
      }
    }
    val partitions = splits(settings, snapshot, kept.toSeq)
    // sums over the kept files in plain loops: a million files box nothing
    var bytes, rows = 0L
    var rowsKnown = true
    kept.foreach { f =>
      bytes += f.size
      f.rows match {
        case Some(n) => rows += n
        case None => rowsKnown = false
      }
    }
    PlannedScan(
      partitions = partitions.map(p => p: InputPartition),
      filesAfterPruning = pruned,
      filesAfterSkipping = kept.length,
      bytesAfterSkipping = bytes,
      rowsAfterSkipping = if (rowsKnown) Some(rows) else None,
      hasDeletionVectors = kept.exists(_.dv.isDefined),
      planMillis = (System.nanoTime() - started) / 1000000
    )
  }

  private def foreachSet(rows: java.util.BitSet)(f: Int => Unit): Unit = {
    var i = rows.nextSetBit(0)
    while (i >= 0) {
      f(i)
      i = rows.nextSetBit(i + 1)
    }
  }

  /** Takes what a split needs out of an entry row; equal partition rows are shared. */
  def keeper(entry: FileEntry, readPartitionSchema: StructType): InternalRow => KeptFile = {
    val partitionRow = entry.partitionRowReader(readPartitionSchema)
    val shared = new java.util.HashMap[InternalRow, InternalRow]()
    (e: InternalRow) => {
      val values = partitionRow(e)
      KeptFile(
        e.getUTF8String(entry.Ord.Path).toString,
        e.getLong(entry.Ord.Size),
        e.getLong(entry.Ord.ModificationTime),
        DvDescriptor.fromInternalRow(e, entry.Ord.Dv),
        Option(shared.putIfAbsent(values, values)).getOrElse(values),
        Rows.of(entry, e)
      )
    }
  }

  /** File splits of `files` sized by Spark's `maxPartitionBytes` rules, packed as Spark packs. */
  def splits(
      settings: SparkSettings,
      snapshot: TableSnapshot,
      files: Seq[KeptFile]
  ): Array[DeltaInputPartition] = {
    val paths = snapshot.segment.paths
    // Spark's own rule (maxPartitionBytes, openCostInBytes, files.minPartitionNum or the leaf
    // node parallelism), so that a scan is split as Spark's file scan splits it.
    val maxSplit =
      settings.maxSplitBytes(files.iterator.map(_.size + settings.openCostInBytes).sum)
    val pieces = mutable.ArrayBuffer.empty[(PartitionedFile, Option[DvDescriptor])]
    pieces.sizeHint(files.size)
    files.foreach { f =>
      val path = SparkPath.fromUrlString(paths.absolute(f.path))
      var start = 0L
      // at least one split, for an empty file too
      while (start == 0L || start < f.size) {
        val length = math.min(maxSplit, f.size - start)
        val split = PartitionedFile(
          f.partition,
          path,
          start,
          length,
          Array.empty,
          f.modificationTime,
          f.size,
          Map.empty
        )
        pieces += ((split, f.dv))
        start += maxSplit
      }
    }
    // largest first, equal lengths in file order (a stable sort, as Spark's packing sorts)
    val sorted = pieces.toArray
    java.util.Arrays.sort(
      sorted,
      (a: (PartitionedFile, Option[DvDescriptor]), b: (PartitionedFile, Option[DvDescriptor])) =>
        java.lang.Long.compare(b._1.length, a._1.length)
    )
    DeltaInputPartition.pack(
      scala.collection.immutable.ArraySeq.unsafeWrapArray(sorted),
      maxSplit,
      settings.openCostInBytes
    )
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
