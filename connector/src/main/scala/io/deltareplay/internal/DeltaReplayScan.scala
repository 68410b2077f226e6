package io.deltareplay.internal

import java.util.OptionalLong

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, V2ExpressionUtils}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.storage.StorageLevel
import org.apache.spark.sql.execution.datasources.parquet.{
  ParquetOptions,
  ParquetReadSupport,
  ParquetWriteSupport
}
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

/** What a scan's replay and planning did; shown by EXPLAIN and given to Python. */
private[deltareplay] case class ScanMetrics(
    table: String,
    version: Long,
    replayMode: String,
    logSegment: String,
    actionsReplayed: Long,
    liveFiles: Long,
    filesAfterPartitionPruning: Long,
    filesAfterSkipping: Long,
    replayMillis: Long,
    planMillis: Long,
    snapshotMillis: Long,
    replayTasks: Int,
    planning: String = "driver"
) {
  def toJson: String = {
    import ScanMetrics.quote
    s"""{"table":${quote(table)},"version":$version,"replayMode":${quote(replayMode)},""" +
      s""""logSegment":${quote(logSegment)},"actionsReplayed":$actionsReplayed,""" +
      s""""liveFiles":$liveFiles,"filesAfterPartitionPruning":$filesAfterPartitionPruning,""" +
      s""""filesAfterSkipping":$filesAfterSkipping,"replayMillis":$replayMillis,""" +
      s""""planMillis":$planMillis,"snapshotMillis":$snapshotMillis,"replayTasks":$replayTasks,""" +
      s""""planning":${quote(planning)}}"""
  }
}

private[deltareplay] object ScanMetrics {

  /** `s` as a JSON string literal. */
  def quote(s: String): String =
    "\"" + s.flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => f"\\u${c.toInt}%04x"
      case c => c.toString
    } + "\""
}

/**
 * A batch scan of one pinned table version. Plans lazily and once: replay (local or distributed),
 * then pruning and skipping, then splits. The Batch only wraps the planned splits.
 */
