package io.deltareplay.internal.streaming

import scala.collection.mutable

import io.deltareplay.internal.index.{DriverIndex, ExecutorIndex, FileEntry, TableIndex}
import io.deltareplay.internal.log.{FileAction, LiveFile, TablePaths}
import io.deltareplay.internal.planning.{KeptFile, ScanPlanner}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.StructType
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * A stream's initial snapshot: the files of the snapshot index of the start version, in
 * (modificationTime, path) order, numbered 0..size-1, the order and numbers of delta-spark's
 * DeltaSource (so a checkpoint written by either source resumes on the other). Read off the index
 * itself, with no second copy of the file list:
 *
 *   - index on the driver: its live rows are ordered by modification time in one primitive sort,
 *     and each run of equal times by path only when a read reaches it
 *     ([[StreamSnapshot.DriverOrder]]; 20 bytes a file);
 *   - index on the executors: no total order is built. A micro-batch takes its files from a slice:
 *     the next `sliceFiles` files after the previous slice's last key, found in one pass over the
 *     persisted index (each task keeps its smallest keys above the bound, the driver merges). The
 *     first micro-batch so waits for one pass, not for a sort of every file, and the driver holds
 *     one slice. A jump to another place (a restart in the middle of the snapshot) numbers the
 *     files once with a distributed range sort, as DeltaSource does.
 *
 * Before either, a stream's first micro-batch may need only the first files
 * ([[StreamSnapshot.First]], found by [[DistributedReplay.firstFiles]] in one pass with no index):
 * they are read from that list, and the index is built when a read goes beyond them.
 *
 * `path` orders as the replay key's path ([[TablePaths.key]]), as delta-spark's snapshot has it.
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

  /** The index, built at the first read that goes beyond the [[first]] files. */
  private def built: StreamSnapshot.Built = {
    if (made == null) {
      made = build()
      // on the executors, slices go on from the first files (numbered as they are)
      if (!made.index.isInstanceOf[DriverIndex] && firstKept.nonEmpty) {
        val f = first.get.rows
        slices = List(Slice(0L, f.indices.map(i => (f(i)._1, f(i)._2, firstKept(i))).toArray))
      }
    }
    made
  }
  private def index: TableIndex = built.index
  private def entry = index.entry

  /** Files of the snapshot (builds the index). */
  def size: Long = built.size

  private lazy val keep = ScanPlanner.keeper(entry, readPartitionSchema)
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
  def readChunk: Long =
    if (beforeIndex) firstKept.length.toLong
    else
      index match {
        case _: DriverIndex => 10000L
        case _ => math.max(1L, math.min(10000L, sliceFiles.toLong))
      }

  // ---------------------------------------------------------------- index on the driver

  /** The driver index's files in snapshot order (sorted as far as reads have asked). */
  private var orderBuilt: StreamSnapshot.DriverOrder = null
  private def order: StreamSnapshot.DriverOrder = {
    if (orderBuilt == null) {
      orderBuilt = StreamSnapshot.DriverOrder(
        index.asInstanceOf[DriverIndex],
        StreamSnapshot.pathKey(paths, entry.Ord.Path, _)
      )
    }
    orderBuilt
  }

  // ---------------------------------------------------------------- index on the executors

  /** A slice: the files numbered `first` .. `first + files.length - 1`, with their keys. */
  private final case class Slice(first: Long, files: Array[(Long, UTF8String, KeptFile)]) {
    def end: Long = first + files.length
    def bytes: Long = files.iterator.map(_._3.size).sum
  }

  /** The last slices read (a micro-batch may span two; its plan reads them again). */
  private var slices: List[Slice] = Nil
  private var bytesBeforeLast = 0L // bytes of the files numbered below the newest slice
  private var numbered: Option[StreamSnapshot.Numbered] = None

  /** The slice after the newest one (the first slice when there is none yet). */
  private def nextSlice(e: ExecutorIndex): Option[Slice] = {
    val newest = slices.headOption
    val after = newest.flatMap(_.files.lastOption).map(f => (f._1, f._2))
    val found = StreamSnapshot.smallest(e, paths, after, sliceFiles)
    if (found.isEmpty) None
    else {
      val slice = Slice(newest.fold(0L)(_.end), found.map { case (t, p, row) => (t, p, keep(row)) })
      bytesBeforeLast += newest.fold(0L)(_.bytes)
      slices = (slice :: slices).take(3)
      Some(slice)
    }
  }

  /** The file numbered `i` from the slices, reading the next one when `i` is right after them. */
  private def fromSlices(e: ExecutorIndex, i: Long): Option[KeptFile] =
    slices.find(s => i >= s.first && i < s.end) match {
      case Some(s) => Some(s.files((i - s.first).toInt)._3)
      case None if i == slices.headOption.fold(0L)(_.end) =>
        nextSlice(e).map(s => s.files((i - s.first).toInt)._3)
      case None => None
    }

  // ---------------------------------------------------------------- reading

  /** Files numbered in (fromExclusive, toInclusive], in order. */
  def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, KeptFile)] = synchronized {
    val from = math.max(0L, fromExclusive + 1)
    if (fromFirst(toInclusive)) return (from to toInclusive).map(i => i -> firstKept(i.toInt))
    val to = math.min(size - 1, toInclusive)
    if (from > to) return Nil
    index match {
      case d: DriverIndex =>
        order.sortThrough(to.toInt)
        (from to to).map(i => i -> keep(d.row(order.position(i.toInt))))
      case e: ExecutorIndex =>
        val out = mutable.ArrayBuffer.empty[(Long, KeptFile)]
        var i = from
        var jumped = numbered.isDefined
        while (i <= to && !jumped)
          fromSlices(e, i) match {
            case Some(f) =>
              out += i -> f
              i += 1
            case None => jumped = true
          }
        // a jump (a restart in the middle): number every file once and read from that
        if (i <= to) out ++= numberedRange(e, i - 1, to)
        out.toSeq
    }
  }

  private def numberedRange(
      e: ExecutorIndex,
      fromExclusive: Long,
      to: Long
  ): Seq[(Long, KeptFile)] = {
    val n = numbered.getOrElse {
      val built = StreamSnapshot.Numbered(spark, e, paths, storageLevel)
      numbered = Some(built)
      built
    }
    n.range(fromExclusive, to).map { case (i, row) => i -> keep(row) }
  }

  /** Files and bytes numbered above `after` (-1: not known yet). */
  def remaining(after: Long): (Long, Long) = synchronized {
    // not known before the index is built: a progress report does not build it
    if (beforeIndex) return (-1L, -1L)
    val files = math.max(0L, size - (after + 1))
    val bytes = index match {
      case _: DriverIndex => order.bytesAfter(after)
      case e: ExecutorIndex =>
        val newest = slices.headOption
        numbered match {
          case Some(n) => n.bytesAfter(after)
          case None if newest.exists(s => after + 1 >= s.first && after + 1 <= s.end) =>
            val s = newest.get
            totalBytes(e) - bytesBeforeLast -
              s.files.take((after + 1 - s.first).toInt).iterator.map(_._3.size).sum
          case None if after < 0 => totalBytes(e)
          case None => -1L // not known without numbering every file
        }
    }
    (files, bytes)
  }

  private var total: Option[Long] = None
  private def totalBytes(e: ExecutorIndex): Long = total.getOrElse {
    val t = e.frame.agg(org.apache.spark.sql.functions.sum(col("size"))).head().getLong(0)
    total = Some(t)
    t
  }

  def release(): Unit = synchronized {
    numbered.foreach(_.release())
    Option(made).foreach(_.release())
  }

  def description: String = synchronized(describeNow)

  private def describeNow: String = {
    val firstPass = first.fold("")(f => s"; first ${f.rows.length} files found ${f.how}")
    if (made == null) s"first ${firstKept.length} files known, index not built yet$firstPass"
    else
      index match {
        case _: DriverIndex =>
          val ordered = Option(orderBuilt).fold("")(o => s"; ${o.describe}")
          s"$size files, ordered on the driver (${index.describe}; index ${made.replayed}" +
            s"$ordered$firstPass)"
        case _ =>
          s"$size files, read in slices of $sliceFiles (${index.describe}$firstPass)" +
            numbered.fold("")(_ => ", numbered by a range sort after a jump")
      }
  }
}

