package io.deltareplay.internal

import java.sql.Timestamp
import java.util.{Locale, Optional}

import scala.jdk.CollectionConverters._

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => OffsetV2}
import org.apache.spark.sql.types.StructType
import org.apache.spark.storage.StorageLevel

/**
 * The streaming source: first the files live at the start version (the initial snapshot, see
 * [[SnapshotIndex]]), then the data-changing adds of each later commit in log order. Offsets are
 * [[StreamOffset]]s, compatible with delta-spark's DeltaSource. The DSv2 surface only: what to read
 * next is worked out by [[StreamPlanner]].
 */
private[deltareplay] class DeltaReplayMicroBatchStream(
    spark: SparkSession,
    start: TableSnapshot,
    options: StreamOptions,
    conf: ReadConf,
    storageLevel: StorageLevel
) extends MicroBatchStream
    with SupportsAdmissionControl
    with SupportsTriggerAvailableNow
    with ReportsSourceMetrics
    with Logging {

  private val planner = new StreamPlanner(spark, start, options, conf, storageLevel)
  @volatile private var availableNowBound: Option[Long] = None
  @volatile private var lastAdmittedFiles = 0L

  override def initialOffset(): OffsetV2 = {
    val id = start.meta.tableId
    options.startingVersion.map(_.toLowerCase(Locale.ROOT)) match {
      case Some("latest") => StreamOffset(id, planner.latestVersion() + 1, StreamOffset.Base, false)
      case Some(v) => StreamOffset(id, v.toLong, StreamOffset.Base, false)
      case None =>
        options.startingTimestamp match {
          case Some(ts) =>
            val tz = spark.sessionState.conf.sessionLocalTimeZone
            val micros = StreamOptions.timestampMicros(ts, tz).getOrElse {
              throw Errors.badOption(StreamOptions.StartingTimestamp, ts, "a timestamp or date")
            }
            val time = new Timestamp(micros / 1000)
            val v = DeltaAdapter.firstVersionAtOrAfter(spark, start.tablePath, time)
            StreamOffset(id, v, StreamOffset.Base, false)
          case None => StreamOffset(id, start.version, StreamOffset.Base, true)
        }
    }
  }

  override def deserializeOffset(json: String): OffsetV2 =
    StreamOffset.parse(json, start.table, start.meta.tableId)

  /** Spark hands back restored offsets in their serialized form. */
  private def offset(o: OffsetV2): StreamOffset = o match {
    case s: StreamOffset => s
    case other => StreamOffset.parse(other.json(), start.table, start.meta.tableId)
  }

  override def getDefaultReadLimit: ReadLimit = {
    val files = options.maxFilesPerTrigger.map(ReadLimit.maxFiles)
    val bytes = options.maxBytesPerTrigger.map(ReadLimit.maxBytes)
    (files, bytes) match {
      case (Some(f), Some(b)) => ReadLimit.compositeLimit(Array(f, b))
      case (Some(f), None) => f
      case (None, Some(b)) => b
      case (None, None) => ReadLimit.maxFiles(StreamOptions.DefaultMaxFiles)
    }
  }

  override def latestOffset(): OffsetV2 =
    throw new UnsupportedOperationException("latestOffset(start, limit) is used instead")

  override def latestOffset(startOffset: OffsetV2, limit: ReadLimit): OffsetV2 = {
    val from = offset(startOffset)
    val (maxFiles, maxBytes) = limits(limit)
    val bound = availableNowBound.getOrElse(planner.latestVersion())
    val (end, admitted) = planner.admit(from, bound, maxFiles, maxBytes)
    lastAdmittedFiles = admitted
    end
  }

  private def limits(limit: ReadLimit): (Long, Long) = limit match {
    case f: ReadMaxFiles => (f.maxFiles().toLong, Long.MaxValue)
    case b: ReadMaxBytes => (Long.MaxValue, b.maxBytes())
    case c: CompositeReadLimit =>
      c.getReadLimits.map(limits).foldLeft((Long.MaxValue, Long.MaxValue)) { case (a, b) =>
        (math.min(a._1, b._1), math.min(a._2, b._2))
      }
    case _ => (Long.MaxValue, Long.MaxValue) // ReadAllAvailable (Trigger.Once)
  }

  override def planInputPartitions(
      startOffset: OffsetV2,
      endOffset: OffsetV2
  ): Array[InputPartition] = {
    val files = planner.filesBetween(offset(startOffset), offset(endOffset))
    ScanPlanner.splits(spark, start, files).map(p => p: InputPartition)
  }

  override def createReaderFactory(): PartitionReaderFactory = {
    val base = DeltaReaderFactory.create(
      spark,
      start,
      planner.dataSchema,
      planner.partitionSchema,
      Array.empty,
      deletes = true
    )
    // Rows come out in the table's column order, as the streaming relation expects.
    val produced = (planner.dataSchema ++ planner.partitionSchema).map(_.name)
    base.copy(columnar = false, outputOrdinals = start.schema.fieldNames.map(produced.indexOf))
  }

  override def commit(end: OffsetV2): Unit = {
    val o = offset(end)
    if (!o.initialSnapshot) planner.releaseSnapshot()
  }

  override def stop(): Unit = planner.releaseSnapshot()

  override def prepareForTriggerAvailableNow(): Unit =
    availableNowBound = Some(planner.latestVersion())

  override def metrics(latestConsumedOffset: Optional[OffsetV2]): java.util.Map[String, String] = {
    val consumed = Option(latestConsumedOffset.orElse(null)).map(offset)
    val snapshotBacklog = consumed.filter(_.initialSnapshot).flatMap(planner.snapshotBacklog)
    Map(
      "filesAdmitted" -> lastAdmittedFiles.toString,
      "snapshotPhase" -> consumed.forall(_.initialSnapshot).toString,
      "backlogSnapshotFiles" -> snapshotBacklog.map(_._1.toString).getOrElse("0"),
      "backlogSnapshotBytes" -> snapshotBacklog.map(_._2.toString).getOrElse("0"),
      "latestTableVersion" -> planner.latestVersion().toString,
      "snapshot" -> planner.snapshotDescription
    ).asJava
  }

  override def toString: String = s"DeltaReplayMicroBatchStream[${start.table}]"
}

