package io.deltareplay.internal.index

import io.deltareplay.internal.log.{DvDescriptor, FileEntry, Reconciler, TablePaths}
import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.{col, udf}
import org.apache.spark.sql.types.LongType
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * The snapshot index on the executors: the live files of one table version as a persisted Spark
 * dataset of [[FileEntry]] rows plus each row's key hash ([[KeyHash]]), for tables whose file list
 * is too big for the driver. The driver holds the plan and a few counters, O(partitions). Planning
 * filters it in place (planning's `ExecutorPlanning`); a newer version is derived by
 * [[rolledForward]]: the rows whose key the new commits touched are dropped map-side (a broadcast
 * set of hashes, the key confirmed on a match) and the commits' winning adds are appended; after
 * some roll-forwards the result is repartitioned into a fresh persisted dataset.
 */
private[deltareplay] final class ExecutorIndex private (
    val entry: FileEntry,
    val paths: TablePaths,
    val tableId: String,
    val version: Long,
    val withStats: Boolean,
    val frame: DataFrame,
    val size: Long,
    storageLevel: Option[StorageLevel],
    generation: Int
) extends TableIndex {

  /** Whether the entries are persisted (else every use runs the replay again). */
  def persisted: Boolean = storageLevel.isDefined
  def partitions: Int = frame.queryExecution.toRdd.getNumPartitions

  /** Driver heap the index holds: its plan and counters only. */
  def bytes: Long = 4096

  /** This index rolled forward to `newVersion` by the reconciled commits in between. */
  def rolledForward(
      spark: SparkSession,
      tail: Reconciler,
      newVersion: Long
  ): ExecutorIndex = {
    require(persisted, "only a persisted index is rolled forward")
    if (tail.winners.isEmpty) {
      return new ExecutorIndex(
        entry,
        paths,
        tableId,
        newVersion,
        withStats,
        frame,
        size,
        storageLevel,
        generation
      )
    }
    val keys = new java.util.HashMap[Long, java.util.HashSet[(String, String)]]()
    tail.winners.keySet().forEach { k =>
      keys
        .computeIfAbsent(
          KeyHash.of(k._1, k._2),
          _ => new java.util.HashSet[(String, String)]()
        )
        .add(k)
    }
    val touched = spark.sparkContext.broadcast(keys)
    val p = paths
    val isTouched = udf { (hash: Long, path: String, dv: Row) =>
      val candidates = touched.value.get(hash)
      candidates != null &&
      candidates.contains((p.key(path), DvDescriptor.fromRow(dv).fold("")(_.uniqueId)))
    }
    val kept = frame.where(!isTouched(col(ExecutorIndex.KeyHashColumn), col("path"), col("dv")))
    val toEntry = entry.projector()
    val added = tail.liveFiles()
    val addedRows = added.map { f =>
      val e = toEntry(f)
      val values = entry.schema.fields.indices.map(i => e.get(i, entry.schema(i).dataType))
      org.apache.spark.sql.catalyst.InternalRow.fromSeq(
        values :+ KeyHash.of(p.key(f.path), f.dv.fold("")(_.uniqueId))
      )
    }
    val addedFrame = org.apache.spark.sql.deltareplay.SparkBridge.internalDataFrame(
      spark,
      spark.sparkContext.parallelize(addedRows, 1),
      ExecutorIndex.schema(entry)
    )
    val next = kept.unionByName(addedFrame)
    val compact = generation + 1 >= ExecutorIndex.MaxGenerations
    val level = storageLevel.getOrElse(StorageLevel.MEMORY_AND_DISK)
    val stored = (if (compact) next.repartition(partitions) else next).persist(level)
    val count = stored.count()
    frame.unpersist(blocking = false)
    new ExecutorIndex(
      entry,
      paths,
      tableId,
      newVersion,
      withStats,
      stored,
      count,
      Some(level),
      if (compact) 0 else generation + 1
    )
  }

  override def release(): Unit = if (persisted) frame.unpersist(blocking = false)

  /** The physical plan that filled the persisted dataset (its scan metrics count the log rows). */
  def cachedPlan: org.apache.spark.sql.execution.SparkPlan =
    frame.queryExecution.withCachedData
      .collectFirst { case r: org.apache.spark.sql.execution.columnar.InMemoryRelation =>
        r.cacheBuilder.cachedPlan
      }
      .getOrElse(frame.queryExecution.executedPlan)

  private[index] def home: Home = Home.Executors

  override def keepable: Boolean = persisted

  override def sharesBlocksWith(other: TableIndex): Boolean = other match {
    case e: ExecutorIndex => e.frame eq frame
    case _ => false
  }

  override def liveFiles(): Long = if (persisted) size else frame.count()

  def files(): Iterator[(String, Option[DvDescriptor])] =
    frame
      .select("path", "dv")
      .collect()
      .iterator
      .map(r => r.getString(0) -> DvDescriptor.fromRow(r.getAs[Row]("dv")))

  def byHome[R](f: TableIndex.ByHome[R]): R = f.onExecutors(this)

  override def answeredBy(mode: ReplayPath): String = s"${mode.describe} ($describe)"

  def snapshotOrder(
      spark: SparkSession,
      paths: TablePaths,
      keep: InternalRow => KeptFile,
      sliceFiles: Int,
      storageLevel: StorageLevel,
      first: Array[(Long, UTF8String, KeptFile)]
  ): SnapshotOrder =
    new SlicedSnapshotOrder(spark, this, paths, keep, sliceFiles, storageLevel, first)

  def describe: String = storageLevel match {
    case Some(level) => f"index on the executors: $size%,d files in $partitions partitions ($level)"
    case None => "index on the executors: not persisted (replayed by the planning job)"
  }
}

private[deltareplay] object ExecutorIndex {
  val KeyHashColumn = "_keyHash"

  /** After this many roll-forwards the dataset is repartitioned (its lineage stays short). */
  val MaxGenerations = 8

  def schema(entry: FileEntry) = entry.schema.add(KeyHashColumn, LongType, nullable = false)

  /**
   * The entries of a live-file frame ([[LiveFile.Schema]]) as the index of `version`: statistics
   * parsed and key hashes computed in the replay tasks; persisted (and counted) at `storageLevel`,
   * or, without one, left as a plan that each use runs (a read that keeps nothing).
   */
  def build(
      spark: SparkSession,
      entry: FileEntry,
      paths: TablePaths,
      tableId: String,
      version: Long,
      withStats: Boolean,
      live: DataFrame,
      storageLevel: Option[StorageLevel]
  ): ExecutorIndex = {
    val p = paths
    val hash = udf { (path: String, dv: Row) =>
      KeyHash.of(p.key(path), DvDescriptor.fromRow(dv).fold("")(_.uniqueId))
    }
    val columns: Seq[Column] =
      entry.columnsFromLiveFile(live.columns.contains(FileEntry.StatsParsedColumn)) :+
        hash(col("path"), col("dv")).as(KeyHashColumn)
    val minPartitions = spark.sparkContext.defaultParallelism
    val entries = live.select(columns: _*)
    val spread =
      if (entries.rdd.getNumPartitions < minPartitions) entries.repartition(minPartitions)
      else entries
    storageLevel match {
      case Some(level) =>
        val stored = spread.persist(level)
        val size = stored.count()
        new ExecutorIndex(entry, paths, tableId, version, withStats, stored, size, storageLevel, 0)
      case None =>
        new ExecutorIndex(entry, paths, tableId, version, withStats, entries, -1L, None, 0)
    }
  }
}
