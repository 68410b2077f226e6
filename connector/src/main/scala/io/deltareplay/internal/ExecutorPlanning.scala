package io.deltareplay.internal

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.mapreduce.{Job, JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.TaskContext
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow}
import org.apache.spark.sql.catalyst.util.MapData
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.execution.datasources.{
  OutputWriter,
  OutputWriterFactory,
  PartitionedFile
}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.execution.datasources.parquet.{ParquetOptions, ParquetUtils}
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.util.SerializableConfiguration
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._
import org.apache.spark.util.LongAccumulator

/**
 * One input partition of executor-side planning: bin `bin` of one manifest file. The driver holds
 * one of these per input partition and no file list; the reader expands it into file splits.
 */
private[deltareplay] case class ManifestPartition(
    index: Int,
    manifest: String,
    manifestSize: Long,
    bin: Int,
    files: Long,
    bytes: Long
) extends InputPartition {
  override def preferredLocations(): Array[String] = Array.empty
}

/** What the replay part of executor-side planning did (the file list never reaches the driver). */
private[deltareplay] case class ExecutorReplay(
    mode: String,
    actionsReplayed: Long,
    liveFiles: Long,
    millis: Long,
    tasks: Int
)

/**
 * Planning that keeps the file list on the executors, for tables whose file list is too big for the
 * driver (`planning.mode = executors`, or `auto` above `planning.executorsMinFiles`).
 *
 * One Spark job: the log is replayed as a DataFrame ([[DistributedReplay.liveFrame]]); in the same
 * tasks each live file is pruned by the partition filters, skipped by its statistics, cut into
 * splits of at most `maxPartitionBytes`, and the splits are packed into bins (a new bin when the
 * next split would overflow it, each split costing its length plus `openCostInBytes`, as Spark
 * packs file splits). Each task writes its splits, in bin order, to its own manifest Parquet file
 * and returns one summary per bin (files, bytes, rows, DVs): that is all the driver receives, one
 * row per input partition. A reader task reads the rows of its bin (the bin filter is pushed into
 * the Parquet reader; manifests have small pages) and then reads those files as a driver-planned
 * partition would.
 *
 * Manifests live in a fresh directory under `planning.scratchDir`, deleted when the scan object is
 * garbage-collected (a physical plan may run more than once, so not at query end) or at JVM exit.
 */
