package io.deltareplay.internal.delta

import java.sql.Timestamp

import scala.util.control.NonFatal

import io.deltareplay.Errors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.delta.{
  DeltaColumnMapping,
  DeltaColumnMappingMode,
  DeltaErrors,
  DeltaLog,
  DeltaTableUtils
}
import org.apache.spark.sql.delta.catalog.DeltaTableV2
import org.apache.spark.sql.delta.actions.{DeletionVectorDescriptor, Metadata, Protocol}
import org.apache.spark.sql.delta.deletionvectors.StoredBitmap
import org.apache.spark.sql.delta.files.TahoeLogFileIndex
import org.apache.spark.sql.delta.schema.SchemaUtils
import org.apache.spark.sql.delta.sources.{DeltaDataSource, DeltaSQLConf}
import org.apache.spark.sql.delta.storage.dv.HadoopFileSystemDVStore
import org.apache.spark.sql.delta.util.JsonUtils
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

  /**
   * delta-spark's protocol and metadata actions of a [[TableActions]] (parsed from its JSON), each
   * deserialized as its own class by delta-spark's mapper: `Action.fromJson` would first build the
   * deserializers of every action class (0.3 s of a cold driver's first read, against 0.09 s for
   * these two: benchmarks/results/2026-12-05-stats-scan.notes.md). TableChangesSuite holds the two
   * to the same actions.
   */
  private[deltareplay] def actions(meta: TableActions): (Protocol, Metadata) =
    (
      action(meta.protocolJson, "protocol", classOf[Protocol]),
      action(meta.metadataJson, "metaData", classOf[Metadata])
    )

  /** The action under `key` of a log line's JSON, as `cls`. */
  private def action[T](json: String, key: String, cls: Class[T]): T = {
    val node = JsonUtils.mapper.readTree(json).get(key)
    if (node == null) throw new IllegalArgumentException(s"no $key action in $json")
    JsonUtils.mapper.treeToValue(node, cls)
  }

  /**
   * Whether delta-spark's `_metadata` of this table has `row_index`: it leaves the field out unless
   * deletion vectors are readable or row tracking is on (its `DeltaParquetFileFormat`).
   */
  def metadataHasRowIndex(meta: TableActions): Boolean = {
    val (p, m) = actions(meta)
    org.apache.spark.sql.delta.commands.DeletionVectorUtils.deletionVectorsReadable(p, m) ||
    org.apache.spark.sql.delta.RowId.isEnabled(p, m)
  }

  /** The physical (Parquet) schema for a logical schema of a column-mapped table. */
  def physicalSchema(meta: TableActions, logical: StructType): StructType =
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
  def relationSchema(
      spark: SparkSession,
      meta: TableActions,
      dropNullColumns: Boolean,
      caseSensitive: Boolean
  ): StructType = {
    val data = visible(
      spark,
      if (dropNullColumns) SchemaUtils.dropNullTypeColumns(meta.schema) else meta.schema
    )
    val partitions = visible(spark, StructType(meta.partitionColumns.map(c => meta.schema(c))))
    PartitioningUtils.mergeDataAndPartitionSchema(data, partitions, caseSensitive)._1
  }

  /** delta-spark's settings a read follows, as the session has them now (read at the load). */
  final case class ReadFlags(dropNullColumns: Boolean, checkSchemaOnRead: Boolean)

  def readFlags(spark: SparkSession): ReadFlags = {
    val conf = spark.sessionState.conf
    ReadFlags(
      dropNullColumns = conf.getConf(DeltaSQLConf.DELTA_CREATE_DATAFRAME_DROP_NULL_COLUMNS),
      checkSchemaOnRead = conf.getConf(DeltaSQLConf.DELTA_SCHEMA_ON_READ_CHECK_ENABLED)
    )
  }

  /** The columns delta-spark's streaming source of a table shows (its `sourceSchema`). */
  def streamSchema(spark: SparkSession, meta: TableActions): StructType =
    visible(spark, meta.schema)

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
  def checkReadable(table: String, meta: TableActions): Unit = {
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
      dv: DvFields,
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
  /**
   * Checks the schema a stream meets (`meta`, at `version`: a commit's metaData, or the table at
   * the stream's start offset when `atStart`) as delta-spark's DeltaSource without schema tracking
   * checks it, and stops the stream with DeltaSource's own error (same condition, same message)
   * where it would: another table id; a column-mapping rename or drop, or a widening type change
   * DeltaSource tracks (`DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG`); a schema the
   * stream cannot read its files with (`DELTA_SCHEMA_CHANGED_WITH_VERSION`, retryable when a
   * restart with the new schema can go on). `initMeta` and `initVersion` are the table when the
   * stream was created, `readSchema` the stream's columns; a change before `initVersion` is a
   * backfill, compared the other way round.
   */
  def checkStreamSchema(
      spark: SparkSession,
      initMeta: TableActions,
      initVersion: Long,
      meta: TableActions,
      version: Long,
      readSchema: StructType,
      atStart: Boolean,
      startingOption: Boolean
  ): Unit = {
    import org.apache.spark.sql.delta.sources.DeltaStreamUtils
    import org.apache.spark.sql.delta.TypeWidening
    val (initProtocol, initMetadata) = actions(initMeta)
    val (_, metadata) = actions(meta)
    val opts = DeltaStreamUtils.SchemaReadOptions.fromSparkSession(
      spark,
      isStreamingFromColumnMappingTable = initMeta.usesColumnMapping,
      isTypeWideningSupportedInProtocol = TypeWidening.isSupported(initProtocol)
    )
    val backfilling = version < initVersion
    val (newMetadata, oldMetadata) =
      if (backfilling) (initMetadata, metadata) else (metadata, initMetadata)
    if (newMetadata.id != oldMetadata.id) {
      throw DeltaErrors.differentDeltaTableReadByStreamingSource(newMetadata.id, oldMetadata.id)
    }
    val tracked =
      if (
        opts.typeWideningEnabled && opts.enableSchemaTrackingForTypeWidening &&
        TypeWidening.containsWideningTypeChanges(oldMetadata.schema, newMetadata.schema)
      ) true
      else if (opts.allowUnsafeStreamingReadOnColumnMappingSchemaChanges) false
      else
        !DeltaColumnMapping.hasNoColumnMappingSchemaChanges(
          newMetadata,
          oldMetadata,
          opts.allowUnsafeStreamingReadOnPartitionColumnChanges
        )
    if (tracked) {
      throw DeltaErrors.blockStreamingReadsWithIncompatibleNonAdditiveSchemaChanges(
        spark,
        oldMetadata.schema,
        newMetadata.schema,
        detectedDuringStreaming = !atStart
      )
    }
    if (
      !atStart || !opts.forceEnableStreamingReadOnReadIncompatibleSchemaChangesDuringStreamStart
    ) {
      val (newParts, oldParts) =
        if (opts.allowUnsafeStreamingReadOnPartitionColumnChanges) (Nil, Nil)
        else (newMetadata.partitionColumns, oldMetadata.partitionColumns)
      val result = DeltaStreamUtils.checkSchemaChangesWhenNoSchemaTracking(
        metadata.schema,
        readSchema,
        newParts,
        oldParts,
        backfilling,
        opts
      )
      if (!DeltaStreamUtils.SchemaCompatibilityResult.isCompatible(result)) {
        throw DeltaErrors.schemaChangedException(
          readSchema,
          metadata.schema,
          DeltaStreamUtils.SchemaCompatibilityResult.isRetryableIncompatible(result),
          Some(version),
          startingOption
        )
      }
    }
  }

  /**
   * DeltaSource's error for a commit that removes data a stream of appends cannot follow: only
   * removes (`DELTA_SOURCE_IGNORE_DELETE`, which `ignoreDeletes` lets pass) or rewrites
   * (`DELTA_SOURCE_TABLE_IGNORE_CHANGES`, which `ignoreChanges` or `skipChangeCommits` let pass).
   */
  def changeCommitError(
      version: Long,
      removedFile: String,
      tablePath: String,
      rewrites: Boolean
  ): Throwable =
    if (rewrites) DeltaErrors.deltaSourceIgnoreChangesError(version, removedFile, tablePath)
    else DeltaErrors.deltaSourceIgnoreDeleteError(version, removedFile, tablePath)

  /**
   * The table of the delta-spark transaction running on this thread (a command between its start
   * and its commit: the reads it plans register with it), as a qualified path string.
   */
  def activeTransactionTable: Option[String] =
    org.apache.spark.sql.delta.OptimisticTransaction.getActive().map(_.deltaLog.dataPath.toString)

  /** Whether `plan` is delta-spark's unconverted DSv2 relation of a read. */
  def isDeltaV2Relation(plan: LogicalPlan): Boolean = plan match {
    case r: DataSourceV2Relation => r.table.isInstanceOf[DeltaTableV2]
    case _ => false
  }

  /**
   * The first version committed at or after `timestamp` (a stream's `startingTimestamp`), as
   * delta-spark's streaming source resolves it; a timestamp after the newest commit fails with its
   * error (`DELTA_TIMESTAMP_GREATER_THAN_COMMIT`).
   */
  def firstVersionAtOrAfter(spark: SparkSession, tablePath: Path, timestamp: Timestamp): Long =
    org.apache.spark.sql.delta.sources.DeltaSource.getStartingVersionFromTimestamp(
      spark,
      DeltaLog.forTable(spark, tablePath),
      None,
      timestamp,
      canExceedLatest = false
    )

  /**
   * Whether a DataFrame analysed when the table was `analyzed` may read version `newest`, by
   * delta-spark's rule for its own reads (`TahoeFileIndex.getSnapshot`): the newest schema reads
   * the old one's data (columns and struct fields may be added; none dropped, renamed or retyped)
   * and column mapping moved no column to another physical name. Always true when delta-spark's
   * check is off (`check`: `spark.databricks.delta.checkLatestSchemaOnRead`, taken at the load).
   */
  def readCompatible(check: Boolean, analyzed: TableActions, newest: TableActions): Boolean =
    analyzed.metadataJson == newest.metadataJson || {
      val (_, was) = actions(analyzed)
      val (_, now) = actions(newest)
      readCompatible(check, was, now)
    }

  private def readCompatible(check: Boolean, was: Metadata, now: Metadata): Boolean =
    !check ||
      (SchemaUtils.isReadCompatible(was.schema, now.schema) &&
        DeltaColumnMapping.hasNoColumnMappingSchemaChanges(now, was))

  /**
   * A delta-spark batch read of a whole table, as the analyzer leaves it.
   *
   * @param readableAt
   *   whether the read may go on at a newer version of the table ([[readCompatible]] against the
   *   metadata delta-spark analysed the read with; the first argument: whether delta-spark's check
   *   is on)
   */
  final case class DeltaRead(
      tablePath: Path,
      version: Long,
      isTimeTravel: Boolean,
      catalogTable: Option[CatalogTable],
      options: Map[String, String],
      schema: StructType,
      readableAt: (Boolean, TableActions) => Boolean
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
                schema = fs.schema,
                readableAt = (check, newest) =>
                  readCompatible(check, index.snapshotAtAnalysis.metadata, actions(newest)._2)
              )
            )
          catch { case NonFatal(_) => None }
        case _ => None
      }
    case _ => None
  }
}
