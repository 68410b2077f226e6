package io.deltareplay.internal.log

import scala.collection.mutable

/**
 * The newest action per key (canonical path, deletion-vector id) among the actions of commits
 * applied in version order (within one commit removes before adds: the add wins): the commits after
 * a checkpoint, reconciled on the driver, which an index rolls forward by and a checkpoint's rows
 * are checked against.
 */
private[deltareplay] final class Reconciler(paths: TablePaths) {
  val winners = new java.util.HashMap[Reconciler.Key, FileAction.Action]()
  var count = 0L

  def key(a: FileAction.Action): Reconciler.Key = a.key(paths)

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

  /**
   * Applies a stream of actions ordered by version, grouping each version's actions; `pause` runs
   * before each action (a background build's yield point).
   */
  def applyInOrder(actions: Iterator[FileAction.Action], pause: () => Unit = () => ()): Unit = {
    val buffer = mutable.ArrayBuffer.empty[FileAction.Action]
    var current = Long.MinValue
    actions.foreach { a =>
      pause()
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
  def liveFiles(interner: Interner = new Interner): Seq[LiveFile] = {
    val out = mutable.ArrayBuffer.empty[LiveFile]
    winners.values().forEach { a =>
      if (a.isAdd) out += a.toLiveFile(interner(a.partitionValues))
    }
    out.toSeq
  }
}

private[deltareplay] object Reconciler {

  /** A file action's key: its canonical path and its deletion vector's id (`""`: none). */
  type Key = (String, String)
}
