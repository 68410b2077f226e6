package io.deltareplay.internal.index

import scala.collection.mutable

import io.deltareplay.internal.log.{FileAction, TablePaths}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * A stream's initial snapshot read off the snapshot index: its files in DeltaSource's order
 * ([[SnapshotKeys]]), numbered 0..n-1, read by number; each home of the index makes its own
 * ([[TableIndex.snapshotOrder]]).
 *
 *   - On the driver ([[DriverSnapshotOrder]]): the live rows are ordered by modification time in
 *     one primitive sort, and each run of equal times by path only when a read reaches it (20 bytes
 *     a file).
 *   - On the executors ([[SlicedSnapshotOrder]]): no total order is built. A read takes its files
 *     from a slice: the next `sliceFiles` files after the previous slice's last key, found in one
 *     pass over the persisted index (each task keeps its smallest keys above the bound, the driver
 *     merges). The first micro-batch so waits for one pass, not for a sort of every file, and the
 *     driver holds at most three slices. A jump to another place (a restart in the middle of the
 *     snapshot) numbers the files once with a distributed range sort, as DeltaSource does.
 */
private[deltareplay] trait SnapshotOrder {

  /** How many files a reader asks [[range]] for at a time. */
  def readChunk: Long

  /** The files numbered `from` to `to` (both in the snapshot), in order. */
  def range(from: Long, to: Long): Seq[(Long, KeptFile)]

  /** Bytes of the files numbered above `after` (-1: not known without numbering every file). */
  def bytesAfter(after: Long): Long

  /** Where the order is kept and what it took, with how the index was got (`replayed`). */
  def describe(replayed: String, firstPass: String): String

  def release(): Unit
}

/** A driver index's files in snapshot order ([[DriverOrder]], sorted as far as reads asked). */
private[index] final class DriverSnapshotOrder(
    index: DriverIndex,
    paths: TablePaths,
    keep: InternalRow => KeptFile
) extends SnapshotOrder {
  private var built: DriverOrder = null
  private def order: DriverOrder = {
    if (built == null) {
      built = DriverOrder(index, SnapshotKeys.pathKey(paths, index.entry.Ord.Path, _))
    }
    built
  }

  def readChunk: Long = 10000L

  def range(from: Long, to: Long): Seq[(Long, KeptFile)] = {
    order.sortThrough(to.toInt)
    (from to to).map(i => i -> keep(index.row(order.position(i.toInt))))
  }

  def bytesAfter(after: Long): Long = order.bytesAfter(after)

  def describe(replayed: String, firstPass: String): String = {
    val ordered = Option(built).fold("")(o => s"; ${o.describe}")
    s"ordered on the driver (${index.describe}; index $replayed$ordered$firstPass)"
  }

  def release(): Unit = ()
}

/**
 * An executor index's files read in slices of `sliceFiles` (see [[SnapshotOrder]]); `first`, the
 * files a first micro-batch took before the index was built, is the first slice.
 */
