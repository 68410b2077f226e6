package io.deltareplay.internal.compat

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.{
  StreamingRelationV2,
  StreamingSourceIdentifyingName,
  Unassigned
}
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.execution.datasources.DataSource
import org.apache.spark.sql.execution.streaming.runtime.StreamingRelation
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The Spark API that differs between the Spark lines this connector builds for, Spark 4.2's side.
 * Each line has its own copy of this object, in `connector/src/main/scala-spark-<line>/` (the build
 * picks one: project/SparkLines.scala); every other source compiles unchanged on all lines. Keep it
 * to what a line cannot express otherwise: the copies have the same members with the same meaning.
 */
private[deltareplay] object SparkShim {

  /** How a plan names a streaming source: Spark 4.2 names each (`.name(...)`, or by position). */
  type SourceName = StreamingSourceIdentifyingName

  /** The name of a source the user did not name (Spark's analyzer names it later). */
  val UnnamedSource: SourceName = Unassigned

  /** A V1 streaming relation (delta-spark's `DeltaSource`): its data source, output and name. */
  object V1StreamingRelation {
    def unapply(plan: LogicalPlan): Option[(DataSource, Seq[Attribute], SourceName)] =
      plan match {
        case StreamingRelation(ds, _, output, name) => Some((ds, output, name))
        case _ => None
      }
  }

  /** A DataSourceV2 streaming relation of `table` with no catalog, replacing `v1` if given. */
  def streamingRelationV2(
      source: TableProvider,
      sourceName: String,
      table: Table,
      options: CaseInsensitiveStringMap,
      output: Seq[AttributeReference],
      v1: Option[LogicalPlan],
      name: SourceName
  ): StreamingRelationV2 =
    StreamingRelationV2(Some(source), sourceName, table, options, output, None, None, v1, name)

  /**
   * The Parquet reader's flags that Spark 4.1 added (variant and unknown type annotations), each
   * key with its default.
   */
  val parquetAnnotationFlags: Seq[(String, String)] =
    Seq(
      SQLConf.PARQUET_IGNORE_VARIANT_ANNOTATION,
      SQLConf.PARQUET_READER_RESPECT_UNKNOWN_TYPE_ANNOTATION
    )
      .map(e => e.key -> e.defaultValueString)

  /**
   * What [[io.deltareplay.internal.scan.DeltaReplayScanBuilder]] extends to be offered a query's
   * filters as Catalyst expressions: since Spark 4.1 Spark offers them to any
   * `SupportsPushDownCatalystFilters` (PushDownUtils.pushFilters, SPARK-53512).
   */
  abstract class CatalystFiltersScanBuilder(spark: SparkSession)
      extends ScanBuilder
      with SupportsPushDownCatalystFilters
}
