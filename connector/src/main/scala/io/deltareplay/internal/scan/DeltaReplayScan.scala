package io.deltareplay.internal.scan

import java.util.OptionalLong

import io.deltareplay.internal.index.ReplayResult
import io.deltareplay.internal.log.{LogReader, TableSnapshot}
import io.deltareplay.internal.planning.{PlanResult, ReadPolicy, ScanPlanning}
import io.deltareplay.internal.read.{DeltaReaderFactory, FileMetadata}
import io.deltareplay.internal.skipping.{FileFilter, PushedFilters}
import io.deltareplay.internal.streaming.DeltaReplayMicroBatchStream
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{
  AttributeReference,
  ExprId,
  Expression,
  V2ExpressionUtils
}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A batch scan of one pinned table version, equal to another scan of the same table version, read
 * schema, pushed filters, runtime filters and settings (as Spark's `FileScan` and Iceberg's scans
 * are, so that Spark can reuse exchanges and subqueries). Its fields are final; the one thing Spark
 * changes on a scan, its runtime filters ([[filter]], dynamic partition pruning), is part of its
 * equality, and what planning computes is kept apart ([[DeltaReplayScan.Planned]]), not part of
 * what the scan is. Planning happens once, lazily, when Spark asks for partitions or statistics
 * (again only for new runtime filters); [[description]] shows what was pushed down without
 * planning, and what replay and skipping did once the scan has planned.
 *
 * @param replayedBefore
 *   a replay the scan builder already ran (for aggregates from statistics); reused, not compared
 */