private[deltareplay] class DeltaReplayScan(
    spark: SparkSession,
    val snapshot: TableSnapshot,
    conf: ReadConf,
    readDataSchema: StructType,
    readPartitionSchema: StructType,
    partitionFilters: Seq[Expression],
    dataFilters: Seq[Expression],
    parquetFilters: Array[Filter],
    options: Map[String, String],
    replayedBefore: Option[ReplayResult] = None
) extends Scan
    with Batch
    with SupportsReportStatistics
    with SupportsRuntimeV2Filtering {

  private def needStats: Boolean = conf.dataSkipping && dataFilters.nonEmpty

  /**
   * Whether the file list stays on the executors ([[ExecutorPlanning]]); decided once. Then
   * [[replay]] is never run on the driver.
   */
  lazy val plansOnExecutors: Boolean =
    ExecutorPlanning.chosen(spark, snapshot, conf, needStats, replayedBefore.isDefined)

  /** The replay: one the builder already ran (it has statistics), or one run now. */
  lazy val replay: ReplayResult = {
    require(!plansOnExecutors, "a scan planned on the executors has no driver-side replay")
    replayedBefore.getOrElse(
      Replay.run(spark, snapshot.segment, snapshot.meta.tableId, conf, needStats)
    )
  }

  /** What the replay of executor-side planning did (set with each plan). */
  @volatile private var executorReplay: Option[ExecutorReplay] = None

  /** Partition filters Spark found at run time (dynamic partition pruning). */
  @volatile private var runtimeFilters: Seq[Expression] = Nil
  @volatile private var plannedCache: Option[(Seq[Expression], PlannedScan)] = None

  def planned: PlannedScan = synchronized {
    plannedCache match {
      case Some((filters, plan)) if filters == runtimeFilters => plan
      case _ =>
        val plan =
          if (plansOnExecutors) {
            val (plan, replayed) = ExecutorPlanning.plan(
              spark,
              snapshot,
              conf,
              partitionFilters ++ runtimeFilters,
              dataFilters,
              conf.dataSkipping,
              owner = this
            )
            executorReplay = Some(replayed)
            plan
          } else {
            ScanPlanner.plan(
              spark,
              snapshot,
              replay.files,
              readPartitionSchema,
              partitionFilters ++ runtimeFilters,
              dataFilters,
              conf.dataSkipping
            )
          }
        plannedCache = Some(runtimeFilters -> plan)
        plan
    }
  }

  // Spark resolves these against the scan relation's output, so only partition columns that
  // survived column pruning can be offered for runtime (DPP) filtering.
  override def filterAttributes(): Array[NamedReference] = {
    val read = readPartitionSchema.fieldNames.map(_.toLowerCase(java.util.Locale.ROOT)).toSet
    snapshot.partitionColumns
      .filter(c => read.contains(c.toLowerCase(java.util.Locale.ROOT)))
      .map(c => Expressions.column(c): NamedReference)
      .toArray
  }

  override def filter(predicates: Array[Predicate]): Unit = {
    val converted = predicates.toSeq
      .flatMap(p => V2ExpressionUtils.toCatalyst(p))
      .map(_.transform { case u: UnresolvedAttribute =>
        val field = snapshot.schema(u.nameParts.last)
        AttributeReference(field.name, field.dataType, field.nullable)()
      })
    if (converted.nonEmpty) runtimeFilters = runtimeFilters ++ converted
  }

  def metrics: ScanMetrics = {
    val p = planned
    val (mode, actions, live, replayMillis, tasks) = executorReplay match {
      case Some(r) if plansOnExecutors =>
        (s"${r.mode}, on the executors", r.actionsReplayed, r.liveFiles, r.millis, r.tasks)
      case _ =>
        (
          replay.mode,
          replay.actionsReplayed,
          replay.files.length.toLong,
          replay.millis,
          replay.replayTasks
        )
    }
    ScanMetrics(
      table = snapshot.table,
      version = snapshot.version,
      replayMode = mode,
      logSegment = snapshot.segment.describe,
      actionsReplayed = actions,
      liveFiles = live,
      filesAfterPartitionPruning = p.filesAfterPruning,
      filesAfterSkipping = p.filesAfterSkipping,
      replayMillis = replayMillis,
      planMillis = p.planMillis,
      snapshotMillis = snapshot.loadMillis,
      replayTasks = tasks,
      planning = p.planning
    )
  }

  override def readSchema(): StructType = StructType(readDataSchema ++ readPartitionSchema)

  override def description(): String = {
    val base = s"DeltaReplayScan ${snapshot.table} v${snapshot.version}"
    val filters =
      s"PartitionFilters: ${partitionFilters.mkString("[", ", ", "]")}, " +
        s"DataFilters: ${dataFilters.mkString("[", ", ", "]")}, " +
        s"RuntimePartitionFilters: ${runtimeFilters.mkString("[", ", ", "]")}, " +
        s"PushedFilters: ${parquetFilters.mkString("[", ", ", "]")}"
    val m = metrics
    s"$base [replay ${m.replayMode}: ${m.logSegment}, ${m.actionsReplayed} actions -> " +
      s"${m.liveFiles} live files in ${m.replayMillis} ms" +
      (if (m.replayTasks > 0) s" (${m.replayTasks} tasks)" else "") +
      s"; ${m.filesAfterPartitionPruning} after partition pruning, " +
      s"${m.filesAfterSkipping} after skipping; planned on the ${m.planning} in " +
      s"${m.planMillis} ms] $filters"
  }

  override def toBatch: Batch = this

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    val level = options
      .collectFirst { case (k, v) if k.equalsIgnoreCase(StreamingStorageLevel) => v }
      .orElse(spark.conf.getOption("spark.deltareplay." + StreamingStorageLevel))
      .map(v => StorageLevel.fromString(v.toUpperCase(java.util.Locale.ROOT)))
      .getOrElse(StorageLevel.MEMORY_AND_DISK)
    new DeltaReplayMicroBatchStream(spark, snapshot, StreamOptions(options), conf, level)
  }

  private def StreamingStorageLevel = "streaming.snapshotStorageLevel"

  override def planInputPartitions(): Array[InputPartition] = planned.partitions

  override def createReaderFactory(): PartitionReaderFactory =
    DeltaReaderFactory.create(
      spark,
      snapshot,
      readDataSchema,
      readPartitionSchema,
      parquetFilters,
      planned.hasDeletionVectors,
      withManifests = plansOnExecutors
    )

  override def estimateStatistics(): Statistics = {
    val p = planned
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(p.bytesAfterSkipping)
      override def numRows(): OptionalLong =
        p.rowsAfterSkipping.fold(OptionalLong.empty())(OptionalLong.of)
    }
  }
}
