package io.deltareplay.internal.planning

import java.util.UUID

import scala.util.control.NonFatal

import io.deltareplay.Errors
import io.deltareplay.internal.log.FileEntry
import io.deltareplay.internal.log.{DvDescriptor, TablePaths}
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.mapreduce.{Job, JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{
  OutputWriter,
  OutputWriterFactory,
  PartitionedFile
}
import org.apache.spark.sql.execution.datasources.parquet.{ParquetOptions, ParquetUtils}
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._
import org.apache.spark.util.SerializableConfiguration

/**
 * The manifests of executor-side planning: one Parquet file per planning task, one row per file
 * split: `bin`, `start`, `length`, then the file's [[FileEntry]] fields but its statistics (`path`
 * as the log stores it, `size`, `modificationTime`, `dv`, typed `partition`), in bin order with
 * small pages, so that one bin's read decodes little else.
 */
private[deltareplay] object Manifests {

  def schema(entry: FileEntry): StructType = {
    val base = new StructType()
      .add("bin", IntegerType, nullable = false)
      .add("start", LongType, nullable = false)
      .add("length", LongType, nullable = false)
      .add("path", StringType, nullable = false)
      .add("size", LongType, nullable = false)
      .add("modificationTime", LongType, nullable = false)
      .add("dv", DvDescriptor.Type)
    // Parquet cannot hold an empty struct: unpartitioned tables have no partition field.
    if (entry.partitionSchema.isEmpty) base else base.add("partition", entry.partitionSchema)
  }

  val Bin = 0
  val Start = 1
  val Length = 2
  val Path = 3
  val Size = 4
  val ModificationTime = 5
  val Dv = 6
  val Partition = 7

  /** Manifest Parquet layout: small pages, so that one bin's read decodes little else. */
  val WriteOptions: Map[String, String] = Map(
    "parquet.page.row.count.limit" -> "1000",
    "parquet.block.size" -> (8L * 1024 * 1024).toString
  )
}

/**
 * Writes a task's manifest straight to its final place with Spark's own Parquet writer (set up as
 * Spark's file writer sets it up), without a commit protocol: the file name carries the task
 * attempt, and the task's result names the file, so a failed attempt's file is never read (it goes
 * with the directory).
 */
private[deltareplay] case class ManifestWriter(
    directory: String,
    schema: StructType,
    factory: OutputWriterFactory,
    hadoopConf: Broadcast[SerializableConfiguration]
) {

  /** Opens the manifest of the running task; a failure names the scratch directory. */
  def open(): OpenManifest =
    try {
      val task = TaskContext.get()
      val path =
        new Path(directory, f"manifest-${task.partitionId()}%05d-${task.taskAttemptId()}.parquet")
      val attempt = new TaskAttemptID(
        new TaskID(new JobID("deltareplay", task.stageId()), TaskType.MAP, task.partitionId()),
        task.attemptNumber()
      )
      val conf = hadoopConf.value.value
      val writer = factory.newInstance(
        path.toString,
        schema,
        new TaskAttemptContextImpl(conf, attempt)
      )
      new OpenManifest(writer, path, conf)
    } catch { case NonFatal(e) => throw Errors.manifestWriteFailed(directory, e) }
}

/** A task's manifest being written. */
private[deltareplay] final class OpenManifest(
    writer: OutputWriter,
    path: Path,
    conf: org.apache.hadoop.conf.Configuration
) {
  def uri: String = path.toUri.toString

  def write(row: InternalRow): Unit = writer.write(row)

  /** Closes it after a failure (the file is never read). */
  def abort(): Unit = scala.util.Try(writer.close())

  /** Closes it; returns its size. A failure names the manifest. */
  def finish(): Long =
    try {
      writer.close()
      path.getFileSystem(conf).getFileStatus(path).getLen
    } catch { case NonFatal(e) => throw Errors.manifestWriteFailed(uri, e) }
}

private[deltareplay] object ManifestWriter {

  /**
   * A writer of manifests of `schema` in `dir`, with Spark's Parquet writer configured by
   * `sqlConf`.
   */
  def apply(
      spark: SparkSession,
      sqlConf: SQLConf,
      dir: Path,
      schema: StructType
  ): ManifestWriter = {
    val job = Job.getInstance(spark.sessionState.newHadoopConf())
    Manifests.WriteOptions.foreach { case (k, v) => job.getConfiguration.set(k, v) }
    val factory = ParquetUtils.prepareWrite(
      sqlConf,
      job,
      schema,
      new ParquetOptions(Map("compression" -> "snappy"), sqlConf)
    )
    val conf = spark.sparkContext.broadcast(new SerializableConfiguration(job.getConfiguration))
    ManifestWriter(dir.toString, schema, factory, conf)
  }
}

/**
 * Reads the splits of one bin of a manifest, on an executor, with Spark's Parquet reader pushing
 * `bin = k` (row groups and pages of other bins are skipped).
 *
 * @param sqlSettings
 *   the session's SQL settings (a SQLConf does not survive serialization; it is rebuilt here)
 * @param hadoopConf
 *   Hadoop configuration set up to read the manifest schema
 */
private[deltareplay] case class ManifestReader(
    paths: TablePaths,
    entry: FileEntry,
    sqlSettings: Map[String, String],
    hadoopConf: Broadcast[SerializableConfiguration],
    readPartitionSchema: StructType
) {
  @transient private lazy val sqlConf = {
    val c = new SQLConf
    sqlSettings.foreach { case (k, v) => c.setConfString(k, v) }
    c
  }

  @transient private lazy val schema = Manifests.schema(entry)

  private def parquet(bin: Int): ParquetPartitionReaderFactory =
    ParquetPartitionReaderFactory(
      sqlConf,
      hadoopConf,
      schema,
      schema,
      new StructType(),
      Array(sources.EqualTo("bin", bin)),
      None,
      new ParquetOptions(Map.empty[String, String], sqlConf)
    )

  def expand(p: ManifestPartition): (Array[PartitionedFile], Array[DvDescriptor]) = {
    val partitionRow = entry.partitionRowReader(readPartitionSchema, Manifests.Partition)
    val rowsByValues = new java.util.HashMap[InternalRow, InternalRow]()
    val manifest = PartitionedFile(
      InternalRow.empty,
      SparkPath.fromUrlString(p.manifest),
      0L,
      p.manifestSize,
      Array.empty,
      0L,
      p.manifestSize,
      Map.empty
    )
    val reader = parquet(p.bin).buildReader(manifest)
    val files = Array.newBuilder[PartitionedFile]
    val dvs = Array.newBuilder[DvDescriptor]
    try
      while (reader.next()) {
        val r = reader.get()
        if (r.getInt(Manifests.Bin) == p.bin) {
          val values = partitionRow(r)
          val row = Option(rowsByValues.putIfAbsent(values, values)).getOrElse(values)
          files += PartitionedFile(
            row,
            SparkPath.fromUrlString(paths.absolute(r.getUTF8String(Manifests.Path).toString)),
            r.getLong(Manifests.Start),
            r.getLong(Manifests.Length),
            Array.empty,
            r.getLong(Manifests.ModificationTime),
            r.getLong(Manifests.Size),
            Map.empty
          )
          dvs += DvDescriptor.fromInternalRow(r, Manifests.Dv).orNull
        }
      }
    finally reader.close()
    val out = (files.result(), dvs.result())
    val found = out._1.count(_.start == 0)
    if (found != p.files) {
      throw new IllegalStateException(
        s"bin ${p.bin} holds $found files where planning counted ${p.files}; the manifest changed"
      )
    }
    out
  }
}

/** Scratch directories of executor-side planning and their cleanup. */
private[deltareplay] object Scratch {
  private val cleaner = java.lang.ref.Cleaner.create()
  // per JVM, not per session: the application directories registered for deletion at JVM exit
  // (Hadoop's `deleteOnExit` runs when the JVM's file systems close, whatever the session)
  private val registered = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /**
   * A new directory under `root` (resolved against the default file system), inside one directory
   * per application that is deleted at JVM exit; the new directory itself is deleted as soon as
   * `owner` is garbage-collected.
   */
  def newDir(spark: SparkSession, root: String, owner: AnyRef): Path = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    val rootPath = new Path(root)
    val fs = rootPath.getFileSystem(hadoopConf)
    val appDir = new Path(fs.makeQualified(rootPath), spark.sparkContext.applicationId)
    if (registered.add(appDir.toString)) fs.deleteOnExit(appDir)
    val dir = new Path(appDir, s"manifests-${UUID.randomUUID()}")
    cleaner.register(owner, new Deleter(fs, dir))
    dir
  }

  private final class Deleter(fs: FileSystem, dir: Path) extends Runnable {
    override def run(): Unit =
      try fs.delete(dir, true)
      catch { case NonFatal(_) => () }
  }
}
