package io.deltareplay.internal.scan

import java.util

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.planning.ReadConf
import io.deltareplay.internal.read.FileMetadata
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{
  MetadataColumn,
  SupportsMetadataColumns,
  SupportsRead,
  Table,
  TableCapability
}
import org.apache.spark.sql.connector.expressions.{Expressions, Transform}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A Delta table read by this connector, at one snapshot.
 *
 * @param timeTravel
 *   whether the read asked for this version (`versionAsOf`, `timestampAsOf`). Any other read is
 *   resolved anew for every query ([[RouteDeltaReads]] swaps in the newest snapshot, one per table
 *   per query, marking it `resolved`), as delta-spark reads the newest version at every execution
 *   of a DataFrame that does not travel in time. Its equality ignores the version of a resolved
 *   table, so a `cache()`d read keeps serving what it cached after a commit, as delta-spark's
 *   cached reads do (its file index compares equal across versions) until it is unpersisted or
 *   refreshed; within one query every read of a table is at one version anyway. A resolved table
 *   never equals an unresolved one (a plan rewrite that resolves it must not be taken for a no-op).
 */
private[deltareplay] class DeltaReplayTable(
    spark: SparkSession,
    val snapshot: TableSnapshot,
    val options: Map[String, String],
    val conf: ReadConf,
    val timeTravel: Boolean,
    val resolved: Boolean = false
) extends Table
    with SupportsRead
    with SupportsMetadataColumns {

  override def name(): String = s"delta-replay.`${snapshot.table}`@v${snapshot.version}"

  override def schema(): StructType = snapshot.schema

  override def partitioning(): Array[Transform] =
    snapshot.partitionColumns
      .map(c => Expressions.identity(DeltaReplayScan.quoted(c)): Transform)
      .toArray

  override def properties(): util.Map[String, String] = snapshot.meta.configuration.asJava

  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)

  /** `_metadata`, as Spark's file sources offer it ([[FileMetadata]]). */
  override def metadataColumns(): Array[MetadataColumn] = Array(new MetadataColumn {
    override def name(): String = FileMetadata.Column
    override def dataType(): DataType = FileMetadata.typeOf(snapshot.meta)
    override def isNullable: Boolean = false
  })

  override def newScanBuilder(opts: CaseInsensitiveStringMap): ScanBuilder =
    new DeltaReplayScanBuilder(spark, snapshot, settingsWith(opts.asScala.toMap))

  /** Whether a query must resolve this table to the newest version before reading it. */
  def needsResolving: Boolean = !timeTravel && !resolved

  /** This table at `newest`, for one query. */
  def resolvedTo(newest: TableSnapshot, newConf: ReadConf): DeltaReplayTable =
    new DeltaReplayTable(spark, newest, options, newConf, timeTravel = false, resolved = true)

  /**
   * The read's settings: those resolved where it was loaded, or, when a scan is built with options
   * the load did not have, those of all its options (checked as the load's were).
   */
  private def settingsWith(scanOptions: Map[String, String]): ReadConf = {
    val known = options.keySet.map(_.toLowerCase(java.util.Locale.ROOT))
    val extra = scanOptions.filter { case (k, _) =>
      val key = k.toLowerCase(java.util.Locale.ROOT)
      !known(key) && !io.deltareplay.DeltaReplayOptions.PathOptions(key)
    }
    if (extra.isEmpty) conf else ReadConf(spark, options ++ extra)
  }

  private def identity: (String, Option[Long], Boolean, Map[String, String]) =
    (snapshot.table, if (timeTravel) Some(snapshot.version) else None, resolved, options)

  override def equals(o: Any): Boolean = o match {
    case t: DeltaReplayTable => t.identity == identity
    case _ => false
  }

  override def hashCode(): Int = identity.hashCode()

  override def toString: String = name()
}