private[deltareplay] object ExecutorPlanning {

  /** One row per file split (a file's first split has `start` 0). */
  val ManifestSchema: StructType = new StructType()
    .add("bin", IntegerType, nullable = false)
    .add("path", StringType, nullable = false) // as the log stores it (relative or absolute)
    .add("partitionValues", MapType(StringType, StringType))
    .add("start", LongType, nullable = false)
    .add("length", LongType, nullable = false)
    .add("fileSize", LongType, nullable = false)
    .add("modificationTime", LongType, nullable = false)
    .add("dv", DvDescriptor.Type)

  /** Manifest Parquet layout: small pages, so that one bin's read decodes little else. */
  val WriteOptions: Map[String, String] = Map(
    "parquet.page.row.count.limit" -> "1000",
    "parquet.block.size" -> (8L * 1024 * 1024).toString
  )

  /**
   * Whether a scan of `snapshot` plans on the executors. `auto` does when no replayed file list is
   * at hand on the driver (from the aggregate pushdown or the replay state cache) and the table has
   * about `executorsMinFiles` files or more.
   */
  def chosen(
      spark: SparkSession,
      snapshot: TableSnapshot,
      conf: ReadConf,
      needStats: Boolean,
      replayedOnDriver: Boolean
  ): Boolean = conf.planningMode match {
    case PlanningMode.Driver => false
    case PlanningMode.Executors => true
    case PlanningMode.Auto =>
      val segment = snapshot.segment
      def cached = conf.stateCache && conf.replayMode == ReplayMode.Auto &&
        ReplayState
          .lookup(
            spark,
            segment.paths.root,
            snapshot.meta.tableId,
            segment.version,
            needStats
          )
          .isDefined
      // No log holds a file action in under 8 bytes: smaller logs skip the footer reads.
      def big = segment.totalBytes >= 8 * conf.executorsMinFiles &&
        new LogReader(spark, segment).estimatedFiles() >= conf.executorsMinFiles
      !replayedOnDriver && conf.replayMode != ReplayMode.Local && !cached && big
  }

  def plan(
      spark: SparkSession,
      snapshot: TableSnapshot,
      conf: ReadConf,
      partitionFilters: Seq[Expression],
      dataFilters: Seq[Expression],
      skipping: Boolean,
      owner: AnyRef
  ): (PlannedScan, ExecutorReplay) = {
    val started = System.nanoTime()
    def millisSince(t: Long) = (System.nanoTime() - t) / 1000000
    val segment = snapshot.segment
    val sqlConf = spark.sessionState.conf
    val needStats = skipping && dataFilters.nonEmpty
    val dir = Scratch.newDir(spark, conf.scratchDir, owner)
    val sc = spark.sparkContext
    val live = sc.longAccumulator("delta-replay live files")
    val pruned = sc.longAccumulator("delta-replay files after partition pruning")
    val binner = new Binner(
      partitions = PartitionFilter(snapshot, partitionFilters, sqlConf.sessionLocalTimeZone),
      skipping = if (needStats) Some(SkippingSpec(snapshot, dataFilters, sqlConf)) else None,
      maxSplit = sqlConf.filesMaxPartitionBytes,
      openCost = sqlConf.filesOpenCostInBytes,
      liveCount = live,
      prunedCount = pruned
    )
    val writer = ManifestWriter(spark, dir)
    val replay = new DistributedReplay(spark, segment, conf, needStats)
    val description = s"delta-replay: plan ${segment.table} v${segment.version} on the executors"
    val ((actions, summary), tasks) = DistributedReplay.inJobGroup(spark, description) {
      val (frame, tailActions) = replay.liveFrame()
      val qe = frame.queryExecution
      val bins = qe.toRdd.mapPartitions(rows => binner.write(rows, writer))
      val summary = DistributedReplay.logErrors(segment)(bins.collect())
      (DistributedReplay.scannedRows(qe.executedPlan) + tailActions, summary)
    }
    val replayMillis = millisSince(started)
    val interned = new java.util.HashMap[String, String]()
    val sorted = summary
      .map(b => b.copy(manifest = interned.computeIfAbsent(b.manifest, m => m)))
      .sortBy(b => (-b.bytes, b.manifest, b.bin))
    val partitions = sorted.zipWithIndex.map { case (b, i) => b.toPartition(i) }
    val rows = if (summary.exists(_.rowsUnknown)) None else Some(summary.map(_.rows).sum)
    val planned = PlannedScan(
      partitions = partitions.map(p => p: InputPartition),
      filesAfterPruning = pruned.sum,
      filesAfterSkipping = summary.map(_.files).sum,
      bytesAfterSkipping = summary.map(_.bytes).sum,
      rowsAfterSkipping = rows,
      hasDeletionVectors = summary.exists(_.hasDv),
      planMillis = millisSince(started) - replayMillis,
      planning = s"executors (${interned.size} manifests, ${partitions.length} bins)"
    )
    (
      planned,
      ExecutorReplay(
        mode = replay.modeLabel,
        actionsReplayed = actions,
        liveFiles = live.sum,
        millis = replayMillis,
        tasks = tasks
      )
    )
  }

}

/** One bin of one manifest, as the task that wrote it reports it (O(bins) reach the driver). */
private[deltareplay] case class BinSummary(
    manifest: String,
    manifestSize: Long,
    bin: Int,
    files: Long,
    bytes: Long,
    rows: Long,
    rowsUnknown: Boolean,
    hasDv: Boolean
) {
  def toPartition(index: Int): ManifestPartition =
    ManifestPartition(index, manifest, manifestSize, bin, files, bytes)
}

/**
 * Writes a task's manifest straight to its final place with Spark's own Parquet writer (set up as
 * Spark's file writer sets it up), without a commit protocol: the file name carries the task
 * attempt, and the task's result names the file, so a failed attempt's file is never read (it goes
 * with the directory).
 */
private[deltareplay] case class ManifestWriter(
    directory: String,
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
        ManifestWriter.Schema,
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
  val Schema: StructType = ExecutorPlanning.ManifestSchema

  def apply(spark: SparkSession, dir: Path): ManifestWriter = {
    val sqlConf = spark.sessionState.conf
    val job = Job.getInstance(spark.sessionState.newHadoopConf())
    ExecutorPlanning.WriteOptions.foreach { case (k, v) => job.getConfiguration.set(k, v) }
    val factory = ParquetUtils.prepareWrite(
      sqlConf,
      job,
      Schema,
      new ParquetOptions(Map("compression" -> "snappy"), sqlConf)
    )
    val conf = spark.sparkContext.broadcast(new SerializableConfiguration(job.getConfiguration))
    ManifestWriter(dir.toString, factory, conf)
  }
}