/**
 * What a stream reads next: walks the initial snapshot and then the commits, applying the
 * change-commit rules, in offset order.
 */
private[deltareplay] class StreamPlanner(
    spark: SparkSession,
    start: TableSnapshot,
    options: StreamOptions,
    conf: ReadConf,
    storageLevel: StorageLevel
) {
  private val meta = start.meta
  private val tableId = meta.tableId
  private val hadoopConf = spark.sessionState.newHadoopConf()
  private val partitionColumns = meta.partitionColumns.toSet
  val dataSchema: StructType = StructType(start.schema.filterNot(f => partitionColumns(f.name)))
  val partitionSchema: StructType = StructType(start.schema.filter(f => partitionColumns(f.name)))

  @volatile private var snapshot: Option[(Long, StreamSnapshot, Option[TableIndex])] = None
  private lazy val entry = FileEntry(meta, spark.sessionState.conf.sessionLocalTimeZone)
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
    val it = items(from, bound)
    var stop = false
    while (!stop && it.hasNext)
      it.next() match {
        case VersionEnd(o) => end = o
        case FileItem(o, f) =>
          // As DeltaSource: a file is admitted while there is capacity before taking it, so the
          // file that crosses the byte limit is admitted, and at least one file always is.
          if (files >= maxFiles || bytes >= maxBytes) stop = true
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
        val index = snapshotAt(from.version)
        val batch = index.readChunk
        Iterator
          .iterate(from.index)(_ + batch)
          .takeWhile(_ < index.size - 1)
          .flatMap(lo => index.range(lo, lo + batch))
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

  /** The items of one commit after the change-commit rules. */
  private def commit(version: Long): Seq[Item] = {
    val status = listing.commits.getOrElse(
      version, {
        listing = LogSegment.list(start.tablePath, hadoopConf)
        listing.commits.getOrElse(version, throw Errors.streamLogGone(start.table, version))
      }
    )
    val segment = start.segment.onlyCommits(Seq(status), version)
    val reader = new LogReader(spark, segment)
    reader.commitProtocolAndMetadata().foreach {
      case Right(m) =>
        import DeltaAdapter.StreamSchemaChange._
        DeltaAdapter.streamSchemaChange(spark, meta, meta.withMetadata(m), start.schema) match {
          case Compatible => ()
          case Retryable => throw Errors.schemaChangedInStream(start.table, version)
          case NonRetryable => throw Errors.incompatibleSchemaChangeInStream(start.table, version)
        }
      case Left(p) =>
        DeltaAdapter.checkReadable(start.table, meta.withProtocol(p))
    }
    val actions = reader.commitActions(needStats = false).toSeq
    val adds = actions.filter(a => a.isAdd && a.dataChange)
    val changes = actions.exists(a => !a.isAdd && a.dataChange)
    val emitted =
      if (!changes) adds
      else if (options.skipChangeCommits) Nil
      else if (options.ignoreChanges) adds
      else if (options.ignoreDeletes && adds.isEmpty) Nil
      else throw Errors.dataChangeInSource(start.table, version)
    emitted.zipWithIndex.map { case (a, i) =>
      FileItem(StreamOffset(tableId, version, i.toLong, false), keep(toEntry(a.toLiveFile())))
    }
  }

  /**
   * The initial snapshot at `version`, read off the snapshot index of that version: the session's
   * cached one when it serves, else one built for the stream (kept persisted on the executors while
   * the stream reads its snapshot, released after).
   */
  private def snapshotAt(version: Long): StreamSnapshot = synchronized {
    snapshot match {
      case Some((v, s, _)) if v == version => s
      case _ =>
        releaseSnapshot()
        val at =
          if (version == start.version) start
          else TableSnapshot.load(spark, start.tablePath.toString, Some(version), None)
        val policy = ReadPolicy(spark, at, conf)
        val index = policy.index(needStats = false, keepPersisted = Some(storageLevel)).index
        val owned =
          if (IndexCache.holds(spark, at.segment.paths.root, index)) None else Some(index)
        val s = new StreamSnapshot(
          spark,
          index,
          at.segment.paths,
          partitionSchema,
          storageLevel,
          conf.snapshotSliceFiles
        )
        snapshot = Some((version, s, owned))
        s
    }
  }

  /** Files and bytes of the snapshot still to read after `consumed`. */
  def snapshotBacklog(consumed: StreamOffset): Option[(Long, Long)] = snapshot.collect {
    case (v, s, _) if v == consumed.version => s.remaining(consumed.index)
  }

  def snapshotDescription: String = snapshot.map(_._2.description).getOrElse("none")

  def releaseSnapshot(): Unit = synchronized {
    snapshot.foreach { case (_, s, owned) =>
      s.release()
      owned.foreach(_.release())
    }
    snapshot = None
  }
}
