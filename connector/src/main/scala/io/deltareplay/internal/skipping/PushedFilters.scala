package io.deltareplay.internal.skipping

import org.apache.spark.sql.execution.datasources.FileFormat
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  Expression,
  InSet,
  Literal,
  SubqueryExpression,
  Unevaluable
}
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.sources.Filter

/**
 * The filters Spark offers a scan, sorted by who may use them, as Spark's own file sources sort
 * them:
 *
 * @param partition
 *   on partition columns only, deterministic and evaluable on the driver: applied exactly by
 *   partition pruning; Spark does not evaluate them again
 * @param skipping
 *   every other deterministic, evaluable filter (data columns, or data and partition columns
 *   mixed): used to skip files ([[DataSkipping]]); Spark evaluates them again after the scan
 * @param parquet
 *   the filters on data columns only, translated for the Parquet reader's row-group filtering (a
 *   filter that names a partition column must never reach it: the file has no such column)
 * @param postScan
 *   what Spark must evaluate after the scan: everything but `partition`
 */
private[deltareplay] final case class PushedFilters(
    partition: Seq[Expression],
    skipping: Seq[Expression],
    parquet: Array[Filter],
    postScan: Seq[Expression]
) {
  override def equals(o: Any): Boolean = o match {
    case p: PushedFilters =>
      partition.toSet == p.partition.toSet && skipping.toSet == p.skipping.toSet &&
      parquet.toSet == p.parquet.toSet
    case _ => false
  }
  override def hashCode(): Int = (partition.toSet, skipping.toSet, parquet.toSet).hashCode()
}

private[deltareplay] object PushedFilters {
  val none: PushedFilters = PushedFilters(Nil, Nil, Array.empty, Nil)

  /**
   * Sorts `filters`. `parquetPushdown` is off where the Parquet column names differ from the
   * table's (column mapping).
   */
  def split(
      filters: Seq[Expression],
      partitionColumns: Set[String],
      parquetPushdown: Boolean
  ): PushedFilters = {
    val isPartition = partitionColumns.map(_.toLowerCase)
    def onPartitions(f: Expression) =
      f.references.nonEmpty && f.references.forall(a => isPartition(a.name.toLowerCase))
    // data columns only: not a partition column, not `_metadata` (no Parquet file holds either)
    def onData(f: Expression) = f.references.forall { a =>
      !isPartition(a.name.toLowerCase) && a.name != FileFormat.METADATA_NAME
    }
    val usable = filters.filter(evaluable)
    val (partition, skipping) = usable.partition(onPartitions)
    val parquet =
      if (!parquetPushdown) Array.empty[Filter]
      else
        skipping
          .filter(f => onData(f) && parquetSafe(f))
          .flatMap(f => SparkBridge.translateFilter(f))
          .toArray
    PushedFilters(partition, skipping, parquet, filters.filterNot(partition.contains))
  }

  /**
   * Whether Parquet's own filtering of `f` agrees with Spark's semantics. It compares floating
   * point values by their bits in places (dictionary filtering of `IN`), so -0.0 does not find a
   * row group holding 0.0 and NaN behaves differently: a filter with a floating-point zero or NaN
   * literal is kept from it (Spark evaluates it after the scan either way).
   */
  def parquetSafe(f: Expression): Boolean = !f.exists {
    case Literal(d: Double, _) => d == 0.0 || d.isNaN
    case Literal(x: Float, _) => x == 0.0f || x.isNaN
    case InSet(_, values) =>
      values.exists {
        case d: Double => d == 0.0 || d.isNaN
        case x: Float => x == 0.0f || x.isNaN
        case _ => false
      }
    case _ => false
  }

  /**
   * Whether the driver (or a planning task) can evaluate `f`: deterministic, no subquery, nothing
   * only Spark's execution can evaluate (a Python UDF, an aggregate).
   */
  def evaluable(f: Expression): Boolean =
    f.deterministic && !SubqueryExpression.hasSubquery(f) && !f.exists {
      case _: Attribute => false
      case _: Unevaluable => true
      case _ => false
    }
}
