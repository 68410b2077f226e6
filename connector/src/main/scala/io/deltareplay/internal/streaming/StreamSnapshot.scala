package io.deltareplay.internal.streaming

import io.deltareplay.internal.index.{KeptFile, SnapshotOrder, TableIndex}
import io.deltareplay.internal.log.{FileEntry, TablePaths}
import io.deltareplay.internal.planning.ScanPlanner
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * A stream's initial snapshot: the files of the snapshot index of the start version, in
 * (modificationTime, path) order, numbered 0..size-1, the order and numbers of delta-spark's
 * DeltaSource (so a checkpoint written by either source resumes on the other). Read off the index
 * itself in the order its home keeps ([[SnapshotOrder]]), with no second copy of the file list.
 *
 * Before that, a stream's first micro-batch may need only the first files
 * ([[StreamSnapshot.First]], found in one pass with no index): they are read from that list, and
 * the index is built when a read goes beyond them (on the executors, its slices go on from them).
 */
private[deltareplay] final class StreamSnapshot(
    spark: SparkSession,
    build: () => StreamSnapshot.Built,
    first: Option[StreamSnapshot.First],
    paths: TablePaths,
    readPartitionSchema: StructType,
    storageLevel: StorageLevel,
    sliceFiles: Int
) {
  @volatile private var made: StreamSnapshot.Built = null
  @volatile private var order: SnapshotOrder = null

  /** The index and its order, built at the first read that goes beyond the [[first]] files. */
  private def built: StreamSnapshot.Built = {
    if (made == null) {
      val b = build()
      val keyed = first.fold(Array.empty[(Long, UTF8String, KeptFile)]) { f =>
        f.rows.indices.map(i => (f.rows(i)._1, f.rows(i)._2, firstKept(i))).toArray
      }
      order = b.index.snapshotOrder(
        spark,
        paths,
        ScanPlanner.keeper(b.index.entry, readPartitionSchema),
        sliceFiles,
        storageLevel,
        keyed
      )
      made = b
    }
    made
  }

  /** Files of the snapshot (builds the index). */
  def size: Long = built.size

  private lazy val firstKept: Array[KeptFile] = first.fold(Array.empty[KeptFile]) { f =>
    val k = ScanPlanner.keeper(f.entry, readPartitionSchema)
    f.rows.map(r => k(r._3))
  }

  /** Whether reads are still served by the [[first]] files alone (no index built yet). */
  private def beforeIndex: Boolean = made == null && first.isDefined

  /** Whether the files numbered up to `to` are all among the [[first]] ones (index not built). */
  private def fromFirst(to: Long): Boolean = beforeIndex && to < firstKept.length

  /**
   * Whether the snapshot has a file numbered `i`, answered without building the index when the
   * [[first]] files tell (they are found only for a snapshot with more files than them).
   */
  def hasFile(i: Long): Boolean = synchronized {
    if (beforeIndex) i <= firstKept.length else i < size
  }

  /** How many files a reader asks [[range]] for at a time: never more than a slice. */
  def readChunk: Long = synchronized {
    if (beforeIndex) firstKept.length.toLong
    else {
      built
      order.readChunk
    }
  }

  /** Files numbered in (fromExclusive, toInclusive], in order. */
  def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, KeptFile)] = synchronized {
    val from = math.max(0L, fromExclusive + 1)
    if (fromFirst(toInclusive)) return (from to toInclusive).map(i => i -> firstKept(i.toInt))
    val to = math.min(size - 1, toInclusive)
    if (from > to) Nil else order.range(from, to)
  }

  /** Files and bytes numbered above `after` (-1: not known yet). */
  def remaining(after: Long): (Long, Long) = synchronized {
    // not known before the index is built: a progress report does not build it
    if (beforeIndex) (-1L, -1L)
    else (math.max(0L, size - (after + 1)), order.bytesAfter(after))
  }

  def release(): Unit = synchronized {
    Option(order).foreach(_.release())
    Option(made).foreach(_.release())
  }

  def description: String = synchronized {
    val firstPass = first.fold("")(f => s"; first ${f.rows.length} files found ${f.how}")
    if (made == null) s"first ${firstKept.length} files known, index not built yet$firstPass"
    else s"$size files, ${order.describe(made.replayed, firstPass)}"
  }
}

private[deltareplay] object StreamSnapshot {

  /**
   * The snapshot's index (`owned` when no cache holds it: released with the snapshot) and how it
   * was replayed.
   */
  final case class Built(index: TableIndex, replayed: String, owned: Boolean) {
    val size: Long = index.liveFiles()
    def release(): Unit = if (owned) index.release()
  }

  /** The first files of a snapshot (keys and entry rows of `entry`, in order), found `how`. */
  final case class First(
      rows: Array[(Long, UTF8String, InternalRow)],
      entry: FileEntry,
      how: String
  )
}
