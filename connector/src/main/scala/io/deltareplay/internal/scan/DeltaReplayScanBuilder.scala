package io.deltareplay.internal.scan

import io.deltareplay.internal.index.ReplayResult
import io.deltareplay.internal.log.{FileEntry, TableSnapshot}
import io.deltareplay.internal.planning.{MetadataAggregates, ReadPolicy}
import io.deltareplay.internal.planning.MetadataAggregates.CountStarOf
import io.deltareplay.internal.read.FileMetadata
import io.deltareplay.internal.skipping.{FileFilter, PushedFilters}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation
import org.apache.spark.sql.connector.expressions.filter.Predicate
import io.deltareplay.internal.compat.SparkShim
import org.apache.spark.sql.connector.read.{
  Scan,
  SupportsPushDownAggregates,
  SupportsPushDownRequiredColumns
}
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types.StructType

/**
 * Column pruning, filter pushdown ([[PushedFilters]]: partition filters applied exactly by pruning,
 * the rest used to skip files and re-evaluated by Spark) and aggregates from statistics. Spark
 * offers the filters as Catalyst expressions (`SupportsPushDownCatalystFilters`, through the
 * per-line `SparkShim.CatalystFiltersScanBuilder`: Spark 4.0 offers them to a `FileScanBuilder`
 * only).
 */
private[deltareplay] class DeltaReplayScanBuilder(
    spark: SparkSession,
    snapshot: TableSnapshot,
    conf: ReadConf
) extends SparkShim.CatalystFiltersScanBuilder(spark)
    with SupportsPushDownRequiredColumns
    with SupportsPushDownAggregates {

  private val policy = ReadPolicy(spark, snapshot, conf.planning)
  private def entry: FileEntry = policy.entry
  private var required: StructType = snapshot.schema
  private var filters: PushedFilters = PushedFilters.none
  private var replayed: Option[ReplayResult] = None
  private var aggregate: Option[MetadataAggregates.Answer] = None
  private var aggregateReplay = ""

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema

  override def pushFilters(pushed: Seq[Expression]): Seq[Expression] = {
    filters = PushedFilters.split(
      pushed,
      snapshot.partitionColumns.toSet,
      parquetPushdown = !snapshot.meta.usesColumnMapping
    )
    filters.postScan
  }

  override def pushedFilters: Array[Predicate] =
    (filters.partition ++ filters.skipping).flatMap(f => SparkBridge.translatePredicate(f)).toArray

  /**
   * Answers the aggregation from the log's statistics when it can ([[MetadataAggregates]]); Spark
   * offers it only when no filter remains for after the scan (so every pushed filter is a partition
   * filter). With partition filters and no index of the version at hand, the answer comes from the
   * files they may match ([[ReadPolicy.narrowedIndex]]: a narrowed read, or one an earlier query
   * with the same filters kept) and the whole index is built in the background, as for a filtered
   * scan; a count of some partitions of a big table does not build the whole index in the
   * foreground. When every function is `count(*)`, with or without partition filters, that read is
   * a count's ([[ReadPolicy.forCount]]: `numRecords` the only statistic read), and where the
   * checkpoint is read on the fast path the replay's tasks count the files they read, with no index
   * built ([[ReadPolicy.countInTasks]]). The replay this needs (with statistics) is kept for the
   * ordinary scan if the answer is no; a narrowed one is not (the scan narrows by its own filter),
   * nor a count's.
   */
  override def pushAggregation(aggregation: Aggregation): Boolean = {
    if (!conf.metadataAggregates || filters.postScan.nonEmpty) return false
    val functions = MetadataAggregates.functions(aggregation, entry).getOrElse(return false)
    val filter = FileFilter(entry, filters, skipping = false)
    // counts only: the narrowed read parses nothing of the statistics but numRecords, and on the
    // fast path the replay's tasks count, with no index built
    val counts = functions.forall(_ == CountStarOf())
    val narrowing = if (counts) policy.forCount else policy
    if (counts) narrowing.countInTasks(filter, functions) match {
      case Right((answer, how)) =>
        aggregate = answer
        aggregateReplay = how
        return answer.isDefined
      case Left(_) =>
    }
    val replay =
      narrowing.narrowedIndex(filter, needStats = true).getOrElse(policy.index(needStats = true))
    aggregate = MetadataAggregates.answerWhere(spark, snapshot, aggregation, replay.index, filter)
    aggregateReplay = replay.index.answeredBy(replay.mode)
    if (aggregate.isDefined || !replay.narrowed) replayed = Some(replay)
    aggregate.isDefined
  }

  override def build(): Scan = aggregate match {
    case Some(answer) =>
      new StatsAggregateScan(
        snapshot,
        answer,
        aggregateReplay,
        filters.partition.mkString("[", ", ", "]")
      )
    case None =>
      val isPartition = snapshot.partitionColumns.map(_.toLowerCase).toSet
      val (metadata, columns) = required.partition(_.name == FileMetadata.Column)
      val (partitions, data) = columns.partition(f => isPartition(f.name.toLowerCase))
      DeltaReplayScan(
        snapshot,
        conf,
        StructType(data),
        StructType(partitions),
        metadata.headOption.map(_.dataType.asInstanceOf[StructType]),
        filters
      )(spark, replayed)
  }
}
