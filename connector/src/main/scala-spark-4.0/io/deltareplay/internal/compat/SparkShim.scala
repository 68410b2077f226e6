package io.deltareplay.internal.compat

import scala.collection.mutable

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.execution.datasources.{
  DataSource,
  PartitionSpec,
  PartitioningAwareFileIndex
}
import org.apache.spark.sql.execution.datasources.v2.FileScanBuilder
import org.apache.spark.sql.execution.streaming.StreamingRelation
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The Spark API that differs between the Spark lines this connector builds for, Spark 4.0's side.
 * Each line has its own copy of this object, in `connector/src/main/scala-spark-<line>/` (the build
 * picks one: project/SparkLines.scala); every other source compiles unchanged on all lines. Keep it
 * to what a line cannot express otherwise: the copies have the same members with the same meaning.
 */
private[deltareplay] object SparkShim {

  /** How a plan names a streaming source: before Spark 4.2 it does not (sources go by position). */
  type SourceName = Unit

  /** The name of a source the user did not name: none before Spark 4.2. */
  val UnnamedSource: SourceName = ()

  /** A V1 streaming relation (delta-spark's `DeltaSource`): its data source, output and name. */
  object V1StreamingRelation {
    def unapply(plan: LogicalPlan): Option[(DataSource, Seq[Attribute], SourceName)] =
      plan match {
        case StreamingRelation(ds, _, output) => Some((ds, output, ()))
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
    StreamingRelationV2(Some(source), sourceName, table, options, output, None, None, v1)

  /**
   * The Parquet reader's flags that Spark 4.1 added (variant and unknown type annotations): none.
   */
  val parquetAnnotationFlags: Seq[(String, String)] = Nil

  /**
   * What [[io.deltareplay.internal.scan.DeltaReplayScanBuilder]] extends to be offered a query's
   * filters as Catalyst expressions. Spark 4.0's PushDownUtils.pushFilters offers them to a
   * `FileScanBuilder` only (it matches that class, not `SupportsPushDownCatalystFilters`, which
   * Spark 4.1 matches: SPARK-53512), and offers a builder that is neither a `FileScanBuilder` nor a
   * `SupportsPushDown(V2)Filters` none. So on 4.0 the builder is a `FileScanBuilder` over an index
   * of no files; it overrides the methods Spark calls (`pruneColumns`, `pushFilters`,
   * `pushedFilters`), and nothing else in Spark 4.0 matches `FileScanBuilder`.
   */
  abstract class CatalystFiltersScanBuilder(spark: SparkSession)
      extends FileScanBuilder(spark, new NoFiles(spark), new StructType())

  /** The file index a [[CatalystFiltersScanBuilder]] is built over: no files, no partitions. */
  private class NoFiles(spark: SparkSession)
      extends PartitioningAwareFileIndex(spark, Map.empty, None) {
    override def partitionSpec(): PartitionSpec = PartitionSpec.emptySpec
    override protected def leafFiles: mutable.LinkedHashMap[Path, FileStatus] =
      mutable.LinkedHashMap.empty
    override protected def leafDirToChildrenFiles: Map[Path, Array[FileStatus]] = Map.empty
    override def rootPaths: Seq[Path] = Nil
    override def refresh(): Unit = ()
  }
}
