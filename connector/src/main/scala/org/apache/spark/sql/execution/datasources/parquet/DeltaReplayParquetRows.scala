package org.apache.spark.sql.execution.datasources.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.parquet.hadoop.api.InitContext
import org.apache.parquet.hadoop.metadata.FileMetaData
import org.apache.parquet.io.api.RecordMaterializer
import org.apache.parquet.schema.MessageType
import java.time.ZoneId

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.catalyst.util.RebaseDateTime.RebaseSpec
import org.apache.spark.sql.execution.datasources.DataSourceUtils
import org.apache.spark.sql.internal.SQLConf

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

  def settings(conf: SQLConf): Settings = {
    val options = new ParquetOptions(Map.empty[String, String], conf)
    Settings(
      options.datetimeRebaseModeInRead,
      options.int96RebaseModeInRead,
      conf.isParquetINT96TimestampConversion,
      conf.sessionLocalTimeZone
    )
  }

  /**
   * The value conversions Spark's Parquet readers apply to a file, by its footer and the session.
   */
  final case class Conversions(convertTz: Option[ZoneId], datetime: RebaseSpec, int96: RebaseSpec)

  def conversions(file: FileMetaData, settings: Settings): Conversions = {
    val lookup = (key: String) => file.getKeyValueMetaData.get(key)
    Conversions(
      // INT96 values a writer other than parquet-mr wrote, when the session converts them
      if (settings.int96TimestampConversion && !file.getCreatedBy.startsWith("parquet-mr")) {
        Some(DateTimeUtils.getZoneId(settings.sessionTimeZone))
      } else None,
      DataSourceUtils.datetimeRebaseSpec(lookup, settings.datetimeRebaseMode),
      DataSourceUtils.int96RebaseSpec(lookup, settings.int96RebaseMode)
    )
  }

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
    val c = conversions(file, settings)
    val support =
      new ParquetReadSupport(c.convertTz, enableVectorizedReader = false, c.datetime, c.int96)
    val asSets = keyValues.asScala.map { case (k, v) => k -> java.util.Collections.singleton(v) }
    val context = support.init(new InitContext(conf, asSets.asJava, file.getSchema))
    (support.prepareForRead(conf, keyValues, file.getSchema, context), context.getRequestedSchema)
  }
}
