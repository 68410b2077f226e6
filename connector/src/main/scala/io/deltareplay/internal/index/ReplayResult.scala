package io.deltareplay.internal.index

/** A snapshot index at hand for one read, and what getting it did. */
private[deltareplay] case class ReplayResult(
    index: TableIndex,
    mode: String,
    actionsReplayed: Long,
    millis: Long,
    replayTasks: Int,
    narrowed: Boolean = false
)

/** What a scan's replay did, wherever it ran (the file list may never reach the driver). */
private[deltareplay] case class ReplaySummary(
    mode: String,
    actionsReplayed: Long,
    liveFiles: Long,
    millis: Long,
    tasks: Int,
    index: String = "none"
)

/** Where a snapshot index lives. */
private[deltareplay] sealed trait Home
private[deltareplay] object Home {
  case object Driver extends Home
  case object Executors extends Home
}
