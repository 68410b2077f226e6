package io.deltareplay.internal.streaming

import java.sql.Timestamp
import java.util.{Locale, Optional}

import scala.jdk.CollectionConverters._

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.planning.ScanPlanner
import io.deltareplay.internal.read.DeltaReaderFactory
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => OffsetV2}

/**
 * The streaming source: first the files live at the start version (the initial snapshot, see
 * [[StreamSnapshot]]), then the data-changing adds of each later commit in log order. Offsets are
 * [[StreamOffset]]s, compatible with delta-spark's DeltaSource. The DSv2 surface only: what to read
 * next is worked out by [[StreamPlanner]].
 */
private[deltareplay] class DeltaReplayMicroBatchStream(
    spark: SparkSession,
    start: TableSnapshot,
    settings: StreamSettings
) extends MicroBatchStream
    with SupportsAdmissionControl
    with SupportsTriggerAvailableNow
    with ReportsSourceMetrics
    with Logging {

  private val planner = new StreamPlanner(spark, start, settings)
  private def options: StreamOptions = settings.options
  @volatile private var availableNowBound: Option[Long] = None
  @volatile private var lastAdmittedFiles = 0L

  /** The offset this stream starts from when its checkpoint has none (once asked). */
  @volatile private var initial: Option[StreamOffset] = None

  override def initialOffset(): OffsetV2 = {
    val o = startingOffset()
    initial = Some(o)
    o
  }

  private def startingOffset(): StreamOffset = {
    val id = start.meta.tableId
    options.startingVersion.map(_.toLowerCase(Locale.ROOT)) match {
      case Some("latest") => StreamOffset(id, planner.latestVersion() + 1, StreamOffset.Base, false)
      case Some(v) => StreamOffset(id, v.toLong, StreamOffset.Base, false)
      case None =>
        options.startingTimestamp match {
          case Some(ts) =>
            val micros =
              StreamOptions.timestampMicros(ts, settings.planning.log.timeZone).getOrElse {
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
    planner.checkStart(from, fresh = initial.contains(from))
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
    planner.checkStart(offset(startOffset), fresh = initial.contains(offset(startOffset)))
    val files = planner.filesBetween(offset(startOffset), offset(endOffset))
    ScanPlanner
      .splits(settings.planning.log.sparkSettings, start, files)
      .map(p => p: InputPartition)
  }

  override def createReaderFactory(): PartitionReaderFactory = {
    val base = DeltaReaderFactory.create(
      spark,
      settings.planning.log.sparkSettings.sql,
      start,
      planner.dataSchema,
      planner.partitionSchema,
      Array.empty,
      deletes = true,
      shareHadoopConf = settings.shareHadoopConf
    )
    // Rows come out in the table's column order, as the streaming relation expects.
    val produced = (planner.dataSchema ++ planner.partitionSchema).map(_.name)
    base.copy(outputOrdinals = start.schema.fieldNames.map(produced.indexOf))
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
