package io.deltareplay.internal

import java.sql.Timestamp

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.delta.{
  DeltaColumnMapping,
  DeltaColumnMappingMode,
  DeltaLog,
  DeltaTableUtils
}
import org.apache.spark.sql.delta.catalog.DeltaTableV2
import org.apache.spark.sql.delta.actions.{Action, DeletionVectorDescriptor, Metadata, Protocol}
import org.apache.spark.sql.delta.deletionvectors.StoredBitmap
import org.apache.spark.sql.delta.files.TahoeLogFileIndex
import org.apache.spark.sql.delta.schema.SchemaUtils
import org.apache.spark.sql.delta.sources.{DeltaDataSource, DeltaSQLConf}
import org.apache.spark.sql.delta.storage.dv.HadoopFileSystemDVStore
import org.apache.spark.sql.execution.datasources.{
  HadoopFsRelation,
  LogicalRelation,
  PartitioningUtils
}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.StructType

/**
 * Everything the connector takes from delta-spark's internal (non-public) API, in one file, so a
 * Delta upgrade touches one place. Reused from delta-spark: the protocol/metadata action model and
 * its JSON parsing, column-mapping schema translation, deletion-vector loading (inline and
 * on-disk), timestamp-to-version resolution, and the shape of delta-spark's analyzed read plan.
 */