private[index] final class SlicedSnapshotOrder(
    spark: SparkSession,
    index: ExecutorIndex,
    paths: TablePaths,
    keep: InternalRow => KeptFile,
    sliceFiles: Int,
    storageLevel: StorageLevel,
    first: Array[(Long, UTF8String, KeptFile)]
) extends SnapshotOrder {

  /** A slice: the files numbered `first` .. `first + files.length - 1`, with their keys. */
  private final case class Slice(first: Long, files: Array[(Long, UTF8String, KeptFile)]) {
    def end: Long = first + files.length
    def bytes: Long = files.iterator.map(_._3.size).sum
  }

  /** The last slices read (a micro-batch may span two; its plan reads them again). */
  private var slices: List[Slice] = if (first.isEmpty) Nil else List(Slice(0L, first))
  private var bytesBeforeLast = 0L // bytes of the files numbered below the newest slice
  private var numbered: Option[Numbered] = None

  def readChunk: Long = math.max(1L, math.min(10000L, sliceFiles.toLong))

  /** The slice after the newest one (the first slice when there is none yet). */
  private def nextSlice(): Option[Slice] = {
    val newest = slices.headOption
    val after = newest.flatMap(_.files.lastOption).map(f => (f._1, f._2))
    val found = SnapshotKeys.smallest(index, paths, after, sliceFiles)
    if (found.isEmpty) None
    else {
      val slice = Slice(newest.fold(0L)(_.end), found.map { case (t, p, row) => (t, p, keep(row)) })
      bytesBeforeLast += newest.fold(0L)(_.bytes)
      slices = (slice :: slices).take(3)
      Some(slice)
    }
  }

  /** The file numbered `i` from the slices, reading the next one when `i` is right after them. */
  private def fromSlices(i: Long): Option[KeptFile] =
    slices.find(s => i >= s.first && i < s.end) match {
      case Some(s) => Some(s.files((i - s.first).toInt)._3)
      case None if i == slices.headOption.fold(0L)(_.end) =>
        nextSlice().map(s => s.files((i - s.first).toInt)._3)
      case None => None
    }

  def range(from: Long, to: Long): Seq[(Long, KeptFile)] = {
    val out = mutable.ArrayBuffer.empty[(Long, KeptFile)]
    var i = from
    var jumped = numbered.isDefined
    while (i <= to && !jumped)
      fromSlices(i) match {
        case Some(f) =>
          out += i -> f
          i += 1
        case None => jumped = true
      }
    // a jump (a restart in the middle): number every file once and read from that
    if (i <= to) out ++= numberedRange(i - 1, to)
    out.toSeq
  }

  private def numberedRange(fromExclusive: Long, to: Long): Seq[(Long, KeptFile)] = {
    val n = numbered.getOrElse {
      val built = Numbered(spark, index, paths, storageLevel)
      numbered = Some(built)
      built
    }
    n.range(fromExclusive, to).map { case (i, row) => i -> keep(row) }
  }

  def bytesAfter(after: Long): Long = {
    val newest = slices.headOption
    numbered match {
      case Some(n) => n.bytesAfter(after)
      case None if newest.exists(s => after + 1 >= s.first && after + 1 <= s.end) =>
        val s = newest.get
        totalBytes - bytesBeforeLast -
          s.files.take((after + 1 - s.first).toInt).iterator.map(_._3.size).sum
      case None if after < 0 => totalBytes
      case None => -1L // not known without numbering every file
    }
  }

  private lazy val totalBytes: Long =
    index.frame.agg(org.apache.spark.sql.functions.sum(col("size"))).head().getLong(0)

  def describe(replayed: String, firstPass: String): String =
    s"read in slices of $sliceFiles (${index.describe}$firstPass)" +
      numbered.fold("")(_ => ", numbered by a range sort after a jump")

  def release(): Unit = numbered.foreach(_.release())
}

/**
 * A driver index's live files in (modificationTime, path) order, built for the first micro-batch in
 * one primitive sort: positions sorted by modification time (packed with the time into one long
 * when the times span few enough bits, else compared), then each run of equal times sorted by path
 * key only when a read reaches it ([[sortThrough]]), so the first batch of a table whose files
 * share a few commit times sorts one run, not every path.
 */
private[index] final class DriverOrder private (
    builtMillis: Long,
    positions: Array[Int],
    times: Array[Long],
    sizes: Array[Long],
    pathKey: InternalRow => UTF8String,
    index: DriverIndex
) {
  private var sorted = 0 // positions below this are in final order
  private var prefixUpTo = 0 // bytes of the files below this index, in `prefixBytes`
  private var prefixBytes = 0L
  private val totalBytes = java.util.Arrays.stream(sizes).sum() // unboxed
  private var runsSorted = 0
  private var runFiles = 0L
  private var runMillis = 0L

  /** What ordering took so far. */
  def describe: String =
    s"ordered by time in $builtMillis ms, $runsSorted run(s) of equal times ($runFiles files) " +
      s"by path in $runMillis ms"

  def size: Int = positions.length

  /** The index position of the file numbered `i` (call [[sortThrough]] `i` first). */
  def position(i: Int): Int = positions(i)

  /** Puts the files numbered 0..`i` in their final order. */
  def sortThrough(i: Int): Unit =
    while (sorted <= math.min(i, size - 1)) {
      var end = sorted + 1
      while (end < size && times(end) == times(sorted)) end += 1
      if (end - sorted > 1) sortRunByPath(sorted, end)
      sorted = end
    }

  private def sortRunByPath(from: Int, until: Int): Unit = {
    val started = System.nanoTime()
    val run = (from until until).map { i =>
      (pathKey(index.row(positions(i))), positions(i), sizes(i))
    }.toArray
    java.util.Arrays.sort(
      run,
      (a: (UTF8String, Int, Long), b: (UTF8String, Int, Long)) => a._1.binaryCompare(b._1)
    )
    var k = 0
    while (k < run.length) {
      positions(from + k) = run(k)._2
      sizes(from + k) = run(k)._3
      k += 1
    }
    runsSorted += 1
    runFiles += run.length
    runMillis += (System.nanoTime() - started) / 1000000
  }

  /** Bytes of the files numbered above `after`. */
  def bytesAfter(after: Long): Long = {
    val upTo = math.max(0L, math.min(after + 1, size.toLong)).toInt
    if (upTo < prefixUpTo) { prefixUpTo = 0; prefixBytes = 0L }
    sortThrough(upTo - 1)
    while (prefixUpTo < upTo) {
      prefixBytes += sizes(prefixUpTo)
      prefixUpTo += 1
    }
    totalBytes - prefixBytes
  }
}

