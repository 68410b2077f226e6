package io.deltareplay.internal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

/** What a replay produced and what it cost. */
private[deltareplay] case class ReplayResult(
    files: Array[LiveFile],
    mode: String,
    actionsReplayed: Long,
    millis: Long,
    replayTasks: Int
)

/** What a scan's replay did, wherever it ran (the file list may never reach the driver). */
private[deltareplay] case class ReplaySummary(
    mode: String,
    actionsReplayed: Long,
    liveFiles: Long,
    millis: Long,
    tasks: Int
)

/**
 * Every decision about how one read of one table version runs, in one place:
 *
 *   - whether a replayed state of the table kept by this session can serve (as it is, or rolled
 *     forward by the commits since) — [[cachedState]];
 *   - where a replay runs: on the driver (small logs, `replay.mode=local`) or as a Spark job —
 *     [[replaysDistributed]];
 *   - where planning runs: on the driver over a collected file list, or on the executors with the
 *     list kept there (`planning.mode`, or `auto` by the table's estimated size) — [[planner]];
 *   - where aggregates from statistics are folded: the same choice as planning.
 */
private[deltareplay] final case class ReadPolicy(
    spark: SparkSession,
    snapshot: TableSnapshot,
    conf: ReadConf
) extends Logging {
  private def segment = snapshot.segment

  /**
   * The session's replayed state of this table, if it can serve this version (with `needStats`).
   */
  def cachedState(needStats: Boolean): Option[ReplayState.Entry] =
    if (!conf.stateCache || conf.replayMode != ReplayMode.Auto) None
    else
      ReplayState.lookup(
        spark,
        segment.paths.root,
        snapshot.meta.tableId,
        segment.version,
        needStats
      )

  /** Whether a replay of this version runs as a Spark job (the mode, or `auto`'s size rule). */
  def replaysDistributed: Boolean = Replay.isDistributed(segment, conf)

  /**
   * Whether the scan plans on the executors, keeping the file list there. `auto` does when no
   * replayed file list is at hand on the driver (from the aggregate pushdown or the state cache)
   * and the table has about `executorsMinFiles` files or more.
   */
  def plansOnExecutors(needStats: Boolean, replayedOnDriver: Boolean): Boolean =
    conf.planningMode match {
      case PlanningMode.Driver => false
      case PlanningMode.Executors =>
        if (!scratchShared)
          throw Errors.scratchDirNotShared(conf.scratchDir, spark.sparkContext.master)
        true
      case PlanningMode.Auto if !scratchShared =>
        logWarning(
          s"Planning ${snapshot.table} on the driver: the default planning.scratchDir " +
            s"${conf.scratchDir} is on this machine's local disk, which executors on other hosts " +
            "(master " + spark.sparkContext.master + ") cannot read. Set " +
            "spark.deltareplay.planning.scratchDir to shared storage to plan on the executors."
        )
        false
      case PlanningMode.Auto =>
        // No log holds a file action in under 8 bytes: smaller logs skip the footer reads.
        def big = segment.totalBytes >= 8 * conf.executorsMinFiles &&
          new LogReader(spark, segment).estimatedFiles() >= conf.executorsMinFiles
        !replayedOnDriver && conf.replayMode != ReplayMode.Local &&
        cachedState(needStats).isEmpty && big
    }

  /**
   * Whether every executor can reach the scratch directory of executor-side planning: a directory
   * the user set is trusted; the default is on the default file system, which is a node-local disk
   * when that is `file:` and the executors run on other hosts (a master that is not local).
   */
  def scratchShared: Boolean = {
    val isDefault = conf.scratchDir == io.deltareplay.DeltaReplayOptions.Defaults(
      io.deltareplay.DeltaReplayOptions.PlanningScratchDir
    )
    val master = spark.sparkContext.master
    val localMaster = master.startsWith("local")
    def onLocalDisk = {
      val p = new org.apache.hadoop.fs.Path(conf.scratchDir)
      val fs = p.getFileSystem(spark.sessionState.newHadoopConf())
      fs.makeQualified(p).toUri.getScheme == "file"
    }
    !isDefault || localMaster || !onLocalDisk
  }

  /** The replay on the driver: the cached state (rolled forward), or a fresh replay. */
  def replay(needStats: Boolean): ReplayResult =
    Replay.run(spark, segment, snapshot.meta.tableId, conf, needStats, cachedState(needStats))

  /** The planning of a scan: over a driver-side replay, or on the executors. */
  def planner(needStats: Boolean, replayedBefore: Option[ReplayResult]): ScanPlanning =
    if (plansOnExecutors(needStats, replayedBefore.isDefined)) new ExecutorScanPlanning(this)
    else new DriverScanPlanning(spark, snapshot, () => replayedBefore.getOrElse(replay(needStats)))
}
