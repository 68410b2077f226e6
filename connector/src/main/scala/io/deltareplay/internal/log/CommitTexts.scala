package io.deltareplay.internal.log

import io.deltareplay.internal.session.{BoundedLru, SessionState}
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession

/**
 * The bytes of recently read commit files, kept per SparkSession, so that one query reads each new
 * commit once.
 *
 * A re-plan after a commit reads that commit twice otherwise: the snapshot load reads it for a
 * protocol or metaData action ([[MetaCache]]), and the index roll-forward reads it again for its
 * adds and removes ([[IndexCache]]); on an object store that is a second GET of the same object.
 * Commit files are written once and never changed, so a file is known by its path, length,
 * modification time and, where the store gives one, its ETag (the identity [[MetaCache]] uses); a
 * table deleted and written again at the same path writes new files, which miss.
 *
 * Only small files are kept ([[MaxFileBytes]]), within [[MaxBytes]] per session, least recently
 * read out first, and a table's commits up to a version are dropped once an index of that version
 * is cached ([[dropUpTo]]). `spark.deltareplay.replay.stateCache.enabled=false` turns it off with
 * the other caches.
 */
private[deltareplay] object CommitTexts {

  /** Files larger than this are read every time (a big commit is replayed, not rolled forward). */
  val MaxFileBytes: Long = 4L << 20

  /** Bytes kept per session. */
  val MaxBytes: Long = 16L << 20

  private val cacheOf = new SessionState.Part[BoundedLru[MetaCache.FileId, Array[Byte]]](
    "commit texts",
    () => new BoundedLru[MetaCache.FileId, Array[Byte]](Int.MaxValue, MaxBytes, _.length),
    size = _.size.toLong
  )

  /**
   * Drops the kept commits of the table at `tableRoot` (a qualified URI, as [[TablePaths]] has it)
   * up to `version`. Called when an index of that version is cached: the reads after it roll that
   * index forward by newer commits only, so the older ones would only hold heap (a whole table's
   * tail: 19.6 MB at 1M files, the tail's eleven commits). A read that needs one again (a cold
   * replay after the index is evicted, a stream behind the table) reads it from storage.
   */
  def dropUpTo(spark: SparkSession, tableRoot: String, version: Long): Unit = {
    val log = LogSegment.logDir(new Path(new java.net.URI(tableRoot)))
    cacheOf(spark).removeKeys { id =>
      val file = new Path(id.path)
      LogFiles.parse(file.getName).exists {
        case LogFiles.Commit(v) => v <= version && file.getParent == log
        case _ => false
      }
    }
  }

  /** The paths of the commit files kept for `spark` (tests). */
  private[deltareplay] def keptPaths(spark: SparkSession): Seq[String] =
    cacheOf(spark).entries.map(_._1.path)

  /**
   * The bytes of `file`: kept ones, or `read()` (kept when small enough and caching is on). While
   * one thread reads a file (the load's read-ahead, [[ReadAhead]]), another that asks for it (the
   * tail's prefetch) waits for those bytes ([[BoundedLru.getOrRead]]).
   */
  def bytes(spark: SparkSession, file: FileStatus, settings: LogSettings)(
      read: => Array[Byte]
  ): Array[Byte] = {
    if (file.getLen > MaxFileBytes || !settings.stateCache) return read
    // a file shorter or longer than it was listed is not the listed file: not kept
    cacheOf(spark).getOrRead(MetaCache.FileId(file), _.length == file.getLen)(read)
  }
}
