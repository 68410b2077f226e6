package io.deltareplay.internal.index

import java.util.BitSet

import io.deltareplay.internal.log.{DvDescriptor, FileEntry, LiveFile, Reconciler, TablePaths}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * The snapshot index on the driver: the live files of one table version as [[FileEntry]] columns
 * ([[EntryChunk]]s), no object per file. Immutable: a newer version is derived by
 * [[rolledForward]], which shares the chunks, marks the rows the new commits removed in its own
 * `removed` set and appends one chunk of their winning adds (statistics parsed only for those);
 * [[compacted]] merges the small appended chunks, or rewrites every live row when removed rows pile
 * up.
 *
 * Rows are addressed by a global position (chunk by chunk); each row's replay key is kept as a
 * 64-bit hash ([[KeyHash]]) so that the rows a commit removes are found without a scan (a hash
 * match is confirmed on the row's own key).
 */
private[deltareplay] final class DriverIndex private (
    val entry: FileEntry,
    val paths: TablePaths,
    val tableId: String,
    val version: Long,
    val withStats: Boolean,
    val chunks: Vector[EntryChunk],
    removed: BitSet,
    lookups: Vector[KeyLookup]
) extends TableIndex {
  private val starts: Array[Int] = chunks.scanLeft(0)(_ + _.numRows).toArray

  /** Rows held (live and removed). */
  def rows: Int = starts.last

  /** Live files. */
  val size: Long = rows.toLong - removed.cardinality()

  def bytes: Long = chunks.map(_.bytes).sum + lookups.map(_.bytes).sum + removed.size() / 8

  /** Calls `f` with each live row (a view, valid during the call) and its position. */
  def foreachLive(f: (InternalRow, Int) => Unit): Unit = {
    var c = 0
    while (c < chunks.length) {
      val batch = chunks(c).batch
      val base = starts(c)
      var i = 0
      while (i < chunks(c).numRows) {
        if (!removed.get(base + i)) f(batch.getRow(i), base + i)
        i += 1
      }
      c += 1
    }
  }

  /** Calls `f` with each chunk's batch and the set of its live rows (`f` may change the set). */
  def foreachChunk(f: (ColumnarBatch, BitSet) => Unit): Unit = {
    var c = 0
    while (c < chunks.length) {
      val n = chunks(c).numRows
      val live = removed.get(starts(c), starts(c) + n)
      live.flip(0, n)
      f(chunks(c).batch, live)
      c += 1
    }
  }

  /** The row at `position` (a view, valid until the next call on the same chunk). */
  def row(position: Int): InternalRow = {
    val c = java.util.Arrays.binarySearch(starts, position) match {
      case i if i >= 0 => i
      case i => -i - 2
    }
    chunks(c).batch.getRow(position - starts(c))
  }

  /**
   * This index rolled forward to `newVersion` by the reconciled commits in between: every row whose
   * key the commits touched is removed, their winning adds join as a new chunk.
   */
  def rolledForward(
      tail: Reconciler,
      newVersion: Long,
      toEntry: LiveFile => InternalRow
  ): DriverIndex =
    rolledForward(tail, newVersion, DriverIndex.tailChunk(entry, paths, tail, toEntry))

  /** [[rolledForward]] with the chunk of the tail's winning adds built already (if any). */
  def rolledForward(
      tail: Reconciler,
      newVersion: Long,
      added: Option[EntryChunk]
  ): DriverIndex = {
    if (tail.winners.isEmpty) return copy(version = newVersion)
    val removedNow = removed.clone().asInstanceOf[BitSet]
    tail.winners.keySet().forEach { case (path, dv) =>
      val h = KeyHash.of(path, dv)
      lookups.foreach(_.positions(h).foreach { p =>
        if (!removedNow.get(p) && keyAt(p) == ((path, dv))) removedNow.set(p)
      })
    }
    added match {
      case None => copy(version = newVersion, removed = removedNow)
      case Some(chunk) =>
        val appended = chunks :+ chunk
        copy(
          version = newVersion,
          chunks = appended,
          removed = removedNow,
          lookups = lookups :+ new KeyLookup(chunk.keyHashes, rows)
        )
    }
  }

  /** How many chunks at the end are small (what roll-forwards appended). */
  private def smallTail: Int = {
    val small = math.max(DriverIndex.ChunkRows / 16, rows / 64)
    chunks.reverseIterator.takeWhile(_.numRows < small).size
  }

  /** Whether compacting pays: many removed rows, or many small chunks appended. */
  def wantsCompaction: Boolean = removed.cardinality() > rows / 4 || smallTail > 8

  /**
   * The same live rows in fewer chunks. With many removed rows every live row is rewritten;
   * otherwise only the small chunks at the end are merged and the big ones stay shared, so a
   * roll-forward never copies the whole index for a few commits' files. Rows are copied one chunk
   * of [[DriverIndex.ChunkRows]] at a time, each row read once.
   */
  def compacted: DriverIndex = {
    val keep = if (removed.cardinality() > rows / 4) 0 else chunks.size - smallTail
    val base = starts(keep)
    val fresh = Vector.newBuilder[EntryChunk]
    var building = new EntryChunkBuilder(entry)
    (keep until chunks.size).foreach { c =>
      val chunk = chunks(c)
      var i = 0
      while (i < chunk.numRows) {
        if (!removed.get(starts(c) + i)) building.append(chunk.batch.getRow(i), chunk.keyHashes(i))
        if (building.size == DriverIndex.ChunkRows) {
          fresh += building.result()
          building = new EntryChunkBuilder(entry)
        }
        i += 1
      }
    }
    if (building.size > 0) fresh += building.result()
    val freshChunks = fresh.result()
    val freshStarts = freshChunks.scanLeft(base)(_ + _.numRows)
    new DriverIndex(
      entry,
      paths,
      tableId,
      version,
      withStats,
      chunks.take(keep) ++ freshChunks,
      removed.get(0, base),
      lookups.take(keep) ++ freshChunks.zip(freshStarts).map { case (c, at) =>
        new KeyLookup(c.keyHashes, at)
      }
    )
  }

  /** The replay key of the row at `position`. */
  private def keyAt(position: Int): (String, String) = entry.key(paths, row(position))

  private def copy(
      version: Long,
      chunks: Vector[EntryChunk] = chunks,
      removed: BitSet = removed,
      lookups: Vector[KeyLookup] = lookups
  ): DriverIndex =
    new DriverIndex(entry, paths, tableId, version, withStats, chunks, removed, lookups)

  def describe: String =
    f"index on the driver: $size%,d files in ${chunks.size} chunk(s), ${bytes / 1e6}%.1f MB"

  private[index] def home: Home = Home.Driver

  def files(): Iterator[(String, Option[DvDescriptor])] = {
    val out = Vector.newBuilder[(String, Option[DvDescriptor])]
    foreachLive { (r, _) =>
      out += r.getUTF8String(entry.Ord.Path).toString -> DvDescriptor.fromInternalRow(
        r,
        entry.Ord.Dv
      )
    }
    out.result().iterator
  }

  def byHome[R](f: TableIndex.ByHome[R]): R = f.onDriver(this)

  def rolledForward(
      spark: SparkSession,
      tail: Reconciler,
      newVersion: Long
  ): TableIndex = {
    val rolled = rolledForward(tail, newVersion, entry.projector())
    if (rolled.wantsCompaction) rolled.compacted else rolled
  }

  def snapshotOrder(
      spark: SparkSession,
      paths: TablePaths,
      keep: InternalRow => KeptFile,
      sliceFiles: Int,
      storageLevel: StorageLevel,
      first: Array[(Long, UTF8String, KeptFile)]
  ): SnapshotOrder = new DriverSnapshotOrder(this, paths, keep)
}

private[deltareplay] object DriverIndex {

  /** An index of `chunks` (positions in chunk order), nothing removed. */
  def apply(
      entry: FileEntry,
      paths: TablePaths,
      tableId: String,
      version: Long,
      withStats: Boolean,
      chunks: Vector[EntryChunk]
  ): DriverIndex = {
    val starts = chunks.scanLeft(0)(_ + _.numRows)
    val lookups = chunks.zip(starts).map { case (c, start) => new KeyLookup(c.keyHashes, start) }
    new DriverIndex(entry, paths, tableId, version, withStats, chunks, new BitSet(), lookups)
  }

  /** The index of live files replayed on the driver. */
  def of(
      entry: FileEntry,
      paths: TablePaths,
      tableId: String,
      version: Long,
      withStats: Boolean,
      files: Seq[LiveFile]
  ): DriverIndex = {
    val toEntry = entry.projector()
    val chunks = files
      .grouped(ChunkRows)
      .map { g =>
        val rows = g.map { f =>
          IndexBuilds.yieldPoint() // a background build's work on the driver
          toEntry(f)
        }
        chunk(entry, paths, rows.toIndexedSeq, g)
      }
      .toVector
    apply(entry, paths, tableId, version, withStats, chunks)
  }

  /**
   * Entry rows (of a Spark job over the live files) as chunks, with their key hashes; runs in the
   * replay tasks.
   */
  def chunksOf(
      entry: FileEntry,
      paths: TablePaths,
      rows: Iterator[InternalRow]
  ): Iterator[EntryChunk] = new Iterator[EntryChunk] {
    private val keys = new KeyHasher(paths)
    def hasNext: Boolean = rows.hasNext
    def next(): EntryChunk = {
      // each row is read once, as it comes (a task's row iterator reuses one row object)
      val chunk = new EntryChunkBuilder(entry)
      while (chunk.size < ChunkRows && rows.hasNext) {
        val r = rows.next()
        chunk.append(r, keys.ofEntry(entry, r))
      }
      chunk.result()
    }
  }

  /**
   * The chunk of a reconciled tail's winning adds, of those `keep` accepts (none when there are
   * none; `toEntry` is made only then).
   */
  def tailChunk(
      entry: FileEntry,
      paths: TablePaths,
      tail: Reconciler,
      toEntry: => LiveFile => InternalRow,
      keep: LiveFile => Boolean = _ => true
  ): Option[EntryChunk] = {
    val added = tail.liveFiles().filter(keep)
    if (added.isEmpty) None
    else {
      val project = toEntry
      Some(chunk(entry, paths, added.map(project).toIndexedSeq, added))
    }
  }

  /** Rows per chunk when an index is built on the driver (bounds the transient row objects). */
  val ChunkRows = 65536

  private def chunk(
      entry: FileEntry,
      paths: TablePaths,
      rows: IndexedSeq[InternalRow],
      files: Seq[LiveFile]
  ): EntryChunk =
    EntryChunk(
      entry,
      rows,
      files.map(f => KeyHash.of(paths.key(f.path), f.dv.fold("")(_.uniqueId))).toArray
    )
}
