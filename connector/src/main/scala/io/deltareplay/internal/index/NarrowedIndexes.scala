package io.deltareplay.internal.index

import io.deltareplay.internal.session.{BoundedLru, SessionState}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{AttributeSeq, BindReferences, Expression}

/**
 * Narrowed indexes (the files one query's filters may match, read through a [[CheckpointFilter]])
 * of table versions whose whole index is not cached yet, kept per SparkSession, so that the same
 * query repeated before the whole index is at hand (a dashboard refreshing; the background build of
 * [[IndexBuilds]] takes a few seconds on a big table) plans from memory instead of reading the
 * checkpoint again.
 *
 * A narrowed index serves only a read of the same table version (table URI, table id, version) in
 * the same session time zone with the same partition and skipping predicates (compared with the
 * entry columns bound to their ordinals) and the same need for statistics (a count's, `numRecords`
 * only, [[io.deltareplay.internal.log.FileEntry.countOnly]], serves counts only): it holds every
 * live file those predicates may match, which is all such a read plans from. A read of a newer
 * version with the same filters rolls it forward by the commits in between ([[before]]), as the
 * whole index is rolled: every key those commits touched goes, their winning adds join (all of
 * them: planning filters the index again, so a superset of the matching files is all it needs).
 * Once the whole index of a table is cached, reads use that, and the table's narrowed indexes it
 * serves are dropped ([[dropTable]]). At most [[MaxEntries]] indexes and [[MaxBytes]] of driver
 * heap per session, the least recently used first out;
 * `spark.deltareplay.replay.stateCache.enabled=false` keeps none.
 */
private[deltareplay] object NarrowedIndexes {

  val MaxEntries = 8
  val MaxBytes: Long = 64L << 20

  /** What a narrowed index of a read is kept under (also the key of a count's kept answer). */
  private[deltareplay] final case class Key(
      tableUri: String,
      tableId: String,
      version: Long,
      timeZone: String,
      withStats: Boolean,
      countOnly: Boolean,
      prune: Expression,
      skip: Expression
  )

  private val cacheOf = new SessionState.Part[BoundedLru[Key, ReplayResult]](
    "narrowed indexes",
    () => new BoundedLru[Key, ReplayResult](MaxEntries, MaxBytes, _.index.bytes),
    size = _.size.toLong
  )

  /**
   * A count's narrowed index over [[MaxBytes]] (a `count(*)` of a big table reads every file) and
   * within the session's index cache budget: the last one only, kept apart, standing in for the
   * whole index until the background build caches that (then dropped as the table's other narrowed
   * indexes are), so that a count repeated meanwhile does not read the checkpoint again.
   */
  private val bigCountOf = new SessionState.Part[BoundedLru[Key, ReplayResult]](
    "narrowed count index",
    () => new BoundedLru[Key, ReplayResult](1, Long.MaxValue, _.index.bytes),
    size = _.size.toLong
  )

  private def lookup(spark: SparkSession, k: Key): Option[ReplayResult] =
    cacheOf(spark).get(k).orElse(bigCountOf(spark).get(k))

  private[deltareplay] def key(
      request: IndexRequest,
      filter: FileFilter,
      withStats: Boolean
  ): Key = {
    val s = request.snapshot
    def bound(e: Expression) =
      BindReferences.bindReference(e, AttributeSeq(filter.attributes)).canonicalized
    Key(
      s.segment.paths.root,
      s.meta.tableId,
      s.version,
      request.entry.timeZone,
      withStats,
      request.entry.countOnly,
      bound(filter.prune),
      bound(filter.skip)
    )
  }

  /**
   * A narrowed index kept for this version and these filters; for a read that needs no statistics,
   * one kept with them serves too (an aggregate of some partitions, then their rows).
   */
  def get(request: IndexRequest, filter: FileFilter, withStats: Boolean): Option[ReplayResult] =
    lookup(request.spark, key(request, filter, withStats)).orElse {
      if (withStats) None else lookup(request.spark, key(request, filter, withStats = true))
    }

  /**
   * The newest narrowed index kept for an older version of the table with these filters, and its
   * version: what `ReadPolicy.narrowedIndex` rolls forward by the commits since.
   */
  def before(
      request: IndexRequest,
      filter: FileFilter,
      withStats: Boolean
  ): Option[(Long, ReplayResult)] = {
    val wanted = key(request, filter, withStats)
    val all = cacheOf(request.spark).entries ++ bigCountOf(request.spark).entries
    val older = all.collect {
      case (k, r) if k.version < wanted.version && k.copy(version = wanted.version) == wanted =>
        k.version -> r
    }
    older.maxByOption(_._1)
  }

  /** Keeps a narrowed index of this version and these filters. */
  def put(request: IndexRequest, filter: FileFilter, withStats: Boolean, r: ReplayResult): Unit = {
    val k = key(request, filter, withStats)
    val bytes = r.index.bytes
    if (k.countOnly && bytes > MaxBytes && bytes <= request.cacheBudgetBytes)
      bigCountOf(request.spark).put(k, r)
    else cacheOf(request.spark).put(k, r)
  }

  /**
   * Drops the table's narrowed indexes that its whole index, cached now, serves: all of them when
   * it has statistics, else those of reads that need none.
   */
  def dropTable(spark: SparkSession, tableUri: String, withStats: Boolean): Unit = {
    val served = (k: Key) => k.tableUri == tableUri && (withStats || !k.withStats)
    cacheOf(spark).removeKeys(served)
    bigCountOf(spark).removeKeys(served)
  }
}
