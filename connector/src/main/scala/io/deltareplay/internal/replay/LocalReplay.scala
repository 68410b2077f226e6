package io.deltareplay.internal.replay

import scala.collection.mutable

import io.deltareplay.internal.index.IndexBuilds
import io.deltareplay.internal.log.{
  FileAction,
  LiveFile,
  LogReader,
  LogSegment,
  LogSettings,
  TablePaths
}
import org.apache.spark.sql.SparkSession

/**
 * The replay rules of [[Replay]] on the driver, with no Spark job: a hash map from key to the
 * newest action. Commits are applied in version order; within one commit removes before adds.
 */
private[deltareplay] object LocalReplay {

  type Key = (String, String)

  /** The newest action per key among `actions` of the commits after a checkpoint. */
  final class Reconciler(paths: TablePaths) {
    val winners = new java.util.HashMap[Key, FileAction.Action]()
    var count = 0L

    def key(a: FileAction.Action): Key = a.key(paths)

    /** Whether a live file's key is among those the reconciled commits touched. */
    def touched(f: LiveFile): Boolean =
      !winners.isEmpty && winners.containsKey((paths.key(f.path), f.dv.fold("")(_.uniqueId)))

    /** Applies one commit's actions (rule 2: within a commit the add wins). */
    def applyCommit(actions: Iterable[FileAction.Action]): Unit = {
      val (adds, removes) = actions.partition(_.isAdd)
      removes.foreach(r => winners.put(key(r), r))
      adds.foreach(a => winners.put(key(a), a))
      count += actions.size
    }

    /** Applies a stream of actions ordered by version, grouping each version's actions. */
    def applyInOrder(actions: Iterator[FileAction.Action]): Unit = {
      val buffer = mutable.ArrayBuffer.empty[FileAction.Action]
      var current = Long.MinValue
      actions.foreach { a =>
        IndexBuilds.yieldPoint()
        if (a.version != current && buffer.nonEmpty) {
          applyCommit(buffer.toSeq)
          buffer.clear()
        }
        current = a.version
        buffer += a
      }
      if (buffer.nonEmpty) applyCommit(buffer.toSeq)
    }

    /** The same reconciled commits with the actions' statistics left out. */
    def withoutStats: Reconciler = {
      val r = new Reconciler(paths)
      winners.forEach((k, a) => r.winners.put(k, if (a.stats == null) a else a.copy(stats = null)))
      r.count = count
      r
    }

    /** The winning adds: the live files these commits leave (rule 3). */
    def liveFiles(interner: Replay.Interner = new Replay.Interner): Seq[LiveFile] = {
      val out = mutable.ArrayBuffer.empty[LiveFile]
      winners.values().forEach { a =>
        if (a.isAdd) out += a.toLiveFile(interner(a.partitionValues))
      }
      out.toSeq
    }
  }

  /** The commits `reader` reads, reconciled (keys resolved against `paths`). */
  def reconcile(
      spark: SparkSession,
      segment: LogSegment,
      settings: LogSettings,
      withStats: Boolean
  ): Reconciler = reconcile(new LogReader(spark, segment, settings), segment.paths, withStats)

  def reconcile(reader: LogReader, paths: TablePaths, withStats: Boolean): Reconciler = {
    val tail = new Reconciler(paths)
    tail.applyInOrder(reader.commitActions(withStats))
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
    val interner = new Replay.Interner
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
