package io.deltareplay.internal

import scala.collection.mutable

/**
 * The replay rules of [[Replay]] on the driver, with no Spark job: a hash map from key to the
 * newest action. Commits are applied in version order; within one commit removes before adds.
 */
private[deltareplay] object LocalReplay {

  type Key = (String, String)

  /** The newest action per key among `actions` of the commits after a checkpoint. */
  final class Reconciler(tableUri: String) {
    val winners = new java.util.HashMap[Key, RawAction]()
    var count = 0L

    def key(a: RawAction): Key =
      (Replay.canonicalPath(tableUri, a.path), a.dv.map(_.uniqueId).getOrElse(""))

    /** Applies one commit's actions (rule 2: within a commit the add wins). */
    def applyCommit(actions: Iterable[RawAction]): Unit = {
      val (adds, removes) = actions.partition(_.isAdd)
      removes.foreach(r => winners.put(key(r), r))
      adds.foreach(a => winners.put(key(a), a))
      count += actions.size
    }

    /** Applies a stream of actions ordered by version, grouping each version's actions. */
    def applyInOrder(actions: Iterator[RawAction]): Unit = {
      val buffer = mutable.ArrayBuffer.empty[RawAction]
      var current = Long.MinValue
      actions.foreach { a =>
        if (a.version != current && buffer.nonEmpty) {
          applyCommit(buffer.toSeq)
          buffer.clear()
        }
        current = a.version
        buffer += a
      }
      if (buffer.nonEmpty) applyCommit(buffer.toSeq)
    }
  }

  /** Live files of the segment and the number of actions replayed. */
  def run(reader: LogReader, segment: LogSegment, needStats: Boolean): (Array[LiveFile], Long) = {
    val uri = Replay.tableUri(segment)
    val tail = new Reconciler(uri)
    tail.applyInOrder(reader.commitActions(needStats))
    val interner = new Replay.Interner
    val live = mutable.ArrayBuffer.empty[LiveFile]
    var checkpointRows = 0L
    // Checkpoint rows are unique per key: one survives unless a later commit touched its key.
    reader.checkpointActions(needStats).foreach { a =>
      checkpointRows += 1
      if (a.isAdd && !tail.winners.containsKey(tail.key(a))) {
        live += a.copy(partitionValues = interner(a.partitionValues)).toLiveFile
      }
    }
    tail.winners.values().forEach { a =>
      if (a.isAdd) live += a.copy(partitionValues = interner(a.partitionValues)).toLiveFile
    }
    (live.toArray, checkpointRows + tail.count)
  }
}
