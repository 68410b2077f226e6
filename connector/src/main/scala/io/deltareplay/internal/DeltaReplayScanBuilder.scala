package io.deltareplay.internal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, SubqueryExpression}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownRequiredColumns}
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
    with SupportsPushDownCatalystFilters {

  private val conf = ReadConf(spark, options)
  private val partitionColumns = snapshot.partitionColumns.map(_.toLowerCase).toSet
  private var required: StructType = snapshot.schema
  private var partitionFilters: Seq[Expression] = Nil
  private var dataFilters: Seq[Expression] = Nil

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

  override def build(): Scan = {
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
      options
    )
  }
}
