package io.deltareplay.internal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, SubqueryExpression}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation
import org.apache.spark.sql.connector.read.{
  Scan,
  ScanBuilder,
  SupportsPushDownAggregates,
  SupportsPushDownRequiredColumns
}
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

/**
 * Column pruning and filter pushdown. Filters on partition columns only are applied exactly by
 * partition pruning (Spark does not re-evaluate them); every other deterministic filter drives
 * statistics skipping and Parquet row-group filtering, and Spark evaluates it again after the scan.
 */
private[deltareplay] class DeltaReplayScanBuilder(
    spark: SparkSession,
    snapshot: TableSnapshot,
    options: Map[String, String]
) extends ScanBuilder
    with SupportsPushDownRequiredColumns
    with SupportsPushDownCatalystFilters
    with SupportsPushDownAggregates {

  private val conf = ReadConf(spark, options)
  private val partitionColumns = snapshot.partitionColumns.map(_.toLowerCase).toSet
  private var required: StructType = snapshot.schema
  private var partitionFilters: Seq[Expression] = Nil
  private var dataFilters: Seq[Expression] = Nil
  private var replayed: Option[ReplayResult] = None
  private var aggregate: Option[MetadataAggregates.Answer] = None
  private var aggregateReplay = ""

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema

  override def pushFilters(filters: Seq[Expression]): Seq[Expression] = {
    val (onPartitions, rest) = filters.partition { f =>
      f.deterministic && !SubqueryExpression.hasSubquery(f) && f.references.nonEmpty &&
      f.references.forall(a => partitionColumns.contains(a.name.toLowerCase))
    }
    partitionFilters = onPartitions
    dataFilters = rest.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
    rest
  }

  override def pushedFilters: Array[Predicate] =
    (partitionFilters ++ dataFilters).flatMap(f => SparkBridge.translatePredicate(f)).toArray

  /**
   * Answers the aggregation from the log's statistics when it can ([[MetadataAggregates]]). The
   * replay this needs (with statistics) is kept for the ordinary scan if the answer is no.
   */
  override def pushAggregation(aggregation: Aggregation): Boolean = {
    if (!conf.metadataAggregates || dataFilters.nonEmpty) return false
    if (MetadataAggregates.functions(aggregation, snapshot).isEmpty) return false
    if (
      ExecutorPlanning.chosen(spark, snapshot, conf, needStats = true, replayedOnDriver = false)
    ) {
      // The file list is too big for the driver: fold the statistics where the files are.
      val answered =
        MetadataAggregates.answerOnExecutors(spark, snapshot, conf, aggregation, partitionFilters)
      aggregate = answered.map(_._1)
      aggregateReplay = answered.map(_._2).getOrElse("")
    } else {
      val replay =
        Replay.run(spark, snapshot.segment, snapshot.meta.tableId, conf, needStats = true)
      replayed = Some(replay)
      aggregateReplay = replay.mode
      val files = ScanPlanner.prunePartitions(spark, snapshot, replay.files, partitionFilters)
      aggregate = MetadataAggregates.answer(aggregation, files.toIndexedSeq, snapshot)
    }
    aggregate.isDefined
  }

  override def build(): Scan = aggregate match {
    case Some(answer) =>
      new MetadataAggregates.StatsAggregateScan(
        snapshot,
        answer,
        aggregateReplay,
        partitionFilters.mkString("[", ", ", "]")
      )
    case None => buildScan()
  }

  private def buildScan(): Scan = {
    val isPartition = (n: String) => partitionColumns.contains(n.toLowerCase)
    val readData = StructType(required.filterNot(f => isPartition(f.name)))
    val readPartitions = StructType(required.filter(f => isPartition(f.name)))
    val parquetFilters =
      if (snapshot.meta.usesColumnMapping) Array.empty[Filter]
      else dataFilters.flatMap(f => SparkBridge.translateFilter(f)).toArray[Filter]
    new DeltaReplayScan(
      spark,
      snapshot,
      conf,
      readData,
      readPartitions,
      partitionFilters,
      dataFilters,
      parquetFilters,
      options,
      replayed
    )
  }
}