/**
 * Runs in the tasks of executor-side planning: prunes, skips, splits and bins the live files of one
 * replay partition, streaming (O(1) memory: bins are filled in arrival order, no sort).
 */
private final class Binner(
    partitions: PartitionFilter,
    skipping: Option[SkippingSpec],
    maxSplit: Long,
    openCost: Long,
    liveCount: LongAccumulator,
    prunedCount: LongAccumulator
) extends Serializable {

  /**
   * Rows of [[DistributedReplay.liveFrame]] in; the splits that survive written to this task's
   * manifest (nothing when none survives); the manifest's bins out.
   */
  def write(rows: Iterator[InternalRow], manifests: ManifestWriter): Iterator[BinSummary] = {
    val stats = skipping.map(_.build())
    val packer = new BinPacker(maxSplit, openCost)
    val bins = scala.collection.mutable.ArrayBuffer.empty[Array[Long]] // files, bytes, rows, flags
    var open: OpenManifest = null
    val out = new GenericInternalRow(ManifestWriter.Schema.length)
    var live, kept = 0L
    try
      rows.foreach { r =>
        live += 1
        import LiveFile.Ord
        val pv = if (r.isNullAt(Ord.PartitionValues)) null else r.getMap(Ord.PartitionValues)
        if (partitions.matches(pv)) {
          kept += 1
          val statsJson =
            if (stats.isEmpty || r.isNullAt(Ord.Stats)) null
            else r.getUTF8String(Ord.Stats).toString
          if (stats.forall(_.mightMatch(statsJson))) {
            if (open == null) open = manifests.open()
            val size = if (r.isNullAt(Ord.Size)) 0L else r.getLong(Ord.Size)
            val dv = if (r.isNullAt(Ord.Dv)) null else r.getStruct(Ord.Dv, DvDescriptor.Type.length)
            val fileRows = StatsRows
              .numRecords(statsJson)
              .map(n => n - (if (dv == null) 0L else dv.getLong(DvDescriptor.Ord.Cardinality)))
            out.update(1, r.getUTF8String(Ord.Path)) // as the log has it; readers resolve it
            out.update(2, pv)
            out.setLong(5, size)
            out.setLong(
              6,
              if (r.isNullAt(Ord.ModificationTime)) 0L else r.getLong(Ord.ModificationTime)
            )
            out.update(7, dv)
            var start = 0L
            while (start < math.max(size, 1L)) {
              val length = math.min(maxSplit, size - start)
              val bin = packer.add(length)
              if (bin == bins.length) bins += new Array[Long](4)
              val b = bins(bin)
              out.setInt(0, bin)
              out.setLong(3, start)
              out.setLong(4, length)
              if (start == 0) {
                b(0) += 1
                fileRows match {
                  case Some(n) => b(2) += n
                  case None => b(3) |= 1L
                }
                if (dv != null) b(3) |= 2L
              }
              b(1) += length
              open.write(out)
              start += maxSplit
            }
          }
        }
      }
    catch {
      case e: Throwable =>
        if (open != null) open.abort()
        throw e
    } finally {
      liveCount.add(live)
      prunedCount.add(kept)
    }
    if (open == null) Iterator.empty
    else {
      val manifest = open.uri
      val size = open.finish()
      bins.iterator.zipWithIndex.map { case (b, i) =>
        BinSummary(manifest, size, i, b(0), b(1), b(2), (b(3) & 1L) != 0, (b(3) & 2L) != 0)
      }
    }
  }
}

/**
 * Spark's packing of file splits into input partitions: a split joins the open bin unless its
 * length would overflow `maxSplit`; each split then costs its length plus `openCost`.
 */
private[deltareplay] final class BinPacker(maxSplit: Long, openCost: Long) {
  private var bin = -1
  private var filled = 0L
  private var empty = true

  /** The bin of the next split. */
  def add(length: Long): Int = {
    if (empty || filled + length > maxSplit) {
      bin += 1
      filled = 0L
    }
    empty = false
    filled += length + openCost
    bin
  }
}