private[deltareplay] object StreamSnapshot {

  /**
   * The snapshot's index (`owned` when no cache holds it: released with the snapshot) and how it
   * was replayed.
   */
  final case class Built(index: TableIndex, replayed: String, owned: Boolean) {
    val size: Long = index match {
      case d: DriverIndex => d.size
      case e: ExecutorIndex if e.persisted => e.size
      case e: ExecutorIndex => e.frame.count()
    }
    def release(): Unit = if (owned) index.release()
  }

  /** The first files of a snapshot (keys and entry rows of `entry`, in order), found `how`. */
  final case class First(
      rows: Array[(Long, UTF8String, InternalRow)],
      entry: FileEntry,
      how: String
  )

  /**
   * A driver index's live files in (modificationTime, path) order, built for the first micro-batch
   * in one primitive sort: positions sorted by modification time (packed with the time into one
   * long when the times span few enough bits, else compared), then each run of equal times sorted
   * by path key only when a read reaches it ([[sortThrough]]), so the first batch of a table whose
   * files share a few commit times sorts one run, not every path.
   */
  final class DriverOrder private (
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

  object DriverOrder {
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

  /** (modificationTime, path key, anything) in snapshot order. */
  val KeyOrdering: java.util.Comparator[(Long, UTF8String, Int)] =
    (a, b) => {
      val c = java.lang.Long.compare(a._1, b._1)
      if (c != 0) c else a._2.binaryCompare(b._2)
    }

  /** The path of a row's replay key, copied: a row's strings point into its reused buffer. */
  def pathKey(paths: TablePaths, ordinal: Int, r: InternalRow): UTF8String = {
    val raw = r.getUTF8String(ordinal)
    val key = paths.key(raw)
    if (key eq raw) raw.clone() else key
  }

  private def before(a: (Long, UTF8String), b: (Long, UTF8String)): Boolean = {
    val c = java.lang.Long.compare(a._1, b._1)
    c < 0 || (c == 0 && a._2.binaryCompare(b._2) < 0)
  }

  /**
   * The `n` smallest files above `after` in snapshot order, found in one pass over an executor
   * index: each task keeps its own `n` smallest (a bounded heap), the driver merges them.
   */
  def smallest(
      e: ExecutorIndex,
      paths: TablePaths,
      after: Option[(Long, UTF8String)],
      n: Int
  ): Array[(Long, UTF8String, InternalRow)] = {
    val entry = e.entry
    val bound = after.map { case (t, p) => (t, p.toString) }
    val perTask = e.frame.queryExecution.toRdd.mapPartitions { rows =>
      val low = bound.map { case (t, p) => (t, UTF8String.fromString(p)) }
      Iterator(smallestOf(rows, entry.Ord.Path, entry.Ord.ModificationTime, paths, low, n)._1)
    }
    inOrder[InternalRow](perTask.collect().flatten).take(n)
  }

  /**
   * The `n` smallest rows in snapshot order above `low` among `rows` (with a path and a nullable
   * modification time at the ordinals given; null orders as 0, as in an entry), found in one pass
   * with a bounded heap, and whether any row above `low` was left out. Runs in a task: the path key
   * is computed, and the row copied, only for a row that enters the heap.
   */
  def smallestOf(
      rows: Iterator[InternalRow],
      pathOrdinal: Int,
      timeOrdinal: Int,
      paths: TablePaths,
      low: Option[(Long, UTF8String)],
      n: Int
  ): (Array[(Long, UTF8String, InternalRow)], Boolean) = {
    // a max-heap on the key: its head is the largest of the smallest seen so far
    val heap = new java.util.PriorityQueue[(Long, UTF8String, InternalRow)](
      n + 1,
      (a: (Long, UTF8String, InternalRow), b: (Long, UTF8String, InternalRow)) =>
        -KeyOrdering.compare((a._1, a._2, 0), (b._1, b._2, 0))
    )
    var left = false
    rows.foreach { r =>
      val time = if (r.isNullAt(timeOrdinal)) 0L else r.getLong(timeOrdinal)
      val top = heap.peek()
      // most rows of a big table leave on their time alone, before their path is looked at
      if (heap.size >= n && time > top._1) left = true
      else {
        val raw = r.getUTF8String(pathOrdinal)
        // the key may point into the row's buffer: copied only when the file is kept
        val key = (time, paths.key(raw))
        if (low.forall(l => before(l, key))) {
          if (heap.size < n || before(key, (top._1, top._2))) {
            heap.add((time, if (key._2 eq raw) raw.clone() else key._2, r.copy()))
            if (heap.size > n) {
              heap.poll()
              left = true
            }
          } else left = true
        }
      }
    }
    (heap.toArray(new Array[(Long, UTF8String, InternalRow)](0)), left)
  }

  /** The `n` smallest of `files` in snapshot order, keyed as their entries would be. */
  def smallestLive(
      files: Seq[LiveFile],
      paths: TablePaths,
      n: Int
  ): Array[(Long, UTF8String, LiveFile)] =
    inOrder(
      files.map(f => (f.modificationTime, paths.key(UTF8String.fromString(f.path)), f)).toArray
    ).take(n)

  /** Keyed rows (or files) sorted in snapshot order (in place). */
  def inOrder[T](rows: Array[(Long, UTF8String, T)]): Array[(Long, UTF8String, T)] = {
    java.util.Arrays.sort(
      rows,
      (a: (Long, UTF8String, T), b: (Long, UTF8String, T)) =>
        KeyOrdering.compare((a._1, a._2, 0), (b._1, b._2, 0))
    )
    rows
  }

  /**
   * Every file of an executor index numbered in snapshot order (range-partitioned and sorted by
   * (modificationTime, path), numbered with `zipWithIndex`, persisted): for reads that jump.
   */
  final class Numbered(frame: org.apache.spark.sql.DataFrame, total: Long) {
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

  object Numbered {
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
}