private[deltareplay] final case class DeltaReplayScan(
    snapshot: TableSnapshot,
    conf: ReadConf,
    readDataSchema: StructType,
    readPartitionSchema: StructType,
    metadataSchema: Option[StructType],
    filters: PushedFilters
)(spark: SparkSession, replayedBefore: Option[ReplayResult])
    extends Scan
    with SupportsReportStatistics
    with SupportsRuntimeV2Filtering {

  private lazy val policy = ReadPolicy(spark, snapshot, conf.planning)

  /** This scan's planning over the snapshot index; the index is got once. */
  lazy val planning: ScanPlanning = policy.planner(needStats, replayedBefore)

  private def needStats: Boolean = conf.dataSkipping && filters.skipping.nonEmpty

  /** Partition filters Spark found at run time (dynamic partition pruning): part of equality. */
  @volatile private var runtimeFilters: Seq[Expression] = Nil

  /** What planning computed for this scan (not part of its equality). */
  private val done = new DeltaReplayScan.Planned

  /** The plan for the current runtime filters (planned on first use, then kept). */
  def planned: PlanResult = done.synchronized {
    done.plan match {
      case Some((filters, plan)) if filters == runtimeFilters => plan
      case _ =>
        val withRuntime = filters.copy(partition = filters.partition ++ runtimeFilters)
        val filter = FileFilter(policy.entry, withRuntime, conf.dataSkipping)
        val plan = planning.plan(filter, readPartitionSchema, owner = this)
        done.plan = Some(runtimeFilters -> plan)
        plan
    }
  }

  /** The index on the driver, when this scan plans there (got if it was not yet). */
  def driverReplay: Option[ReplayResult] =
    Some(planning.replay).filter(_.index.onDriver)

  /** The planned scan's figures, without planning (None until it has planned). */
  def plannedMetrics: Option[ScanMetrics] = done.plan.map(p => metricsOf(p._2))

  /** The planned scan's figures (plans if it has not). */
  def metrics: ScanMetrics = metricsOf(planned)

  private def metricsOf(p: PlanResult): ScanMetrics =
    ScanMetrics(
      table = snapshot.table,
      version = snapshot.version,
      replayMode = p.replay.mode.describe,
      logSegment = snapshot.segment.describe,
      actionsReplayed = p.replay.actionsReplayed,
      liveFiles = p.replay.liveFiles,
      filesAfterPartitionPruning = p.planned.filesAfterPruning,
      filesAfterSkipping = p.planned.filesAfterSkipping,
      replayMillis = p.replay.millis,
      planMillis = p.planned.planMillis,
      snapshotMillis = snapshot.loadMillis,
      replayTasks = p.replay.tasks,
      planning = p.planned.planning,
      index = p.replay.index,
      checkpointLayout = layout,
      narrowedReason = p.narrowing
    )

  /** What the version's log is made of (checkpoint kind and statistics, commits, checksum). */
  private lazy val layout: String =
    try new LogReader(spark, snapshot.segment, conf.log).layout()
    catch { case scala.util.control.NonFatal(e) => s"unknown (${e.getClass.getSimpleName})" }

  // Spark resolves these against the scan relation's output, so only partition columns that
  // survived column pruning can be offered for runtime (DPP) filtering.
  override def filterAttributes(): Array[NamedReference] = {
    val read = readPartitionSchema.fieldNames.map(_.toLowerCase(java.util.Locale.ROOT)).toSet
    snapshot.partitionColumns
      .filter(c => read.contains(c.toLowerCase(java.util.Locale.ROOT)))
      .map(c => Expressions.column(DeltaReplayScan.quoted(c)): NamedReference)
      .toArray
  }

  override def filter(predicates: Array[Predicate]): Unit = {
    val converted = predicates.toSeq
      .flatMap(p => V2ExpressionUtils.toCatalyst(p))
      .map(_.transform { case u: UnresolvedAttribute =>
        val field = snapshot.schema(u.nameParts.last)
        AttributeReference(field.name, field.dataType, field.nullable)()
      })
      .filter(PushedFilters.evaluable)
    if (converted.nonEmpty) runtimeFilters = runtimeFilters ++ converted
  }

  override def readSchema(): StructType = StructType(
    readDataSchema ++ readPartitionSchema ++
      metadataSchema.map(m => StructField(FileMetadata.Column, m, nullable = false))
  )

  override def description(): String = {
    def list(es: Iterable[Any]) = es.mkString("[", ", ", "]")
    val pushed =
      s"PartitionFilters: ${list(filters.partition)}, SkippingFilters: ${list(filters.skipping)}, " +
        s"PushedFilters: ${list(filters.parquet)}, " +
        s"RuntimePartitionFilters: ${list(runtimeFilters)}, ReadSchema: ${readSchema().simpleString}"
    val done = plannedMetrics.fold("")(m => s" [${m.describe}]")
    s"DeltaReplayScan ${snapshot.table} v${snapshot.version}$done $pushed"
  }

  override def supportedCustomMetrics(): Array[CustomMetric] = ScanMetrics.supported

  override def reportDriverMetrics(): Array[CustomTaskMetric] =
    plannedMetrics.fold(Array.empty[CustomTaskMetric])(_.driverMetrics)

  override def toBatch: Batch = new DeltaReplayBatch(this)

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    done.streamed = true
    new DeltaReplayMicroBatchStream(spark, snapshot, conf.stream)
  }

  /**
   * The reader factory of the planned scan, made once per plan: Spark asks each copy of its scan
   * node for one, and each factory broadcasts its Hadoop configuration.
   */
  def readerFactory(): PartitionReaderFactory = done.synchronized {
    val plan = planned
    done.factory match {
      case Some((p, factory)) if p eq plan => factory
      case _ =>
        val factory = DeltaReaderFactory.create(
          spark,
          conf.sparkSettings.sql,
          snapshot,
          readDataSchema,
          readPartitionSchema,
          filters.parquet,
          plan.planned.hasDeletionVectors,
          // the layout the index on the executors wrote its manifests in
          manifests = if (plan.onExecutors) Some(policy.entry) else None,
          metadata = metadataSchema.getOrElse(new StructType()),
          shareHadoopConf = conf.shareHadoopConf
        )
        done.factory = Some(plan -> factory)
        factory
    }
  }

  override def estimateStatistics(): Statistics =
    if (done.streamed) {
      // Spark asks a micro-batch relation's scan for statistics; planning the whole table version
      // for them would cost the first micro-batch a full batch plan
      new Statistics {
        override def sizeInBytes(): OptionalLong = OptionalLong.empty()
        override def numRows(): OptionalLong = OptionalLong.empty()
      }
    } else batchStatistics

  private def batchStatistics: Statistics = {
    val p = planned.planned
    // the metadata columns read count in the whole row too, as in V1's relation that reads them
    val metadata = metadataSchema.toSeq.flatMap(_.fields)
    val size = DeltaReplayScan.readSize(
      p.bytesAfterSkipping,
      conf.sparkSettings.fileCompressionFactor,
      all = snapshot.meta.schema.fields.toSeq ++ metadata,
      read = readDataSchema.fields.toSeq ++ readPartitionSchema.fields ++ metadata
    )
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(size)
      override def numRows(): OptionalLong =
        p.rowsAfterSkipping.fold(OptionalLong.empty())(OptionalLong.of)
    }
  }

  override def equals(o: Any): Boolean = o match {
    case s: DeltaReplayScan =>
      snapshot.table == s.snapshot.table && snapshot.version == s.snapshot.version &&
      snapshot.meta.tableId == s.snapshot.meta.tableId && conf == s.conf &&
      readDataSchema == s.readDataSchema && readPartitionSchema == s.readPartitionSchema &&
      metadataSchema == s.metadataSchema && filters == s.filters &&
      runtimeFilterSet == s.runtimeFilterSet
    case _ => false
  }

  /** The runtime filters as a set of canonical expressions (their order does not matter). */
  private def runtimeFilterSet: Set[Expression] =
    runtimeFilters
      .map(_.transform { case a: AttributeReference => a.withExprId(ExprId(0)) }.canonicalized)
      .toSet

  override def hashCode(): Int =
    (
      snapshot.table,
      snapshot.version,
      readDataSchema,
      readPartitionSchema,
      filters,
      runtimeFilterSet
    )
      .hashCode()
}

