package io.deltareplay.internal

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.expressions.{Expressions, Transform}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** One pinned version of a Delta table, readable in batch. */
private[deltareplay] class DeltaReplayTable(
    spark: SparkSession,
    val snapshot: TableSnapshot,
    options: Map[String, String]
) extends Table
    with SupportsRead {

  override def name(): String = s"delta-replay.`${snapshot.table}`@v${snapshot.version}"

  override def schema(): StructType = snapshot.schema

  override def partitioning(): Array[Transform] =
    snapshot.partitionColumns.map(c => Expressions.identity(c): Transform).toArray

  override def properties(): util.Map[String, String] = snapshot.meta.configuration.asJava

  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(opts: CaseInsensitiveStringMap): ScanBuilder =
    new DeltaReplayScanBuilder(spark, snapshot, options ++ opts.asScala)
}
