package io.deltareplay.internal.log

import java.sql.Timestamp

import scala.util.Try

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.session.{BoundedLru, ReadsBegin, SessionState}
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Cast, Literal}
import org.apache.spark.sql.types.{StructType, TimestampType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * One pinned version of a table: its log segment and its protocol and metadata, and the schema
 * users see (`schema`: the columns of delta-spark's relation of this version, by the settings taken
 * at the load, [[TableSnapshot.columns]]). Cheap to build (one listing, reading the newest
 * commits); the file replay happens later, in the scan.
 */
private[deltareplay] case class TableSnapshot(
    segment: LogSegment,
    meta: TableMeta,
    loadMillis: Long,
    schema: StructType
) {
  def tablePath: Path = segment.tablePath
  def table: String = segment.table
  def version: Long = segment.version
  lazy val partitionColumns: Seq[String] = meta.partitionColumns
}

private[deltareplay] object TableSnapshot {

  /**
   * The schema users see of a version with protocol and metadata `meta`: the columns of
   * delta-spark's relation, by the settings taken at the load.
   */
  def columns(spark: SparkSession, meta: TableMeta, settings: LogSettings): StructType = {
    val s = settings.sparkSettings
    DeltaAdapter.relationSchema(spark, meta, s.dropNullColumns, s.caseSensitive)
  }

  /**
   * The table's newest version: `known` itself when it still is, found without listing
   * `_delta_log`, else the table loaded again (one listing). `known` is still the newest when its
   * newest commit file is still the one it listed (length, and ETag or time) and the next commit
   * file does not exist: commits are written one version after the other, each only if absent, so
   * no newer version can exist then, and a table recreated at the same path has another newest
   * commit file. Two status requests (HEADs on S3, sent together) instead of a LIST; a segment with
   * no commit after its checkpoint, or any failure of the probe, loads again.
   */
  def newest(spark: SparkSession, known: TableSnapshot, settings: LogSettings): TableSnapshot =
    if (stillNewest(spark, known.segment)) known
    else load(spark, known.table, None, None, settings)

  private def stillNewest(spark: SparkSession, segment: LogSegment): Boolean =
    segment.commits.lastOption.exists { last =>
      LogFiles.commitVersionOf(last.getPath.toString) == segment.version && {
        val fs = last.getPath.getFileSystem(spark.sessionState.newHadoopConf())
        val next = new Path(segment.logPath, LogFiles.commitName(segment.version + 1))
        val probes: Seq[() => Boolean] = Seq(
          () => sameFile(fs.getFileStatus(last.getPath), last),
          () => !exists(fs, next)
        )
        // on an object store the two requests go out together, one round trip
        val answers = ReadAhead.forFilesUnder(last.getPath, probes, (_: () => Boolean) => 0L)(_())
        try answers.forall(identity)
        catch {
          case scala.util.control.NonFatal(_) => false
        }
      }
    }

  /**
   * Whether two statuses of one path are of the same file: the same length and, where the store
   * gives one, the same ETag, else the same modification time (S3 lists times in milliseconds but a
   * HEAD answers in seconds).
   */
  private def sameFile(now: FileStatus, was: FileStatus): Boolean = {
    val (a, b) = (MetaCache.FileId(now), MetaCache.FileId(was))
    a.length == b.length && ((a.etag, b.etag) match {
      case (Some(x), Some(y)) => x == y
      case _ => a.modified == b.modified
    })
  }

  /**
   * Whether `path` exists, asked with `openFile` (on S3A one HEAD: `exists` would also list the key
   * as a directory prefix). Nothing is read.
   */
  private def exists(fs: org.apache.hadoop.fs.FileSystem, path: Path): Boolean =
    try {
      fs.openFile(path).build().get().close()
      true
    } catch {
      case _: java.io.FileNotFoundException => false
      case e: java.util.concurrent.ExecutionException
          if e.getCause.isInstanceOf[java.io.FileNotFoundException] =>
        false
    }

  /**
   * The checkpoint the last newest load of each table (by qualified path) started from: the next
   * newest load lists `_delta_log` from there on ([[LogSegment.listFrom]]), and lists all of it
   * when it cannot load the newest version from that listing. Checkpoints only come after it.
   */
  private val NewestCheckpoint = new SessionState.Part[BoundedLru[String, Long]](
    "newest loads' checkpoints",
    () => new BoundedLru[String, Long](1024, Long.MaxValue, _ => 1L),
    size = _.size.toLong
  )

  /**
   * Loads `path` at `version`, at `timestamp`, or at its newest version, for a read with
   * `settings`.
   */
  def load(
      spark: SparkSession,
      path: String,
      version: Option[Long],
      timestamp: Option[String],
      settings: LogSettings
  ): TableSnapshot = {
    val started = System.nanoTime()
    // a read begins: background work that yields to reads (index builds) gives it its cores now
    ReadsBegin.signal(spark)
    val hadoopConf = spark.sessionState.newHadoopConf()
    val raw = new Path(path)
    // through its string form: `file:///t` and `file:/t` name one table, and an execution that
    // keeps a snapshot loaded from the user's path ([[newest]]) must find the index a load from
    // `table` (the string form) cached
    val qualified = new Path(raw.getFileSystem(hadoopConf).makeQualified(raw).toString)
    if (version.isDefined && timestamp.isDefined) throw Errors.bothVersionAndTimestamp(path)
    val pinned =
      version.orElse(timestamp.map(ts => versionAt(spark, qualified, ts, settings.timeZone)))
    val key = qualified.toString
    // the newest version: listed from the checkpoint the last newest load of this table used
    val fromCheckpoint =
      if (pinned.isDefined || !settings.stateCache) None
      else
        NewestCheckpoint(spark)
          .get(key)
          .flatMap(v => Try(LogSegment.listFrom(qualified, v, hadoopConf)).toOption)
    val (segment, meta) =
      fromCheckpoint
        .flatMap(listing => Try(loadSegment(spark, listing, None, Set.empty, settings)).toOption)
        .getOrElse {
          val listing = LogSegment.list(qualified, hadoopConf)
          try loadSegment(spark, listing, pinned, Set.empty, settings)
          catch {
            case e: Exception => throw Errors.storeFailure(key, key, e).getOrElse(e)
          }
        }
    if (pinned.isEmpty && settings.stateCache) {
      segment.checkpointVersion.foreach(NewestCheckpoint(spark).put(key, _))
    }
    DeltaAdapter.checkReadable(segment.table, meta)
    TableSnapshot(
      segment,
      meta,
      (System.nanoTime() - started) / 1000000,
      columns(spark, meta, settings)
    )
  }

  /**
   * The segment and its protocol/metadata. A checkpoint that cannot be read is skipped in favour of
   * an older one (or of commit 0), as delta-spark does; with nothing to fall back to, the error
   * names the unreadable file.
   */
  @scala.annotation.tailrec
  private def loadSegment(
      spark: SparkSession,
      listing: LogSegment.Listing,
      version: Option[Long],
      excluded: Set[Long],
      settings: LogSettings
  ): (LogSegment, TableMeta) = {
    val segment = LogSegment.forVersion(listing, version, excluded)
    val attempt =
      try Right(segment -> MetaCache.meta(spark, segment, settings))
      catch {
        case e: io.deltareplay.DeltaReplayException.CorruptLog
            if segment.checkpointVersion.isDefined && isCheckpointFile(e.file) =>
          Left(e)
      }
    attempt match {
      case Right(ok) => ok
      case Left(e) =>
        val fallback =
          try
            Some(LogSegment.forVersion(listing, version, excluded + segment.checkpointVersion.get))
          catch { case _: Errors.DeltaReplayException => None }
        if (fallback.isEmpty) throw e
        loadSegment(spark, listing, version, excluded + segment.checkpointVersion.get, settings)
    }
  }

  private def isCheckpointFile(file: String): Boolean =
    file != null && (LogFiles.parse(new Path(file).getName) match {
      case Some(_: LogFiles.Commit) | None => false
      case Some(_) => true
    })

  private def versionAt(spark: SparkSession, path: Path, timestamp: String, tz: String): Long = {
    val micros = Cast(Literal(UTF8String.fromString(timestamp)), TimestampType, Some(tz)).eval()
    if (micros == null) {
      throw Errors.badOption("timestampAsOf", timestamp, "a timestamp such as 2024-01-31 12:00:00")
    }
    val ts = new Timestamp(micros.asInstanceOf[Long] / 1000)
    // The log must exist before delta-spark is asked, so a bad path fails with our message.
    LogSegment.list(path, spark.sessionState.newHadoopConf())
    DeltaAdapter.versionAtTimestamp(spark, path, ts)
  }
}