private[deltareplay] object DeltaAdapter {

  /** delta-spark's protocol and metadata actions of a [[TableMeta]] (parsed from its JSON). */
  private def actions(meta: TableMeta): (Protocol, Metadata) =
    (
      Action.fromJson(meta.protocolJson).asInstanceOf[Protocol],
      Action.fromJson(meta.metadataJson).asInstanceOf[Metadata]
    )

  /**
   * Whether delta-spark's `_metadata` of this table has `row_index`: it leaves the field out unless
   * deletion vectors are readable or row tracking is on (its `DeltaParquetFileFormat`).
   */
  def metadataHasRowIndex(meta: TableMeta): Boolean = {
    val (p, m) = actions(meta)
    org.apache.spark.sql.delta.commands.DeletionVectorUtils.deletionVectorsReadable(p, m) ||
    org.apache.spark.sql.delta.RowId.isEnabled(p, m)
  }

  /** The physical (Parquet) schema for a logical schema of a column-mapped table. */
  def physicalSchema(meta: TableMeta, logical: StructType): StructType =
    DeltaColumnMapping.createPhysicalSchema(
      logical,
      meta.schema,
      DeltaColumnMappingMode(meta.columnMappingName)
    )

  /**
   * The columns delta-spark's batch relation of a table shows, in its order and with its field
   * metadata (its `DeltaLog.buildHadoopFsRelationWithFileIndex`): the table schema, without columns
   * of type void unless `spark.databricks.delta.createDataFrame.dropNullColumns` is off, without
   * delta-spark's writer and internal field metadata; a partition column takes its field from the
   * partition schema, as Spark's file relation merges the two.
   */
  def relationSchema(spark: SparkSession, meta: TableMeta): StructType = {
    val dropVoid =
      spark.sessionState.conf.getConf(DeltaSQLConf.DELTA_CREATE_DATAFRAME_DROP_NULL_COLUMNS)
    val data =
      visible(spark, if (dropVoid) SchemaUtils.dropNullTypeColumns(meta.schema) else meta.schema)
    val partitions = visible(spark, StructType(meta.partitionColumns.map(c => meta.schema(c))))
    PartitioningUtils
      .mergeDataAndPartitionSchema(data, partitions, spark.sessionState.conf.caseSensitiveAnalysis)
      ._1
  }

  /** The columns delta-spark's streaming source of a table shows (its `sourceSchema`). */
  def streamSchema(spark: SparkSession, meta: TableMeta): StructType = visible(spark, meta.schema)

  private def visible(spark: SparkSession, schema: StructType) =
    DeltaTableUtils.removeInternalDeltaMetadata(
      spark,
      DeltaTableUtils.removeInternalWriterMetadata(spark, schema)
    )

  /** Whether a streaming source's format names delta-spark's source. */
  def isDeltaSource(className: String): Boolean =
    className.equalsIgnoreCase("delta") || className == classOf[DeltaDataSource].getName

  /** Reader features this connector implements. */
  val SupportedReaderFeatures: Set[String] = Set(
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "typeWidening",
    "typeWidening-preview",
    "variantType",
    "variantType-preview"
  )

  /**
   * Fails when the table needs what this connector does not read: a reader version or feature we
   * lack, or a commit coordinator (its newest commits may live outside `_delta_log` until they are
   * backfilled, so replaying the listed log could miss them).
   */
  def checkReadable(table: String, meta: TableMeta): Unit = {
    if (meta.minReaderVersion > 3)
      throw Errors.unsupportedReaderVersion(table, meta.minReaderVersion)
    val unsupported = meta.readerFeatures -- SupportedReaderFeatures
    if (unsupported.nonEmpty) throw Errors.unsupportedReaderFeatures(table, unsupported)
    val coordinated = meta.writerFeatures.filter(_.startsWith("coordinatedCommits")) ++
      meta.configuration.collect {
        case (k, v) if k.startsWith("delta.coordinatedCommits.commitCoordinator") => v
      }
    if (coordinated.nonEmpty) throw Errors.commitCoordinator(table, coordinated.mkString(", "))
  }

  /** Loads a deletion vector (inline or from its file) as a set of deleted row indexes. */
  def loadDeletionVector(
      dv: DvDescriptor,
      tablePath: Path,
      hadoopConf: Configuration
  ): Long => Boolean = {
    val descriptor = DeletionVectorDescriptor(
      storageType = dv.storageType,
      pathOrInlineDv = dv.pathOrInlineDv,
      offset = dv.offset,
      sizeInBytes = dv.sizeInBytes,
      cardinality = dv.cardinality
    )
    val bitmap =
      StoredBitmap.create(descriptor, tablePath).load(new HadoopFileSystemDVStore(hadoopConf))
    (row: Long) => bitmap.contains(row)
  }

  /** The version active at `timestamp`, resolved by delta-spark's history manager. */
  def versionAtTimestamp(spark: SparkSession, tablePath: Path, timestamp: Timestamp): Long =
    DeltaLog
      .forTable(spark, tablePath)
      .history
      .getActiveCommitAtTime(
        timestamp,
        catalogTableOpt = None,
        canReturnLastCommit = false,
        mustBeRecreatable = true,
        canReturnEarliestCommit = false
      )
      .version

  /** What a streaming read does at a metadata action of a later commit. */
  sealed trait StreamSchemaChange
  object StreamSchemaChange {

    /** The rows can still be read with the stream's schema: go on. */
    case object Compatible extends StreamSchemaChange

    /** Stop; a restart reads the new schema. */
    case object Retryable extends StreamSchemaChange

    /** Stop; a restart cannot follow (a column renamed or dropped, an incompatible type). */
    case object NonRetryable extends StreamSchemaChange
  }

  /**
   * How delta-spark's DeltaSource (without schema tracking) treats `newMeta` met in a commit while
   * streaming with `readSchema` since `startMeta`: its own checks, with the session's settings
   * (column-mapping renames and drops block; then read compatibility decides).
   */
  def streamSchemaChange(
      spark: SparkSession,
      startMeta: TableMeta,
      newMeta: TableMeta,
      readSchema: StructType
  ): StreamSchemaChange = {
    import org.apache.spark.sql.delta.sources.DeltaStreamUtils
    import org.apache.spark.sql.delta.TypeWidening
    val opts = DeltaStreamUtils.SchemaReadOptions.fromSparkSession(
      spark,
      isStreamingFromColumnMappingTable = startMeta.usesColumnMapping,
      isTypeWideningSupportedInProtocol = TypeWidening.isSupported(actions(newMeta)._1)
    )
    val (_, startMetadata) = actions(startMeta)
    val (newProtocol, newMetadata) = actions(newMeta)
    val columnMappingChange = !opts.allowUnsafeStreamingReadOnColumnMappingSchemaChanges &&
      !DeltaColumnMapping.hasNoColumnMappingSchemaChanges(
        newMetadata,
        startMetadata,
        opts.allowUnsafeStreamingReadOnPartitionColumnChanges
      )
    if (columnMappingChange) StreamSchemaChange.NonRetryable
    else {
      val (newParts, oldParts) =
        if (opts.allowUnsafeStreamingReadOnPartitionColumnChanges) (Nil, Nil)
        else (newMeta.partitionColumns, startMeta.partitionColumns)
      val result = DeltaStreamUtils.checkSchemaChangesWhenNoSchemaTracking(
        newMeta.schema,
        readSchema,
        newParts,
        oldParts,
        backfilling = false,
        opts
      )
      if (DeltaStreamUtils.SchemaCompatibilityResult.isCompatible(result)) {
        StreamSchemaChange.Compatible
      } else if (DeltaStreamUtils.SchemaCompatibilityResult.isRetryableIncompatible(result)) {
        StreamSchemaChange.Retryable
      } else StreamSchemaChange.NonRetryable
    }
  }

  /** Whether `plan` is delta-spark's unconverted DSv2 relation of a read. */
  def isDeltaV2Relation(plan: LogicalPlan): Boolean = plan match {
    case r: DataSourceV2Relation => r.table.isInstanceOf[DeltaTableV2]
    case _ => false
  }

  /**
   * The first version committed at or after `timestamp` (a stream's `startingTimestamp`), as
   * delta-spark's streaming source resolves it.
   */
  def firstVersionAtOrAfter(spark: SparkSession, tablePath: Path, timestamp: Timestamp): Long = {
    val commit = DeltaLog
      .forTable(spark, tablePath)
      .history
      .getActiveCommitAtTime(
        timestamp,
        catalogTableOpt = None,
        canReturnLastCommit = true,
        mustBeRecreatable = false,
        canReturnEarliestCommit = true
      )
    if (commit.timestamp >= timestamp.getTime) commit.version else commit.version + 1
  }

  /** A delta-spark batch read of a whole table, as the analyzer leaves it. */
  final case class DeltaRead(
      tablePath: Path,
      version: Long,
      isTimeTravel: Boolean,
      catalogTable: Option[CatalogTable],
      options: Map[String, String],
      schema: StructType
  )

  /**
   * Recognises the relation delta-spark plans for a user's read (`TahoeLogFileIndex`, no partition
   * filters folded in). Delta's own scans inside MERGE/UPDATE/DELETE/OPTIMIZE use other file
   * indexes and are never matched.
   */
  def deltaRead(plan: LogicalPlan): Option[DeltaRead] = plan match {
    case LogicalRelation(fs: HadoopFsRelation, _, catalogTable, false, None) =>
      fs.location match {
        case index: TahoeLogFileIndex if index.partitionFilters.isEmpty =>
          try
            Some(
              DeltaRead(
                tablePath = index.path,
                version = index.snapshotAtAnalysis.version,
                isTimeTravel = index.isTimeTravelQuery,
                catalogTable = catalogTable.orElse(index.catalogTableOpt),
                options = fs.options,
                schema = fs.schema
              )
            )
          catch { case NonFatal(_) => None }
        case _ => None
      }
    case _ => None
  }
}
