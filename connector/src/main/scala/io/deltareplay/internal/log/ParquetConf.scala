package io.deltareplay.internal.log

import io.deltareplay.internal.compat.SparkShim
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, StructField}

/** Settings Spark's Parquet reader takes from the Hadoop configuration rather than the SQL conf. */
private[deltareplay] object ParquetConf {

  /** The column Spark's Parquet reader fills with each row's index in its file. */
  val RowIndexField: StructField =
    StructField(ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME, LongType, nullable = true)

  /** Copies the schema-converter and read-support flags from `sqlConf` into `hadoopConf`. */
  def copyFlags(sqlConf: SQLConf, hadoopConf: Configuration): Unit = {
    val flags = Seq(
      SQLConf.NESTED_SCHEMA_PRUNING_ENABLED,
      SQLConf.CASE_SENSITIVE,
      SQLConf.PARQUET_BINARY_AS_STRING,
      SQLConf.PARQUET_INT96_AS_TIMESTAMP,
      SQLConf.PARQUET_INFER_TIMESTAMP_NTZ_ENABLED,
      SQLConf.LEGACY_PARQUET_NANOS_AS_LONG,
      SQLConf.PARQUET_FIELD_ID_READ_ENABLED
    ).map(e => e.key -> e.defaultValueString) ++ SparkShim.parquetAnnotationFlags // since 4.1
    flags.foreach { case (key, default) =>
      hadoopConf.set(key, sqlConf.getConfString(key, default))
    }
  }
}
