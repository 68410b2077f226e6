package io.deltareplay.internal

import java.util.OptionalLong

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.execution.datasources.parquet.{
  ParquetOptions,
  ParquetReadSupport,
  ParquetWriteSupport
}
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration
import org.apache.parquet.hadoop.ParquetInputFormat

/** What a scan's replay and planning did; shown by EXPLAIN and given to Python. */
private[deltareplay] case class ScanMetrics(
    table: String,
    version: Long,
    replayMode: String,
    logSegment: String,
    actionsReplayed: Long,
    liveFiles: Long,
    filesAfterPartitionPruning: Long,
    filesAfterSkipping: Long,
    replayMillis: Long,
    planMillis: Long,
    snapshotMillis: Long,
    replayTasks: Int
) {
  def toJson: String =
    s"""{"table":${quote(table)},"version":$version,"replayMode":${quote(replayMode)},""" +
      s""""logSegment":${quote(logSegment)},"actionsReplayed":$actionsReplayed,""" +
      s""""liveFiles":$liveFiles,"filesAfterPartitionPruning":$filesAfterPartitionPruning,""" +
      s""""filesAfterSkipping":$filesAfterSkipping,"replayMillis":$replayMillis,""" +
      s""""planMillis":$planMillis,"snapshotMillis":$snapshotMillis,"replayTasks":$replayTasks}"""

  private def quote(s: String): String =
    "\"" + s.flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => f"\\u${c.toInt}%04x"
      case c => c.toString
    } + "\""
}

/**
 * A batch scan of one pinned table version. Plans lazily and once: replay (local or distributed),
 * then pruning and skipping, then splits. The Batch only wraps the planned splits.
 */
private[deltareplay] class DeltaReplayScan(
    spark: SparkSession,
    val snapshot: TableSnapshot,
    conf: ReadConf,
    readDataSchema: StructType,
    readPartitionSchema: StructType,
    partitionFilters: Seq[Expression],
    dataFilters: Seq[Expression],
    parquetFilters: Array[Filter]
) extends Scan
    with Batch
    with SupportsReportStatistics {

  private def needStats: Boolean = conf.dataSkipping && dataFilters.nonEmpty

  lazy val replay: ReplayResult = Replay.run(spark, snapshot.segment, conf, needStats)

  lazy val planned: PlannedScan = ScanPlanner.plan(
    spark,
    snapshot,
    replay.files,
    readPartitionSchema,
    partitionFilters,
    dataFilters,
    conf.dataSkipping
  )

  def metrics: ScanMetrics = ScanMetrics(
    table = snapshot.table,
    version = snapshot.version,
    replayMode = replay.mode,
    logSegment = snapshot.segment.describe,
    actionsReplayed = replay.actionsReplayed,
    liveFiles = replay.files.length,
    filesAfterPartitionPruning = planned.filesAfterPruning,
    filesAfterSkipping = planned.filesAfterSkipping,
    replayMillis = replay.millis,
    planMillis = planned.planMillis,
    snapshotMillis = snapshot.loadMillis,
    replayTasks = replay.replayTasks
  )

  override def readSchema(): StructType = StructType(readDataSchema ++ readPartitionSchema)

  override def description(): String = {
    val base = s"DeltaReplayScan ${snapshot.table} v${snapshot.version}"
    val filters =
      s"PartitionFilters: ${partitionFilters.mkString("[", ", ", "]")}, " +
        s"DataFilters: ${dataFilters.mkString("[", ", ", "]")}, " +
        s"PushedFilters: ${parquetFilters.mkString("[", ", ", "]")}"
    val m = metrics
    s"$base [replay ${m.replayMode}: ${m.logSegment}, ${m.actionsReplayed} actions -> " +
      s"${m.liveFiles} live files in ${m.replayMillis} ms" +
      (if (m.replayTasks > 0) s" (${m.replayTasks} tasks)" else "") +
      s"; ${m.filesAfterPartitionPruning} after partition pruning, " +
      s"${m.filesAfterSkipping} after skipping; planned in ${m.planMillis} ms] $filters"
  }

  override def toBatch: Batch = this

  override def planInputPartitions(): Array[InputPartition] =
    planned.partitions.map(p => p: InputPartition)

  override def createReaderFactory(): PartitionReaderFactory = {
    val meta = snapshot.meta
    val withRowIndex = planned.hasDeletionVectors
    val physicalData = meta.physicalSchema(readDataSchema)
    val readData =
      if (withRowIndex) physicalData.add(ParquetConf.RowIndexField) else physicalData
    val fullData = {
      val d = meta.physicalSchema(
        StructType(snapshot.schema.filterNot(f => meta.partitionColumns.contains(f.name)))
      )
      if (withRowIndex) d.add(ParquetConf.RowIndexField) else d
    }
    val sqlConf = spark.sessionState.conf.clone()
    if (meta.columnMappingName == "id") sqlConf.setConf(SQLConf.PARQUET_FIELD_ID_READ_ENABLED, true)
    val hadoopConf = spark.sessionState.newHadoopConf()
    hadoopConf.set(ParquetInputFormat.READ_SUPPORT_CLASS, classOf[ParquetReadSupport].getName)
    hadoopConf.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA, readData.json)
    hadoopConf.set(ParquetWriteSupport.SPARK_ROW_SCHEMA, readData.json)
    hadoopConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, sqlConf.sessionLocalTimeZone)
    ParquetConf.copyFlags(sqlConf, hadoopConf)
    ParquetWriteSupport.setSchema(readData, hadoopConf)
    val broadcastConf = spark.sparkContext.broadcast(new SerializableConfiguration(hadoopConf))
    val parquet = ParquetPartitionReaderFactory(
      sqlConf,
      broadcastConf,
      fullData,
      readData,
      readPartitionSchema,
      parquetFilters,
      None,
      new ParquetOptions(Map.empty[String, String], sqlConf)
    )
    val columnar = !withRowIndex && parquet.supportColumnarReads(null)
    DeltaReaderFactory(
      parquet = parquet,
      table = snapshot.table,
      version = snapshot.version,
      tablePath = snapshot.tablePath.toString,
      conf = broadcastConf,
      rowIndexOrdinal = if (withRowIndex) readData.length - 1 else -1,
      parquetOutput = StructType(readData ++ readPartitionSchema),
      columnar = columnar
    )
  }

  override def estimateStatistics(): Statistics = {
    val p = planned
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(p.bytesAfterSkipping)
      override def numRows(): OptionalLong =
        p.rowsAfterSkipping.fold(OptionalLong.empty())(OptionalLong.of)
    }
  }
}
