package io.deltareplay.internal

import scala.collection.mutable

import io.deltareplay.internal.LogFiles.Commit
import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession

/**
 * Replayed live-file states of recently read table versions, one per table, kept per SparkSession
 * on the driver heap (where planning needs the file list anyway) within a byte budget; the least
 * recently used table goes first.
 *
 * A read of a newer version of a cached table derives its state from the cached one plus only the
 * commits in between, with the rules of [[Replay]]: the commits are reconciled on the driver
 * ([[LocalReplay.Reconciler]]), every cached file whose key (canonical path, DV id) they touched is
 * dropped, and their winning adds join. That is the reasoning of the distributed fast path with the
 * cached state in the checkpoint's place: a live set holds at most one action per key, so only the
 * touched keys need reconciling. A full replay runs instead when the cache is cold or was evicted,
 * when the cached version is newer than the one read (time travel), when the table was replaced
 * under another id, when a commit in between is missing (log cleanup), or when the commits in
 * between hold more bytes than a full replay from the newest checkpoint would read.
 */
private[deltareplay] object ReplayState {

  final case class Entry(
      tableUri: String,
      tableId: String,
      version: Long,
      withStats: Boolean,
      files: Array[LiveFile],
      bytes: Long
  )

  private final class Cache {

    /** By table URI; access order, least recently used first. */
    val entries = new java.util.LinkedHashMap[String, Entry](16, 0.75f, true)
    var bytes = 0L
  }

  private val caches = new java.util.WeakHashMap[SparkSession, Cache]()

  private def cacheOf(spark: SparkSession): Cache = caches.synchronized {
    var c = caches.get(spark)
    if (c == null) {
      c = new Cache
      caches.put(spark, c)
    }
    c
  }

  /** Forgets every cached state of this session. */
  def clear(spark: SparkSession): Unit = caches.synchronized(caches.remove(spark))

  /** (tables, files, estimated bytes) cached for this session. */
  def usage(spark: SparkSession): (Int, Long, Long) = {
    val c = cacheOf(spark)
    c.synchronized {
      var files = 0L
      c.entries.values().forEach(e => files += e.files.length)
      (c.entries.size(), files, c.bytes)
    }
  }

  /** A rough heap estimate of one cached file (object headers, strings as UTF-16). */
  def estimateBytes(files: Array[LiveFile]): Long = {
    var total = 16L + 8L * files.length
    files.foreach { f =>
      total += 120L + 2L * f.path.length +
        (if (f.stats == null) 0L else 56L + 2L * f.stats.length) +
        (if (f.dv.isEmpty) 0L else 120L + 2L * f.dv.get.pathOrInlineDv.length)
    }
    total
  }

  /** The cached state of `tableUri` if it can serve (or be rolled forward to) `version`. */
  def lookup(
      spark: SparkSession,
      tableUri: String,
      tableId: String,
      version: Long,
      needStats: Boolean
  ): Option[Entry] = {
    val c = cacheOf(spark)
    c.synchronized {
      Option(c.entries.get(tableUri)).filter { e =>
        e.tableId == tableId && e.version <= version && (e.withStats || !needStats)
      }
    }
  }

  /**
   * Keeps `entry` unless the cache holds a newer version of the table, then evicts least recently
   * used tables until the budget holds. A state bigger than the whole budget is not kept.
   */
  def offer(spark: SparkSession, entry: Entry, budgetBytes: Long): Unit = {
    val c = cacheOf(spark)
    c.synchronized {
      val prior = c.entries.get(entry.tableUri)
      val keep = prior == null || prior.tableId != entry.tableId || prior.version < entry.version ||
        (prior.version == entry.version && entry.withStats && !prior.withStats)
      if (keep && entry.bytes <= budgetBytes) {
        if (prior != null) c.bytes -= prior.bytes
        c.entries.put(entry.tableUri, entry)
        c.bytes += entry.bytes
        val it = c.entries.values().iterator()
        while (c.bytes > budgetBytes && it.hasNext) {
          val e = it.next()
          if (e ne entry) {
            c.bytes -= e.bytes
            it.remove()
          }
        }
      }
    }
  }

  /**
   * The commit files `from + 1 .. segment.version`, when they are all still in the log: taken from
   * the segment when its checkpoint is not newer than `from`, otherwise from a new listing.
   */
  def commitsAfter(
      spark: SparkSession,
      segment: LogSegment,
      from: Long
  ): Option[Seq[FileStatus]] = {
    def version(s: FileStatus): Long = LogFiles.parse(s.getPath.getName) match {
      case Some(Commit(v)) => v
      case _ => -1L
    }
    val wanted = (from + 1) to segment.version
    if (segment.checkpointVersion.forall(_ <= from)) {
      Some(segment.commits.filter(s => version(s) > from))
    } else {
      val listing = LogSegment.list(segment.tablePath, spark.sessionState.newHadoopConf())
      if (wanted.forall(listing.commits.contains)) Some(wanted.map(listing.commits))
      else None
    }
  }

  /**
   * `entry`'s state rolled forward by `commits` (ascending, the versions right after it). Returns
   * the live files and the number of actions replayed.
   */
  def rollForward(
      spark: SparkSession,
      segment: LogSegment,
      entry: Entry,
      commits: Seq[FileStatus]
  ): (Array[LiveFile], Long) = {
    val tail = new LocalReplay.Reconciler(segment.paths)
    tail.applyInOrder(
      new LogReader(spark, segment.onlyCommits(commits)).commitActions(entry.withStats)
    )
    if (tail.winners.isEmpty) return (entry.files, 0L)
    val out = mutable.ArrayBuilder.make[LiveFile]
    out.sizeHint(entry.files.length + tail.winners.size())
    entry.files.foreach(f => if (!tail.touched(f)) out += f)
    out ++= tail.liveFiles()
    (out.result(), tail.count)
  }
}
