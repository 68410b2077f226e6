package io.deltareplay.internal.scan

import scala.collection.mutable

import io.deltareplay.Errors
import io.deltareplay.internal.planning.ReadPolicy
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.hadoop.mapreduce.Job
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{
  FileFormat,
  OutputWriterFactory,
  PartitionDirectory,
  PartitionSpec,
  PartitioningAwareFileIndex
}
import org.apache.spark.sql.types.StructType

/**
 * The file index Spark asks a table of files for ([[DeltaReplayTable.fileIndex]]), answered from
 * the log rather than by listing directories: the table's root (`spark.catalog.refreshByPath`
 * re-caches the cached plans whose index lies under a path) and its live files at the read's
 * version (`Dataset.inputFiles`, as delta-spark's file index lists them). Scans never use it: they
 * plan through the snapshot index.
 */
private[scan] final class DeltaReplayFileIndex(spark: SparkSession, table: DeltaReplayTable)
    extends PartitioningAwareFileIndex(spark, Map.empty, None) {

  override def rootPaths: Seq[Path] = Seq(table.snapshot.tablePath)

  /** Nothing to drop: every query resolves the read to the table's newest version anew. */
  override def refresh(): Unit = ()

  override def partitionSpec(): PartitionSpec =
    PartitionSpec(StructType(table.schema.filter(f => isPartition(f.name))), Seq.empty)

  private def isPartition(name: String): Boolean =
    table.snapshot.partitionColumns.exists(_.equalsIgnoreCase(name))

  /** The live files of the read's version, as absolute paths (delta-spark's `inputFiles`). */
  override def inputFiles: Array[String] = {
    val index =
      ReadPolicy(spark, table.snapshot, table.conf.planning).index(needStats = false).index
    val paths = table.snapshot.segment.paths
    index
      .files()
      .map { case (path, _) => new Path(new java.net.URI(paths.absolute(path))).toString }
      .toArray
  }

  override def sizeInBytes: Long = spark.sessionState.conf.defaultSizeInBytes

  override def listFiles(
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression]
  ): Seq[PartitionDirectory] = throw Errors.readOnly(table.snapshot.table)

  override protected def leafFiles: mutable.LinkedHashMap[Path, FileStatus] =
    mutable.LinkedHashMap.empty

  override protected def leafDirToChildrenFiles: Map[Path, Array[FileStatus]] = Map.empty
}

/**
 * The file format Spark would write a table of files with where no writer is planned for it (an
 * INSERT into a view over a read of this connector, which delta-spark did not take): it refuses to
 * be made, so nothing is written past the transaction log.
 */
private[deltareplay] final class ReadOnlyFormat extends FileFormat {
  throw Errors.readOnly("The table")

  override def inferSchema(
      sparkSession: SparkSession,
      options: Map[String, String],
      files: Seq[FileStatus]
  ): Option[StructType] = None

  override def prepareWrite(
      sparkSession: SparkSession,
      job: Job,
      options: Map[String, String],
      dataSchema: StructType
  ): OutputWriterFactory = throw Errors.readOnly("The table")

}
