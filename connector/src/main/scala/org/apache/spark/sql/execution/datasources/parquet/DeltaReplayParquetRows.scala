package org.apache.spark.sql.execution.datasources.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.parquet.hadoop.api.InitContext
import org.apache.parquet.hadoop.metadata.FileMetaData
import org.apache.parquet.io.api.RecordMaterializer
import org.apache.parquet.schema.MessageType
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.datasources.DataSourceUtils
import org.apache.spark.sql.types.StructType

/**
 * delta-replay's access to Spark's row-by-row Parquet decoding (its read support and record
 * materializer are package-private), for reading chosen rows of a Parquet file with parquet-mr's
 * page index: the rows come out exactly as Spark's Parquet reader makes them (same type
 * conversions, same datetime rebasing).
 */
object DeltaReplayParquetRows {

  /** The session settings row decoding depends on, taken on the driver. */
  final case class Settings(
      datetimeRebaseMode: String,
      int96RebaseMode: String,
      int96TimestampConversion: Boolean,
      sessionTimeZone: String
  )

  def settings(spark: SparkSession): Settings = {
    val conf = spark.asInstanceOf[ClassicSession].sessionState.conf
    val options = new ParquetOptions(Map.empty[String, String], conf)
    Settings(
      options.datetimeRebaseModeInRead,
      options.int96RebaseModeInRead,
      conf.isParquetINT96TimestampConversion,
      conf.sessionLocalTimeZone
    )
  }

  /** Whether Spark's vectorized reader can hand out columnar batches of `schema`. */
  def batchReadable(spark: SparkSession, schema: StructType): Boolean =
    ParquetUtils.isBatchReadSupportedForSchema(
      spark.asInstanceOf[ClassicSession].sessionState.conf,
      schema
    )

  /**
   * A materializer of rows of the read schema that `conf` carries (set by
   * `ParquetFileFormat.buildReaderWithPartitionValues`) for a file with this footer, and the
   * Parquet schema it reads (the file's schema clipped to the read schema).
   */
  def materializer(
      conf: Configuration,
      file: FileMetaData,
      settings: Settings
  ): (RecordMaterializer[InternalRow], MessageType) = {
    val keyValues = file.getKeyValueMetaData
    val lookup = (key: String) => keyValues.get(key)
    val support = new ParquetReadSupport(
      RowSplits.convertTz(file, settings),
      enableVectorizedReader = false,
      DataSourceUtils.datetimeRebaseSpec(lookup, settings.datetimeRebaseMode),
      DataSourceUtils.int96RebaseSpec(lookup, settings.int96RebaseMode)
    )
    val asSets = keyValues.asScala.map { case (k, v) => k -> java.util.Collections.singleton(v) }
    val context = support.init(new InitContext(conf, asSets.asJava, file.getSchema))
    (support.prepareForRead(conf, keyValues, file.getSchema, context), context.getRequestedSchema)
  }
}
