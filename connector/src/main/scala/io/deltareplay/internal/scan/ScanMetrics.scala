package io.deltareplay.internal.scan

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** What a scan's replay and planning did; reported as driver metrics and given to Python. */
private[deltareplay] case class ScanMetrics(
    table: String,
    version: Long,
    replayMode: String,
    logSegment: String,
    actionsReplayed: Long,
    liveFiles: Long,
    filesAfterPartitionPruning: Long,
    filesAfterSkipping: Long,
    replayMillis: Long,
    planMillis: Long,
    snapshotMillis: Long,
    replayTasks: Int,
    planning: String = "driver",
    index: String = "none",
    checkpointLayout: String = "",
    narrowedReason: String = ""
) {
  def toJson: String = {
    import ScanMetrics.quote
    s"""{"table":${quote(table)},"version":$version,"replayMode":${quote(replayMode)},""" +
      s""""logSegment":${quote(logSegment)},"actionsReplayed":$actionsReplayed,""" +
      s""""liveFiles":$liveFiles,"filesAfterPartitionPruning":$filesAfterPartitionPruning,""" +
      s""""filesAfterSkipping":$filesAfterSkipping,"replayMillis":$replayMillis,""" +
      s""""planMillis":$planMillis,"snapshotMillis":$snapshotMillis,"replayTasks":$replayTasks,""" +
      s""""planning":${quote(planning)},"index":${quote(index)},""" +
      s""""checkpointLayout":${quote(checkpointLayout)},"narrowedReason":${quote(
          narrowedReason
        )}}"""
  }

  /** What replay and skipping did, in words (EXPLAIN once the scan has planned). */
  def describe: String =
    s"replay $replayMode: $logSegment, $actionsReplayed actions -> $liveFiles live files in " +
      s"$replayMillis ms" + (if (replayTasks > 0) s" ($replayTasks tasks)" else "") +
      s"; $index" +
      (if (narrowedReason.isEmpty) "" else s" (not narrowed by the filters: $narrowedReason)") +
      s"; $filesAfterPartitionPruning after partition pruning, $filesAfterSkipping after " +
      s"skipping; planned on the $planning in $planMillis ms"

  /** The figures as Spark driver metrics (SQL UI, `BatchScanExec.metrics`). */
  def driverMetrics: Array[CustomTaskMetric] = Array(
    ScanMetrics.task(ScanMetrics.LiveFiles, liveFiles),
    ScanMetrics.task(ScanMetrics.FilesAfterPruning, filesAfterPartitionPruning),
    ScanMetrics.task(ScanMetrics.FilesAfterSkipping, filesAfterSkipping),
    ScanMetrics.task(ScanMetrics.ActionsReplayed, actionsReplayed),
    ScanMetrics.task(ScanMetrics.ReplayMillis, replayMillis),
    ScanMetrics.task(ScanMetrics.PlanMillis, planMillis)
  )
}

private[deltareplay] object ScanMetrics {

  /** `s` as a JSON string literal. */
  def quote(s: String): String =
    "\"" + s.flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => f"\\u${c.toInt}%04x"
      case c => c.toString
    } + "\""

  val LiveFiles = "deltaReplayLiveFiles"
  val FilesAfterPruning = "deltaReplayFilesAfterPartitionPruning"
  val FilesAfterSkipping = "deltaReplayFilesAfterSkipping"
  val ActionsReplayed = "deltaReplayActionsReplayed"
  val ReplayMillis = "deltaReplayReplayMillis"
  val PlanMillis = "deltaReplayPlanMillis"

  private val descriptions = Seq(
    LiveFiles -> "live files (replay)",
    FilesAfterPruning -> "files after partition pruning",
    FilesAfterSkipping -> "files after data skipping",
    ActionsReplayed -> "log actions replayed",
    ReplayMillis -> "replay time (ms)",
    PlanMillis -> "planning time (ms)"
  )

  /** The metrics a scan reports ([[org.apache.spark.sql.connector.read.Scan]]'s custom metrics). */
  def supported: Array[CustomMetric] = descriptions.map { case (n, d) => new Metric(n, d) }.toArray

  private def task(n: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = n
    override def value(): Long = v
  }

  /** A driver metric summed over its reports (a scan reports each once). */
  final class Metric(n: String, d: String) extends CustomSumMetric {
    def this() = this("", "") // Spark instantiates metric classes reflectively on the executors
    override def name(): String = n
    override def description(): String = d
  }
}