private[deltareplay] object DeltaReplayScan {

  /**
   * The size a scan reports to Spark for `bytes` of files (after skipping) when it reads the
   * columns `read` of a table whose rows hold `all`: as V1's plan comes to it. V1 reports the
   * files' size times `fileCompressionFactor` for the whole relation, and the projection of the
   * read columns above it scales that by the width of a row read to the width of a whole row, each
   * 8 bytes plus its columns' default sizes (`SizeInBytesOnlyStatsPlanVisitor`); so the join
   * strategies Spark picks from sizes (a broadcast under `autoBroadcastJoinThreshold`) are V1's.
   * Unscaled, TPC-H Q8, Q9, Q17 and Q20 at SF 10 sort-merged joins V1 broadcasts (1.14-1.6x V1's
   * time).
   */
  def readSize(
      bytes: Long,
      compression: Double,
      all: Seq[StructField],
      read: Seq[StructField]
  ): Long = {
    def width(fields: Seq[StructField]) =
      8 + fields.iterator.map(f => BigInt(f.dataType.defaultSize)).sum
    val relation = BigInt((compression * bytes).toLong)
    (relation * width(read) / width(all)).min(BigInt(Long.MaxValue)).toLong
  }

  /** What planning computed for one scan object (guarded by itself). */
  private[scan] final class Planned {

    /** The plan of the runtime filters it was made for. */
    var plan: Option[(Seq[Expression], PlanResult)] = None

    /** The reader factory of a plan (made once per plan). */
    var factory: Option[(PlanResult, PartitionReaderFactory)] = None

    /** Set when Spark reads the scan as a stream: it is then never planned as a batch. */
    @volatile var streamed = false
  }

  /** A column name as one quoted identifier (names such as `p;q=` or `a.b` parse as themselves). */
  def quoted(name: String): String = "`" + name.replace("`", "``") + "`"
}

/** The batch of a [[DeltaReplayScan]]: its planned partitions; all planning stays in the scan. */
private[deltareplay] final case class DeltaReplayBatch(scan: DeltaReplayScan) extends Batch {
  override def planInputPartitions(): Array[InputPartition] = scan.planned.planned.partitions
  override def createReaderFactory(): PartitionReaderFactory = scan.readerFactory()
}
