package io.deltareplay.internal.replay

import java.util.UUID

import io.deltareplay.internal.index.{
  DriverIndex,
  ExecutorIndex,
  IndexCache,
  ReplayPath,
  ReplayResult
}
import io.deltareplay.internal.log.{FileEntry, LogReader, LogSegment}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.sql.SparkSession

/**
 * Log replay: the live data files of one table version, from its checkpoint and the commits after
 * it. The rules, as Delta's protocol fixes them, shared by the local and the distributed
 * implementation:
 *
 *   1. Every add and remove is keyed by (canonical path, deletion-vector unique id). The canonical
 *      path is delta-spark's ([[TablePaths.key]]): the path URI normalised, an absolute path
 *      without scheme qualified with the default file system, a relative path left relative. 2. The
 *      newest action per key wins: higher commit version first; checkpoint rows count as the
 *      checkpoint's version. Within one commit (which a compliant writer never makes hold both an
 *      add and a remove of one key) the add wins, so a hand-written log with both keeps the file,
 *      as delta-spark's in-order replay does for the usual add-after-remove order. 3. A key whose
 *      winner is an add is live; a key whose winner is a remove is not. A path removed and re-added
 *      later is live again; a deletion-vector update of a path (remove with the old DV id, add with
 *      the new) leaves exactly the new one live. 4. Protocol and metadata: the newest of each wins
 *      (read on the driver by [[LogReader]]).
 *
 * [[LocalReplay]] applies the rules with a hash map on the driver (small logs, no Spark job).
 * [[DistributedReplay]] applies them as a Spark job: a shuffle on the key with a window that keeps
 * the newest row, or, when the commits after the checkpoint are few, a map-side filter of the
 * checkpoint by the keys those commits touched (checkpoint rows are unique per key, so only touched
 * keys need reconciling) with no shuffle at all.
 */
