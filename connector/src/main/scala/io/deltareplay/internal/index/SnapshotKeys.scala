package io.deltareplay.internal.index

import io.deltareplay.internal.log.{LiveFile, TablePaths}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

/**
 * The order of a stream's initial snapshot, as delta-spark's DeltaSource numbers its files:
 * (modificationTime, path), the path as the replay key has it ([[TablePaths.key]]). Shared by the
 * snapshot orders of both homes ([[SnapshotOrder]]) and by the one pass over a checkpoint that
 * finds a stream's first files.
 */
private[deltareplay] object SnapshotKeys {

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
}
