package io.deltareplay.internal.streaming

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.index.{IndexCache, KeptFile}
import io.deltareplay.internal.log.{FileEntry, LogReader, LogSegment, TableMeta, TableSnapshot}
import io.deltareplay.internal.planning.{ReadPolicy, ScanPlanner}
import io.deltareplay.internal.replay.DistributedReplay
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

/**
 * What a stream reads next: walks the initial snapshot and then the commits, applying the
 * change-commit rules, in offset order.
 */
private[deltareplay] class StreamPlanner(
    spark: SparkSession,
    start: TableSnapshot,
    settings: StreamSettings
) {
  private def options: StreamOptions = settings.options
  private def conf = settings.planning
  private val meta = start.meta
  private val tableId = meta.tableId
  private val hadoopConf = spark.sessionState.newHadoopConf()
  private val partitionColumns = meta.partitionColumns.toSet
  val dataSchema: StructType = StructType(start.schema.filterNot(f => partitionColumns(f.name)))
  val partitionSchema: StructType = StructType(start.schema.filter(f => partitionColumns(f.name)))

  @volatile private var snapshot: Option[(Long, StreamSnapshot)] = None

  /** The files the batch being admitted may take at most (0: no file limit). */
  @volatile private var firstFilesWanted = 0L
  private lazy val entry = FileEntry(meta, conf.log.timeZone)
  private lazy val keep = ScanPlanner.keeper(entry, partitionSchema)
  private lazy val toEntry = entry.projector()
  @volatile private var listing: LogSegment.Listing = LogSegment.list(start.tablePath, hadoopConf)

  def latestVersion(): Long = {
    listing = LogSegment.list(start.tablePath, hadoopConf)
    listing.latestVersion
  }

  /** An item of the stream: a file with its offset, or the end of a version. */
  private sealed trait Item { def offset: StreamOffset }
  private case class FileItem(offset: StreamOffset, file: KeptFile) extends Item
  private case class VersionEnd(offset: StreamOffset) extends Item

  /** Admits files after `from` up to the limits; returns the end offset and the files admitted. */
  def admit(
      from: StreamOffset,
      bound: Long,
      maxFiles: Long,
      maxBytes: Long
  ): (StreamOffset, Long) = {
    var end = from
    var files = 0L
    var bytes = 0L
    val taken = Vector.newBuilder[KeptFile]
    // a batch that ends inside the snapshot's first files does not wait for its index
    firstFilesWanted = if (maxFiles == Long.MaxValue) 0 else maxFiles
    val it = items(from, bound)
    var stop = false
    // with a limit reached, a next item that is a file ends the batch: asked before pulling it
    def full = files >= maxFiles || bytes >= maxBytes
    def nextIsSnapshotFile =
      end.initialSnapshot && snapshot.exists { case (v, s) =>
        v == end.version && s.hasFile(end.index + 1)
      }
    while (!stop && !(full && nextIsSnapshotFile) && it.hasNext)
      it.next() match {
        case VersionEnd(o) => end = o
        case FileItem(o, f) =>
          // As DeltaSource: a file is admitted while there is capacity before taking it, so the
          // file that crosses the byte limit is admitted, and at least one file always is.
          if (full) stop = true
          else {
            files += 1
            bytes += f.size
            end = o
            taken += f
          }
      }
    lastAdmitted = Some((from, end, taken.result()))
    (end, files)
  }

  /**
   * The files of the batch last admitted, kept for its planning (which follows at once): the
   * snapshot is not walked twice, and a batch bigger than the slices an executor index keeps needs
   * no numbering of every file.
   */
  @volatile private var lastAdmitted: Option[(StreamOffset, StreamOffset, Vector[KeptFile])] = None

  /** The files in (start, end]. */
  def filesBetween(from: StreamOffset, end: StreamOffset): Seq[KeptFile] = lastAdmitted match {
    case Some((f, e, files)) if f == from && e == end => files
    case _ =>
      // An end at the base of version v means "all of v-1 read": v itself may not exist yet.
      val bound =
        if (!end.initialSnapshot && end.index == StreamOffset.Base) end.version - 1
        else end.version
      items(from, bound).takeWhile(_.offset <= end).collect { case FileItem(_, f) => f }.toSeq
  }

  private def items(from: StreamOffset, bound: Long): Iterator[Item] = {
    val commitsFrom = if (from.initialSnapshot) from.version + 1 else from.version
    val snapshotItems =
      if (!from.initialSnapshot) Iterator.empty
      else {
        val index = snapshotAt(from.version, fromStart = from.index == StreamOffset.Base)
        // ranges read as they are reached: a batch within the first files builds no index
        Iterator
          .iterate((from.index, index.readChunk)) { case (lo, n) => (lo + n, index.readChunk) }
          .map { case (lo, n) => index.range(lo, lo + n) }
          .takeWhile(_.nonEmpty)
          .flatten
          .map { case (i, f) => FileItem(StreamOffset(tableId, from.version, i, true), f): Item } ++
          Iterator.single(
            VersionEnd(StreamOffset(tableId, from.version + 1, StreamOffset.Base, false))
          )
      }
    val commitItems = Iterator.range(commitsFrom, bound + 1).flatMap { v =>
      val after = if (!from.initialSnapshot && v == from.version) from.index else StreamOffset.Base
      commit(v).iterator.filter(_.offset.index > after) ++
        Iterator.single(VersionEnd(StreamOffset(tableId, v + 1, StreamOffset.Base, false)))
    }
    snapshotItems ++ commitItems
  }

  /**
   * Stops the stream where DeltaSource would on the schema `m` met at `version` (a commit's, or the
   * table's at the offset a stream starts from).
   */
  private def checkSchema(m: TableMeta, version: Long, atStart: Boolean): Unit =
    DeltaAdapter.checkStreamSchema(
      spark,
      meta,
      start.version,
      m,
      version,
      start.schema,
      atStart,
      startingOption = options.startingVersion.isDefined || options.startingTimestamp.isDefined
    )

  @volatile private var checkedAtStart = false

  /**
   * Once, before the first batch: a stream that starts from an offset older than the table it was
   * created on (a restart, `startingVersion`, `startingTimestamp`) checks the table's schema there
   * against its own, as DeltaSource does at its start: a column renamed or dropped since then stops
   * it. "There" is the version the stream's rows so far were read at: for a restart at the start of
   * version v (everything before it read), v - 1; otherwise (`fresh`, the stream's own starting
   * offset, or an offset inside a version) the offset's version.
   */
  def checkStart(from: StreamOffset, fresh: Boolean): Unit = if (!checkedAtStart) {
    val at =
      if (!fresh && !from.initialSnapshot && from.index == StreamOffset.Base) from.version - 1
      else from.version
    if (at >= 0 && at < start.version) {
      val then =
        try Some(TableSnapshot.load(spark, start.tablePath.toString, Some(at), None, conf.log))
        catch {
          // as DeltaSource: without the table at the offset, a column-mapped table cannot be
          // checked, so it is not read; other tables go on (each commit is checked as it comes)
          case scala.util.control.NonFatal(e) if meta.usesColumnMapping => throw e
          case scala.util.control.NonFatal(_) => None
        }
      then.foreach(t => checkSchema(t.meta, at, atStart = true))
    }
    checkedAtStart = true
  }

  /** The items of one commit after the change-commit rules. */
  private def commit(version: Long): Seq[Item] = {
    val status = listing.commits.getOrElse(
      version, {
        listing = LogSegment.list(start.tablePath, hadoopConf)
        listing.commits.getOrElse(version, throw Errors.streamLogGone(start.table, version))
      }
    )
    val segment = start.segment.onlyCommits(Seq(status), version)
    val reader = new LogReader(spark, segment, conf.log)
    reader.commitProtocolAndMetadata().foreach {
      case Right(m) => checkSchema(meta.withMetadata(m), version, atStart = false)
      case Left(p) => DeltaAdapter.checkReadable(start.table, meta.withProtocol(p))
    }
    val actions = reader.commitActions(needStats = false).toSeq
    val adds = actions.filter(a => a.isAdd && a.dataChange)
    val removed = actions.find(a => !a.isAdd && a.dataChange)
    // DeltaSource's rules and errors: a commit that only removes passes with ignoreDeletes, one
    // that also adds (a rewrite) with ignoreChanges (re-emitting its adds); skipChangeCommits skips
    // either
    val emitted = removed match {
      case None => adds
      case Some(_) if options.skipChangeCommits => Nil
      case Some(_) if options.ignoreChanges => adds
      case Some(_) if options.ignoreDeletes && adds.isEmpty => Nil
      case Some(r) =>
        throw DeltaAdapter.changeCommitError(
          version,
          r.path,
          start.tablePath.toString,
          rewrites = adds.nonEmpty
        )
    }
    emitted.zipWithIndex.map { case (a, i) =>
      FileItem(StreamOffset(tableId, version, i.toLong, false), keep(toEntry(a.toLiveFile())))
    }
  }

  /**
   * The initial snapshot at `version`, read off the snapshot index of that version: the session's
   * cached one when it serves, else one built for the stream (kept persisted on the executors while
   * the stream reads its snapshot, released after). A stream that starts at the beginning of the
   * snapshot with a file limit of at most `streaming.snapshotSliceFiles`, on a log with a
   * checkpoint replayed as a Spark job, with no cached index that serves, first finds only the
   * files its first batch takes ([[DistributedReplay.firstFiles]]); the index is built when a read
   * goes beyond them.
   */
  private def snapshotAt(version: Long, fromStart: Boolean): StreamSnapshot = synchronized {
    snapshot match {
      case Some((v, s)) if v == version => s
      case _ =>
        releaseSnapshot()
        val at =
          if (version == start.version) start
          else TableSnapshot.load(spark, start.tablePath.toString, Some(version), None, conf.log)
        val policy = ReadPolicy(spark, at, conf)
        val build = () => {
          val replayed =
            policy.index(needStats = false, keepPersisted = Some(settings.storageLevel))
          val index = replayed.index
          StreamSnapshot.Built(
            index,
            s"${replayed.mode.describe} in ${replayed.millis} ms",
            owned = !IndexCache.holds(spark, at.segment.paths.root, index)
          )
        }
        val wanted = firstFilesWanted
        val first =
          if (
            !fromStart || wanted <= 0 || wanted > settings.snapshotSliceFiles ||
            !policy.replaysDistributed || policy.cachedState(needStats = false).isDefined
          ) None
          else {
            val started = System.nanoTime()
            val replay =
              new DistributedReplay(spark, at.segment, conf.replay, false, Some(policy.entry))
            replay.firstFiles(policy.entry, wanted.toInt).map { case (rows, how) =>
              val ms = (System.nanoTime() - started) / 1000000
              StreamSnapshot.First(rows, policy.entry, s"$how, in $ms ms")
            }
          }
        val s = new StreamSnapshot(
          spark,
          build,
          first,
          at.segment.paths,
          partitionSchema,
          settings.storageLevel,
          settings.snapshotSliceFiles
        )
        snapshot = Some((version, s))
        s
    }
  }

  /** Files and bytes of the snapshot still to read after `consumed`. */
  def snapshotBacklog(consumed: StreamOffset): Option[(Long, Long)] = snapshot.collect {
    case (v, s) if v == consumed.version => s.remaining(consumed.index)
  }

  def snapshotDescription: String = snapshot.map(_._2.description).getOrElse("none")

  def releaseSnapshot(): Unit = synchronized {
    snapshot.foreach { case (_, s) => s.release() }
    snapshot = None
  }
}