/** The exact partition-filter test on a file's string partition values; rebuilt where it runs. */
private[deltareplay] case class PartitionFilter(
    schema: StructType,
    physicalNames: Seq[String],
    filters: Seq[Expression],
    timeZone: String
) {
  @transient private lazy val predicate = {
    import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, Predicate}
    val attrs = schema.map(f => AttributeReference(f.name, f.dataType, f.nullable)())
    val bound = filters.reduce(And).transform { case a: AttributeReference =>
      attrs.find(_.name.equalsIgnoreCase(a.name)).getOrElse(a)
    }
    val p = Predicate.create(bound, attrs)
    p.initialize(0)
    p
  }
  @transient private lazy val values = new PartitionValues(schema, physicalNames, timeZone)

  @transient private lazy val interner = new Replay.Interner

  def matches(partitionValues: Map[String, String]): Boolean =
    filters.isEmpty || predicate.eval(values.row(partitionValues))

  /**
   * [[matches]] on a row's `partitionValues` map (null: none), parsed only when a filter needs
   * them; identical maps share one typed row.
   */
  def matches(partitionValues: MapData): Boolean =
    filters.isEmpty || matches(
      if (partitionValues == null) Map.empty[String, String]
      else interner(FileAction.toMap(partitionValues))
    )
}

private[deltareplay] object PartitionFilter {

  /** The filter over the table's whole partition schema. */
  def apply(
      snapshot: TableSnapshot,
      filters: Seq[Expression],
      timeZone: String
  ): PartitionFilter = {
    val meta = snapshot.meta
    val schema = StructType(snapshot.schema.filter(f => meta.partitionColumns.contains(f.name)))
    PartitionFilter(schema, schema.fieldNames.toSeq.map(meta.physicalName), filters, timeZone)
  }
}

/** What [[StatsSkipping]] needs, in a form that travels to executors. */
private[deltareplay] case class SkippingSpec(
    filters: Seq[Expression],
    columnTypes: Map[String, DataType],
    physicalNames: Map[String, String],
    timeZone: String
) {
  def build(): StatsSkipping =
    new StatsSkipping(filters, columnTypes, n => physicalNames.getOrElse(n, n), timeZone)
}

private[deltareplay] object SkippingSpec {
  def apply(
      snapshot: TableSnapshot,
      filters: Seq[Expression],
      conf: org.apache.spark.sql.internal.SQLConf
  ): SkippingSpec = {
    val fields = snapshot.schema.fields
    SkippingSpec(
      filters,
      fields.map(f => f.name -> f.dataType).toMap,
      fields.map(f => f.name -> snapshot.meta.physicalName(f.name)).toMap,
      conf.sessionLocalTimeZone
    )
  }
}

/**
 * Reads the splits of one bin of a manifest, on an executor, with Spark's Parquet reader pushing
 * `bin = k` (row groups and pages of other bins are skipped).
 *
 * @param sqlSettings
 *   the session's SQL settings (a SQLConf does not survive serialization; it is rebuilt here)
 * @param hadoopConf
 *   Hadoop configuration set up to read [[ExecutorPlanning.ManifestSchema]]
 */
private[deltareplay] case class ManifestReader(
    paths: TablePaths,
    sqlSettings: Map[String, String],
    hadoopConf: Broadcast[SerializableConfiguration],
    partitionSchema: StructType,
    physicalNames: Seq[String],
    timeZone: String
) {
  @transient private lazy val sqlConf = {
    val c = new SQLConf
    sqlSettings.foreach { case (k, v) => c.setConfString(k, v) }
    c
  }

  private def parquet(bin: Int): ParquetPartitionReaderFactory = {
    val schema = ExecutorPlanning.ManifestSchema
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
  }

  def expand(p: ManifestPartition): (Array[PartitionedFile], Array[DvDescriptor]) = {
    val values = new PartitionValues(partitionSchema, physicalNames, timeZone)
    val interner = new Replay.Interner
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
        if (r.getInt(0) == p.bin) {
          val pv =
            if (r.isNullAt(2)) Map.empty[String, String]
            else interner(FileAction.toMap(r.getMap(2)))
          files += PartitionedFile(
            values.row(pv),
            SparkPath.fromUrlString(paths.absolute(r.getUTF8String(1).toString)),
            r.getLong(3),
            r.getLong(4),
            Array.empty,
            r.getLong(6),
            r.getLong(5),
            Map.empty
          )
          dvs += DvDescriptor.fromInternalRow(r, 7).orNull
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
