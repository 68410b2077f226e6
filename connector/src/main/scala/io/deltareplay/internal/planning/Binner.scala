package io.deltareplay.internal.planning

import io.deltareplay.internal.log.FileEntry
import io.deltareplay.internal.log.DvDescriptor
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.util.LongAccumulator

/**
 * Runs in the tasks of executor-side planning: prunes, skips, splits and bins the files of one
 * partition of [[FileEntry]] rows, streaming (O(1) memory: bins are filled in arrival order, no
 * sort), and writes the surviving splits to the task's manifest ([[Manifests]]).
 */
private[deltareplay] final class Binner(
    entry: FileEntry,
    filter: FileFilter,
    maxSplit: Long,
    openCost: Long,
    liveCount: LongAccumulator,
    prunedCount: LongAccumulator
) extends Serializable {

  /** Entry rows in; the splits that survive written to a manifest; the manifest's bins out. */
  def write(rows: Iterator[InternalRow], manifests: ManifestWriter): Iterator[BinSummary] = {
    val packer = new BinPacker(maxSplit, openCost)
    val bins = scala.collection.mutable.ArrayBuffer.empty[Array[Long]] // files, bytes, rows, flags
    var open: OpenManifest = null
    val out = new GenericInternalRow(manifests.schema.length)
    val partitioned = entry.partitionSchema.nonEmpty
    var live, kept = 0L
    try
      rows.foreach { e =>
        live += 1
        if (filter.keepsPartition(e)) {
          kept += 1
          if (filter.mayMatch(e)) {
            if (open == null) open = manifests.open()
            val size = e.getLong(entry.Ord.Size)
            val fileRows = Rows.of(entry, e)
            val hasDv = !e.isNullAt(entry.Ord.Dv)
            out.update(Manifests.Path, e.getUTF8String(entry.Ord.Path)) // readers resolve it
            out.setLong(Manifests.Size, size)
            out.setLong(Manifests.ModificationTime, e.getLong(entry.Ord.ModificationTime))
            out.update(
              Manifests.Dv,
              if (hasDv) e.getStruct(entry.Ord.Dv, DvDescriptor.Type.length) else null
            )
            if (partitioned) {
              out.update(
                Manifests.Partition,
                e.getStruct(entry.Ord.Partition, entry.partitionSchema.length)
              )
            }
            var start = 0L
            while (start < math.max(size, 1L)) {
              val length = math.min(maxSplit, size - start)
              val bin = packer.add(length)
              if (bin == bins.length) bins += new Array[Long](4)
              val b = bins(bin)
              out.setInt(Manifests.Bin, bin)
              out.setLong(Manifests.Start, start)
              out.setLong(Manifests.Length, length)
              if (start == 0) {
                b(0) += 1
                fileRows match {
                  case Some(n) => b(2) += n
                  case None => b(3) |= 1L
                }
                if (hasDv) b(3) |= 2L
              }
              b(1) += length
              open.write(out)
              start += maxSplit
            }
          }
        }
      }
    catch {
      case e: Throwable =>
        if (open != null) open.abort()
        throw e
    } finally {
      liveCount.add(live)
      prunedCount.add(kept)
    }
    if (open == null) Iterator.empty
    else {
      val manifest = open.uri
      val size = open.finish()
      bins.iterator.zipWithIndex.map { case (b, i) =>
        BinSummary(manifest, size, i, b(0), b(1), b(2), (b(3) & 1L) != 0, (b(3) & 2L) != 0)
      }
    }
  }
}

/**
 * Spark's packing of file splits into input partitions: a split joins the open bin unless its
 * length would overflow `maxSplit`; each split then costs its length plus `openCost`.
 */
private[deltareplay] final class BinPacker(maxSplit: Long, openCost: Long) {
  private var bin = -1
  private var filled = 0L
  private var empty = true

  /** The bin of the next split. */
  def add(length: Long): Int = {
    if (empty || filled + length > maxSplit) {
      bin += 1
      filled = 0L
    }
    empty = false
    filled += length + openCost
    bin
  }
}
