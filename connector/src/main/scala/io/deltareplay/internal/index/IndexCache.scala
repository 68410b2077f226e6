package io.deltareplay.internal.index

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.log.LogFiles.Commit
import io.deltareplay.internal.log.{CommitTexts, LogFiles, LogSegment}
import io.deltareplay.internal.session.SessionState
import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession

/**
 * Snapshot indexes ([[DriverIndex]]) of recently read table versions, one per table, kept per
 * SparkSession within a byte budget; the least recently used table goes first.
 *
 * A read of a newer version of a cached table derives its index from the cached one plus only the
 * commits in between, with the replay's rules: the commits are reconciled on the driver (`replay`'s
 * `Reconciler`), every indexed file whose key (canonical path, DV id) they touched is removed, and
 * their winning adds join (statistics parsed only for those). That is the reasoning of the
 * distributed fast path with the index in the checkpoint's place: a live set holds at most one
 * action per key, so only the touched keys need reconciling. A full replay runs instead when the
 * cache is cold or was evicted, when the cached version is newer than the one read (time travel),
 * when the table was replaced under another id, when a commit in between is missing (log cleanup),
 * or when the commits in between hold more bytes than a full replay from the newest checkpoint
 * would read.
 */
private[deltareplay] object IndexCache {

  final case class Entry(
      tableUri: String,
      tableId: String,
      version: Long,
      withStats: Boolean,
      index: TableIndex
  ) {
    def bytes: Long = index.bytes
  }

  private final class Cache {

    /** By table URI; access order, least recently used first. */
    val entries = new java.util.LinkedHashMap[String, Entry](16, 0.75f, true)
    var bytes = 0L
  }

  private val cacheOf = new SessionState.Part[Cache](
    "snapshot indexes",
    () => new Cache,
    release = c => c.synchronized(c.entries.values().forEach(_.index.release())),
    size = c => c.synchronized(c.entries.size.toLong)
  )

  /**
   * Forgets everything this session keeps ([[SessionState.clear]]): cached indexes (released),
   * protocol and metadata, commit texts, footers, narrowed indexes, tails parsed ahead, background
   * builds. The next read of any table is a cold one.
   */
  def clear(spark: SparkSession): Unit = SessionState.clear(spark)

  /** (tables, files, bytes) cached for this session. */
  def usage(spark: SparkSession): (Int, Long, Long) = {
    val c = cacheOf(spark)
    c.synchronized {
      var files = 0L
      c.entries.values().forEach(e => files += e.index.size)
      (c.entries.size(), files, c.bytes)
    }
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

  /** Whether the cache holds `index` (then the cache releases it, not its user). */
  def holds(spark: SparkSession, tableUri: String, index: TableIndex): Boolean = {
    val c = cacheOf(spark)
    c.synchronized(Option(c.entries.get(tableUri)).exists(_.index eq index))
  }

  /** Whether [[offer]] would keep an index of this table version. */
  def wouldKeep(spark: SparkSession, tableUri: String, tableId: String, version: Long): Boolean = {
    val c = cacheOf(spark)
    c.synchronized {
      val prior = c.entries.get(tableUri)
      prior == null || prior.tableId != tableId || prior.version <= version
    }
  }

  /**
   * Keeps `index` unless the cache holds a newer version of the table, then evicts least recently
   * used tables until the byte budget (driver indexes) and the count of executor indexes hold. A
   * driver index bigger than the whole budget is not kept. Indexes that go are released.
   */
  def offer(spark: SparkSession, index: TableIndex, tableUri: String, budgetBytes: Long): Unit = {
    if (!index.keepable) return // replayed by each use: nothing to keep
    val entry = Entry(tableUri, index.tableId, index.version, index.withStats, index)
    val c = cacheOf(spark)
    c.synchronized {
      val prior = c.entries.get(entry.tableUri)
      if (prior != null && (prior.index eq index)) return
      val keep = prior == null || prior.tableId != entry.tableId || prior.version < entry.version ||
        (prior.version == entry.version && entry.withStats && !prior.withStats) ||
        prior.index.entry.timeZone != index.entry.timeZone // read in another session time zone
      if (keep && fitsBudget(index, budgetBytes)) {
        if (prior != null) {
          c.bytes -= prior.bytes
          if (!index.sharesBlocksWith(prior.index)) prior.index.release()
        }
        c.entries.put(entry.tableUri, entry)
        c.bytes += entry.bytes
        NarrowedIndexes.dropTable(spark, entry.tableUri, entry.withStats)
        CommitTexts.dropUpTo(spark, entry.tableUri, entry.version)
        def executorIndexes =
          c.entries.values().iterator().asScala.count(_.index.livesIn(Home.Executors))
        val it = c.entries.values().iterator()
        while ((c.bytes > budgetBytes || executorIndexes > MaxExecutorIndexes) && it.hasNext) {
          val e = it.next()
          if ((e ne entry) && (c.bytes > budgetBytes || e.index.livesIn(Home.Executors))) {
            c.bytes -= e.bytes
            e.index.release()
            it.remove()
          }
        }
      }
    }
  }

  /** Whether [[offer]] would keep `index` for its size: no bigger than the whole budget. */
  def fitsBudget(index: TableIndex, budgetBytes: Long): Boolean = index.bytes <= budgetBytes

  /** Executor indexes kept per session (each holds persisted blocks on the executors). */
  val MaxExecutorIndexes = 4

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
}