private[index] object DriverOrder {
  def apply(d: DriverIndex, pathKey: InternalRow => UTF8String): DriverOrder = {
    val started = System.nanoTime()
    val entry = d.entry
    val n = d.size.toInt
    val (positions, times, sizes) = (new Array[Int](n), new Array[Long](n), new Array[Long](n))
    var at = 0
    d.foreachLive { (r, p) =>
      positions(at) = p
      times(at) = r.getLong(entry.Ord.ModificationTime)
      sizes(at) = r.getLong(entry.Ord.Size)
      at += 1
    }
    val byTime = sortedByTime(times, n)
    // permuted with loops: `byTime.map(positions)` would box every element
    val (p, t, s) = (new Array[Int](n), new Array[Long](n), new Array[Long](n))
    var i = 0
    while (i < n) {
      val from = byTime(i)
      p(i) = positions(from)
      t(i) = times(from)
      s(i) = sizes(from)
      i += 1
    }
    new DriverOrder((System.nanoTime() - started) / 1000000, p, t, s, pathKey, d)
  }

  /** Indexes 0..n-1 ordered by `times` (ties in any order). */
  private def sortedByTime(times: Array[Long], n: Int): Array[Int] =
    if (n == 0) Array.empty
    else {
      var lo = Long.MaxValue
      var hi = Long.MinValue
      var k = 0
      while (k < n) { // a loop: `times.min` compares boxed values
        lo = math.min(lo, times(k))
        hi = math.max(hi, times(k))
        k += 1
      }
      val span = hi - lo
      val indexBits = 32 - Integer.numberOfLeadingZeros(math.max(1, n - 1))
      val spanBits = 64 - java.lang.Long.numberOfLeadingZeros(span)
      if (span >= 0 && spanBits + indexBits <= 63) {
        val packed = new Array[Long](n)
        var i = 0
        while (i < n) {
          packed(i) = ((times(i) - lo) << indexBits) | i.toLong
          i += 1
        }
        java.util.Arrays.sort(packed)
        val mask = (1L << indexBits) - 1
        val out = new Array[Int](n)
        i = 0
        while (i < n) {
          out(i) = (packed(i) & mask).toInt
          i += 1
        }
        out
      } else {
        val boxed = Array.tabulate[Integer](n)(i => i)
        java.util.Arrays.sort(
          boxed,
          (a: Integer, b: Integer) => java.lang.Long.compare(times(a), times(b))
        )
        boxed.map(_.intValue)
      }
    }
}

/**
 * Every file of an executor index numbered in snapshot order (range-partitioned and sorted by
 * (modificationTime, path), numbered with `zipWithIndex`, persisted): for reads that jump.
 */
private[index] final class Numbered(frame: org.apache.spark.sql.DataFrame, total: Long) {
  def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, InternalRow)] =
    frame
      .where(col(Numbered.Index) > fromExclusive && col(Numbered.Index) <= toInclusive)
      .queryExecution
      .toRdd
      .map(r => (r.getLong(r.numFields - 1), r.copy()))
      .collect()
      .sortBy(_._1)
      .toSeq

  def bytesAfter(after: Long): Long =
    frame
      .where(col(Numbered.Index) > after)
      .agg(org.apache.spark.sql.functions.sum(col("size")))
      .head() match {
      case r if r.isNullAt(0) => 0L
      case r => r.getLong(0)
    }

  def release(): Unit = frame.unpersist(blocking = false)
}

private[index] object Numbered {
  val Index = "_snapshotIndex"

  def apply(
      spark: SparkSession,
      e: ExecutorIndex,
      paths: TablePaths,
      level: StorageLevel
  ): Numbered = {
    val entries = e.frame.select(e.entry.schema.fieldNames.map(col): _*)
    val keyed = entries.withColumn("_pathKey", FileAction.keyUdf(paths)(col("path")))
    val partitions = math.max(1, keyed.rdd.getNumPartitions)
    val sorted = keyed
      .repartitionByRange(partitions, col("modificationTime"), col("_pathKey"))
      .sortWithinPartitions("modificationTime", "_pathKey")
      .drop("_pathKey")
    val rowSchema = sorted.schema // read here: a Dataset must not be touched in a task
    val schema = rowSchema.add(Index, org.apache.spark.sql.types.LongType, nullable = false)
    val rows = sorted.queryExecution.toRdd.zipWithIndex().map { case (r, i) =>
      InternalRow.fromSeq(r.toSeq(rowSchema) :+ i): InternalRow
    }
    val frame = org.apache.spark.sql.deltareplay.SparkBridge
      .internalDataFrame(spark, rows, schema)
      .persist(level)
    new Numbered(frame, frame.count())
  }
}
