package org.apache.spark.sql.deltareplay

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.TaskContext
import org.apache.spark.rdd.{InputFileBlockHolder, RDD}
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.classic.{ExpressionUtils, SparkSession => ClassicSession}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.execution.datasources.{
  DataSourceStrategy,
  FileFormat,
  FileIndex,
  FileStatusWithMetadata,
  HadoopFsRelation,
  PartitionDirectory
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.{StringType, StructType}

/** Spark APIs that are `private[sql]` or `private[spark]`, reached from inside Spark's package. */
object SparkBridge {

  /**
   * A pool of at most `threads` daemon threads named `prefix-N`, each ending after
   * `keepAliveSeconds` idle (Spark's own helper, as its driver uses for its background work).
   */
  def daemonPool(
      prefix: String,
      threads: Int,
      keepAliveSeconds: Int
  ): java.util.concurrent.ThreadPoolExecutor =
    org.apache.spark.util.ThreadUtils.newDaemonCachedThreadPool(prefix, threads, keepAliveSeconds)

  /** One daemon thread named `name`, taking tasks in turn (Spark's own helper). */
  def daemonThread(name: String): java.util.concurrent.ThreadPoolExecutor =
    org.apache.spark.util.ThreadUtils.newDaemonSingleThreadExecutor(name)

  /**
   * The parallelism Spark gives a scan that reads files (`spark.sql.leafNodeDefaultParallelism`,
   * else the context's default parallelism).
   */
  def leafNodeDefaultParallelism(spark: SparkSession): Int =
    spark.asInstanceOf[ClassicSession].leafNodeDefaultParallelism

  /** A Catalyst filter as a data source filter, if it translates. */
  def translateFilter(e: Expression): Option[Filter] =
    DataSourceStrategy.translateFilter(e, supportNestedPredicatePushdown = true)

  /** A Catalyst filter as a V2 predicate, if it translates. */
  def translatePredicate(e: Expression): Option[Predicate] = translateFilter(e).map(_.toV2)

  /**
   * Exactly `files` read with `format` and `schema`: no listing, no globbing (a `[` in a table path
   * is a character, not a pattern), no existence checks beyond opening each file. `options` go to
   * the format and to the file scan (`ignoreCorruptFiles`, `ignoreMissingFiles`).
   */
  def readFiles(
      spark: SparkSession,
      format: FileFormat,
      schema: StructType,
      files: Seq[FileStatus],
      options: Map[String, String]
  ): DataFrame = {
    val relation = HadoopFsRelation(
      new ExactFiles(files),
      partitionSchema = new StructType(),
      dataSchema = schema,
      bucketSpec = None,
      fileFormat = format,
      options = options
    )(spark.asInstanceOf[ClassicSession])
    spark.baseRelationToDataFrame(relation)
  }

  /**
   * `rdd.mapPartitions(f)` without Spark's closure cleaning, as Spark's SQL operators map their
   * partitions: for a function that captures no enclosing instance (one defined in an object, or a
   * lambda over local values), cleaning only reads the bytecode of the class that defines it with
   * ASM and serializes the function once more, a cost the checkpoint task's function would add to a
   * first read on a new driver. The task's serialization still fails on anything that cannot be
   * serialized.
   */
  def mapPartitionsUncleaned[T, U: scala.reflect.ClassTag](
      rdd: org.apache.spark.rdd.RDD[T]
  )(f: Iterator[T] => Iterator[U]): org.apache.spark.rdd.RDD[U] =
    rdd.mapPartitionsInternal(f)

  /**
   * Runs `f` with one read-only SQL conf of the running task answering every `SQLConf.get` in it
   * (no task: `f` alone). In a task Spark makes a new conf for each such call, parsing the task's
   * properties again, and Spark 4.2 calls it for each typed value an interpreted expression reads
   * from an `UnsafeRow` (`PhysicalDataType`): about a tenth of a checkpoint's index task
   * (benchmarks/results/2026-12-05-task-conf.notes.md). Spark wraps its own SQL RDDs' iterator
   * creation, not their iteration, the same way (`SQLExecutionRDD`).
   */
  def withTaskConf[T](f: => T): T =
    // in a task, SQLConf.get is the conf already set for the thread, else a new one of the task
    if (TaskContext.get() == null) f else SQLConf.withExistingConf(SQLConf.get)(f)

  /** A Catalyst expression as a DataFrame column. */
  def column(e: Expression): Column = ExpressionUtils.column(e)

  /** A DataFrame column's Catalyst expression (unresolved until a DataFrame resolves it). */
  def expression(c: Column): Expression = ExpressionUtils.expression(c)

  /** A DataFrame over rows already in Spark's internal format. */
  def internalDataFrame(
      spark: SparkSession,
      rows: RDD[InternalRow],
      schema: StructType
  ): DataFrame =
    spark.asInstanceOf[ClassicSession].internalCreateDataFrame(rows, schema, isStreaming = false)

  /** Tells `input_file_name()` and friends which file (block) the running task reads. */
  def setInputFile(path: String, start: Long, length: Long): Unit =
    InputFileBlockHolder.set(path, start, length)

  def unsetInputFile(): Unit = InputFileBlockHolder.unset()

  /**
   * Runs `open` with no task context on this thread (the running task's is set again after it).
   * Spark's Parquet partition reader factory registers each file reader it opens to be closed when
   * the task completes, and that registration keeps the reader reachable until then even after it
   * was closed: with its column readers, dictionaries and last pages, a few MB per file of a wide
   * table, all of a task's files at once. A reader opened this way is closed by its caller alone.
   */
  def withoutTaskContext[T](open: => T): T = {
    val context = TaskContext.get()
    if (context == null) open
    else {
      TaskContext.unset()
      try open
      finally TaskContext.setTaskContext(context)
    }
  }

  /** Whether strings of `t` compare by their UTF-8 bytes (no collation rules). */
  def binaryOrdered(t: StringType): Boolean = t.supportsBinaryOrdering

  /** `t` with every field, element and value nullable: the type `from_json` reads into. */
  def asNullable(t: StructType): StructType = t.asNullable

  /** A file index of a fixed list of files (one unpartitioned directory). */
  private final class ExactFiles(files: Seq[FileStatus]) extends FileIndex {
    override def rootPaths: Seq[Path] = files.map(_.getPath)
    override def listFiles(
        partitionFilters: Seq[Expression],
        dataFilters: Seq[Expression]
    ): Seq[PartitionDirectory] =
      Seq(PartitionDirectory(InternalRow.empty, files.map(FileStatusWithMetadata(_, Map.empty))))
    override def inputFiles: Array[String] = files.map(_.getPath.toString).toArray
    override def refresh(): Unit = ()
    override def sizeInBytes: Long = files.map(_.getLen).sum
    override def partitionSchema: StructType = new StructType()
  }
}