private[deltareplay] object Replay {

  /**
   * `cached`, an index of this or an older version, made the index of `segment`'s version: as it
   * is, or rolled forward by the commits in between ([[IndexCache]]); None when the commits in
   * between are gone or bigger than a full replay would read.
   */
  def roll(
      spark: SparkSession,
      segment: LogSegment,
      conf: ReplaySettings,
      entry: FileEntry,
      cached: IndexCache.Entry
  ): Option[ReplayResult] =
    if (cached.version == segment.version) {
      Some(ReplayResult(cached.index, ReplayPath.Cached(cached.version), 0L, 0L, 0))
    } else {
      IndexCache.commitsAfter(spark, segment, cached.version).collect {
        case commits
            if commits.map(_.getLen).sum <= math.min(segment.totalBytes, conf.stateMaxTailBytes) =>
          val tail =
            LocalReplay.reconcile(spark, segment.onlyCommits(commits), conf.log, cached.withStats)
          val index = cached.index.rolledForward(spark, tail, segment.version)
          ReplayResult(index, ReplayPath.Rolled(cached.version, commits.size), tail.count, 0L, 0)
      }
    }

  /**
   * A fresh index on the driver, replayed locally or as a Spark job (`distributed`, stopped past
   * `maxDriverBytes` received: [[io.deltareplay.internal.index.IndexOverBudget]]).
   */
  def buildOnDriver(
      spark: SparkSession,
      segment: LogSegment,
      tableId: String,
      conf: ReplaySettings,
      entry: FileEntry,
      needStats: Boolean,
      distributed: Boolean,
      maxDriverBytes: Long = Long.MaxValue
  ): ReplayResult =
    if (distributed) {
      new DistributedReplay(spark, segment, conf, needStats, Some(entry))
        .index(entry, tableId, maxDriverBytes)
    } else {
      val (files, actions) =
        LocalReplay.run(new LogReader(spark, segment, conf.log), segment, needStats)
      val index = DriverIndex.of(entry, segment.paths, tableId, segment.version, needStats, files)
      ReplayResult(index, ReplayPath.Local, actions, 0L, 0)
    }

  /**
   * The narrowed index of a log of commits only replayed on the driver ([[commitsOnDriver]]): the
   * commits reconciled, then entries built only for the live files `filter` may match
   * ([[TailFilter]]: the few statistics it compares read token by token), as a checkpoint's tail is
   * narrowed in [[DistributedReplay.index]]. A whole index parses every file's statistics with
   * Spark's JSON reader, half of such a read's time on a warm driver; the background build does
   * that after the query.
   */
  def narrowedOnDriver(
      spark: SparkSession,
      segment: LogSegment,
      conf: ReplaySettings,
      entry: FileEntry,
      tableId: String,
      filter: FileFilter,
      needStats: Boolean
  ): ReplayResult = {
    val commits =
      LocalReplay.reconcile(spark, segment, conf.log, needStats)
    val live = commits.liveFiles()
    val byQuery = new TailFilter(entry, filter)
    val kept = if (byQuery.narrows) live.filter(byQuery.keeps) else live
    val index = DriverIndex.of(entry, segment.paths, tableId, segment.version, needStats, kept)
    val mode = ReplayPath.LocalNarrowed(kept.size, live.size)
    ReplayResult(index, mode, commits.count, 0L, 0, narrowed = true)
  }

  /**
   * A fresh index on the executors (replayed as a Spark job whatever `replay.mode` says), persisted
   * at `storageLevel`, or not persisted (then planning runs the replay).
   */
  def buildOnExecutors(
      spark: SparkSession,
      segment: LogSegment,
      tableId: String,
      conf: ReplaySettings,
      entry: FileEntry,
      needStats: Boolean,
      storageLevel: Option[org.apache.spark.storage.StorageLevel]
  ): ReplayResult = {
    val replay = new DistributedReplay(spark, segment, conf, needStats, Some(entry))
    val description = s"delta-replay: index ${segment.table} v${segment.version} on the executors"
    val ((index, actions), tasks) = inJobGroup(spark, description) {
      val live = replay.liveFrame()
      val index = LogJobErrors.forLog(segment) {
        ExecutorIndex.build(
          spark,
          entry,
          segment.paths,
          tableId,
          segment.version,
          needStats,
          live.frame,
          storageLevel
        )
      }
      val scanned = if (index.persisted) LogFrames.scannedRows(index.cachedPlan) else 0L
      (index, scanned + live.tailActions)
    }
    ReplayResult(index, replay.path.copy(onExecutors = true), actions, 0L, tasks)
  }

  /**
   * Whether the replay of `segment` runs as a Spark job: the mode, or `auto`'s size rule. In `auto`
   * a log of over `replay.distributedThresholdBytes` ([[logBytes]]) runs as a job, except a log of
   * commits only (no checkpoint) within `replay.tailFastPathMaxBytes`: the driver reconciles that
   * much JSON after a checkpoint anyway (the fast path), and a job over it would only parse the
   * same commits with Spark's JSON reader, shuffle every action and bring the survivors back.
   */
  def isDistributed(segment: LogSegment, conf: ReplaySettings, logBytes: Long): Boolean =
    conf.replayMode match {
      case ReplayMode.Local => false
      case ReplayMode.Distributed => true
      case ReplayMode.Auto =>
        logBytes > conf.distributedThresholdBytes && !commitsOnDriver(segment, conf)
    }

  /**
   * The bytes of `segment`'s log, what `auto`'s size rules weigh: its checkpoint files and commits,
   * and the sidecars a V2 checkpoint's top-level file names (the listing sees only that file: a few
   * KB for a million adds, whose sidecars hold them all). Reads the top-level file of a V2
   * checkpoint.
   */
  def logBytes(segment: LogSegment, reader: LogReader): Long =
    if (segment.checkpointKind != "v2") segment.totalBytes
    else segment.totalBytes + reader.sidecars().map(_.getLen).sum

  /** A log of commits only whose size the driver reconciles as a checkpoint's tail. */
  def commitsOnDriver(segment: LogSegment, conf: ReplaySettings): Boolean =
    segment.checkpointVersion.isEmpty && segment.commitBytes <= conf.tailFastPathMaxBytes

  def newJobGroup(): String = s"delta-replay-${UUID.randomUUID()}"

  /** Runs `body` in a fresh delta-replay job group; returns its result and the tasks it ran. */
  def inJobGroup[T](spark: SparkSession, description: String)(body: => T): (T, Int) = {
    val group = Replay.newJobGroup()
    val sc = spark.sparkContext
    val priorGroup = sc.getLocalProperty("spark.jobGroup.id")
    val priorDescription = sc.getLocalProperty("spark.job.description")
    sc.setJobGroup(group, description)
    try {
      val result = body
      val tasks = sc.statusTracker
        .getJobIdsForGroup(group)
        .toSeq
        .flatMap { job =>
          sc.statusTracker.getJobInfo(job).toSeq.flatMap(_.stageIds().toSeq)
        }
        .flatMap(stage => sc.statusTracker.getStageInfo(stage).map(_.numTasks()))
        .sum
      (result, tasks)
    } finally {
      sc.setLocalProperty("spark.jobGroup.id", priorGroup)
      sc.setLocalProperty("spark.job.description", priorDescription)
    }
  }
}
