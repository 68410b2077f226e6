package io.deltareplay.internal.replay

import scala.collection.mutable

import io.deltareplay.internal.index.IndexBuilds
import io.deltareplay.internal.log.{
  Interner,
  LiveFile,
  LogReader,
  LogSegment,
  LogSettings,
  Reconciler,
  TablePaths
}
import org.apache.spark.sql.SparkSession

/**
 * The replay rules of [[Replay]] on the driver, with no Spark job: a hash map from key to the
 * newest action. Commits are applied in version order; within one commit removes before adds.
 */
private[deltareplay] object LocalReplay {

  /** The commits `reader` reads, reconciled (keys resolved against `paths`). */
  def reconcile(
      spark: SparkSession,
      segment: LogSegment,
      settings: LogSettings,
      withStats: Boolean
  ): Reconciler = reconcile(new LogReader(spark, segment, settings), segment.paths, withStats)

  def reconcile(reader: LogReader, paths: TablePaths, withStats: Boolean): Reconciler = {
    val tail = new Reconciler(paths)
    tail.applyInOrder(reader.commitActions(withStats), () => IndexBuilds.yieldPoint())
    tail
  }

  /**
   * The commits after `segment`'s checkpoint reconciled: parsed ahead of need by [[TailPrefetch]]
   * if it did, else read now.
   */
  def tailOf(reader: LogReader, segment: LogSegment, withStats: Boolean): Reconciler =
    TailPrefetch
      .take(reader.spark, segment, withStats)
      .getOrElse(reconcile(reader, segment.paths, withStats))

  /** Live files of the segment and the number of actions replayed. */
  def run(
      reader: LogReader,
      segment: LogSegment,
      needStats: Boolean
  ): (Array[LiveFile], Long) = {
    val tail = tailOf(reader, segment, needStats)
    val interner = new Interner
    val live = mutable.ArrayBuffer.empty[LiveFile]
    var checkpointRows = 0L
    // Checkpoint rows are unique per key: one survives unless a later commit touched its key.
    reader.checkpointActions(needStats).foreach { a =>
      IndexBuilds.yieldPoint()
      checkpointRows += 1
      if (a.isAdd && (tail.winners.isEmpty || !tail.winners.containsKey(tail.key(a)))) {
        live += a.toLiveFile(interner(a.partitionValues))
      }
    }
    live ++= tail.liveFiles(interner)
    (live.toArray, checkpointRows + tail.count)
  }
}
