package io.deltareplay.internal

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.functions.{coalesce, col, count, lit, sum}
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.apache.spark.storage.StorageLevel

/**
 * The files of a stream's initial snapshot, in (modificationTime, path) order with contiguous
 * indexes 0..size-1 that are stable across restarts (the order is a function of the files).
 */
private[deltareplay] trait SnapshotIndex {
  def size: Long

  /** Files with index in (fromExclusive, toInclusive], in index order. */
  def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, LiveFile)]

  /** Files and bytes with index above `after`. */
  def remaining(after: Long): (Long, Long)

  /** Frees what the index holds (cached blocks); the stream has moved past the snapshot. */
  def release(): Unit

  def description: String
}

private[deltareplay] object SnapshotIndex {

  /** Orders files as delta-spark's streaming source does. */
  val FileOrder: Ordering[LiveFile] = Ordering.by((f: LiveFile) => (f.modificationTime, f.path))

  /** Builds the index: on the driver for small logs, persisted on the executors otherwise. */
  def build(
      spark: SparkSession,
      segment: LogSegment,
      conf: ReadConf,
      storageLevel: StorageLevel
  ): SnapshotIndex =
    if (!Replay.isDistributed(segment, conf)) {
      val (files, _) = LocalReplay.run(new LogReader(spark, segment), segment, needStats = false)
      new LocalSnapshotIndex(files.sorted(FileOrder))
    } else {
      val live = new DistributedReplay(spark, segment, conf, needStats = false).liveFrame()._1
      new DistributedSnapshotIndex(spark, live, conf, storageLevel)
    }

}

private[deltareplay] final class LocalSnapshotIndex(files: Array[LiveFile]) extends SnapshotIndex {
  override def size: Long = files.length
  override def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, LiveFile)] = {
    val from = math.max(0L, fromExclusive + 1).toInt
    val to = math.min(files.length - 1L, toInclusive).toInt
    (from to to).map(i => i.toLong -> files(i))
  }
  override def remaining(after: Long): (Long, Long) = {
    val rest = files.drop(math.max(0L, after + 1).toInt)
    (rest.length.toLong, rest.iterator.map(_.size).sum)
  }
  override def release(): Unit = ()
  override def description: String = s"${files.length} files on the driver"
}

/**
 * Range-sorted by (modificationTime, path) on the executors, indexed with `zipWithIndex` (no global
 * window into one partition), stats dropped, persisted. The driver only ever holds one
 * micro-batch's range of files.
 */
private[deltareplay] final class DistributedSnapshotIndex(
    spark: SparkSession,
    live: DataFrame,
    conf: ReadConf,
    storageLevel: StorageLevel
) extends SnapshotIndex {
  private val partitions =
    if (conf.replayPartitions > 0) conf.replayPartitions
    else spark.sessionState.conf.numShufflePartitions

  private val indexed: DataFrame = {
    val sorted = live
      .repartitionByRange(partitions, col("modificationTime"), col("path"))
      .sortWithinPartitions("modificationTime", "path")
    val schema = StructType(
      sorted.schema.fields :+ StructField("index", LongType, nullable = false)
    )
    val rows = sorted.rdd.zipWithIndex().map { case (row, i) => Row.fromSeq(row.toSeq :+ i) }
    spark.createDataFrame(rows, schema).persist(storageLevel)
  }

  override val size: Long = indexed.count()

  override def range(fromExclusive: Long, toInclusive: Long): Seq[(Long, LiveFile)] =
    indexed
      .where(col("index") > fromExclusive && col("index") <= toInclusive)
      .collect()
      .map(r => r.getAs[Long]("index") -> LiveFile.fromRow(r))
      .sortBy(_._1)
      .toSeq

  override def remaining(after: Long): (Long, Long) = {
    val r =
      indexed.where(col("index") > after).agg(count("*"), coalesce(sum("size"), lit(0L))).head()
    (r.getLong(0), r.getLong(1))
  }

  override def release(): Unit = indexed.unpersist(blocking = false)

  override def description: String = s"$size files persisted on the executors ($storageLevel)"
}
