package io.deltareplay.internal.log

import io.deltareplay.internal.session.SessionState
import org.apache.hadoop.fs.{EtagSource, FileStatus}
import org.apache.spark.sql.SparkSession

/**
 * The protocol and metadata of the table version each table was last loaded at, kept per
 * SparkSession, so that loading a newer version reads only the commits after it.
 *
 * Loading a version finds its protocol and metaData by reading its commits newest first and, when
 * they do not hold both, the checkpoint; on a table with a checkpoint and a tail of commits without
 * either action, every load read the whole tail and the checkpoint's protocol and metaData rows (on
 * an object store a GET per file, twice per query: once when the DataFrame is made, once when it is
 * planned, as a reused DataFrame reads the newest version). A cached load serves a segment that
 * extends it: the same checkpoint files and the cached commits as the first of the new ones, each
 * the same file (path, length, modification time and, where the store gives one, ETag). Then only
 * the commits after the cached ones are read, newest first, and an action found there replaces the
 * cached one (a schema change, a protocol upgrade, a table replaced at the same path all write
 * one). Anything else (another checkpoint, a file rewritten, an older version) reads the segment as
 * before and becomes the cached load. `spark.deltareplay.replay.stateCache.enabled=false` turns
 * this cache off with the index cache.
 */
private[deltareplay] object MetaCache {

  private final case class Entry(segment: LogSegment, meta: TableMeta)

  /** Tables kept per session; the least recently loaded goes first. */
  val MaxTables = 64

  private final class Cache extends java.util.LinkedHashMap[String, Entry](16, 0.75f, true) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[String, Entry]): Boolean =
      size() > MaxTables
  }

  private val cacheOf = new SessionState.Part[Cache](
    "protocol and metadata",
    () => new Cache,
    size = c => c.synchronized(c.size.toLong)
  )

  /**
   * The protocol and metadata of `segment`: from a cached load it extends plus its newer commits,
   * or read whole ([[LogReader.checkedMeta]]).
   */
  def meta(spark: SparkSession, segment: LogSegment, settings: LogSettings): TableMeta = {
    val reader = new LogReader(spark, segment, settings)
    if (!settings.stateCache) return reader.checkedMeta()
    val cache = cacheOf(spark)
    val cached = cache.synchronized(Option(cache.get(segment.table)))
    val meta = cached.filter(e => extendsLoad(e.segment, segment)) match {
      case Some(e) =>
        reader.newestInCommits(segment.commits.drop(e.segment.commits.size)).over(e.meta)
      case None => reader.checkedMeta()
    }
    cache.synchronized(cache.put(segment.table, Entry(segment, meta)))
    meta
  }

  /** Whether `later` has `earlier`'s checkpoint and commits, file for file, then maybe more. */
  private[internal] def extendsLoad(earlier: LogSegment, later: LogSegment): Boolean =
    earlier.checkpointVersion == later.checkpointVersion &&
      earlier.checkpoint.size == later.checkpoint.size &&
      earlier.checkpoint.zip(later.checkpoint).forall { case (a, b) => sameFile(a, b) } &&
      earlier.commits.size <= later.commits.size &&
      earlier.commits.zip(later.commits).forall { case (a, b) => sameFile(a, b) }

  private def sameFile(a: FileStatus, b: FileStatus): Boolean = FileId(a) == FileId(b)

  /**
   * What tells a log file from another written at the same path: path, length, modification time
   * and, where the store gives one, ETag (log files are written once and never changed).
   */
  private[internal] final case class FileId(
      path: String,
      length: Long,
      modified: Long,
      etag: Option[String]
  )

  private[internal] object FileId {
    def apply(s: FileStatus): FileId = {
      val etag = s match {
        case e: EtagSource => Option(e.getEtag)
        case _ => None
      }
      FileId(s.getPath.toString, s.getLen, s.getModificationTime, etag)
    }
  }
}
