package io.deltareplay.internal.planning

import io.deltareplay.Errors
import io.deltareplay.internal.index.{
  Home,
  IndexBuilds,
  IndexCache,
  IndexRequest,
  NarrowedIndexes,
  ReplayPath,
  ReplayResult
}
import io.deltareplay.internal.log.{FileEntry, LogReader, TableSnapshot}
import io.deltareplay.internal.replay.{CheckpointFilter, DistributedReplay, Replay, ReplayMode}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.storage.StorageLevel

/**
 * Every decision about how one read of one table version gets its snapshot index and plans, in one
 * place:
 *
 *   - whether an index of the table kept by this session serves (as it is, or rolled forward by the
 *     commits since) — [[cachedState]]; forced replay modes always replay;
 *   - where a fresh index lives ([[home]]): on the driver (compact columns), or on the executors (a
 *     persisted dataset) for tables of about `planning.executorsMinFiles` files or more, or when
 *     `planning.mode` says so;
 *   - how a fresh index is built: replayed on the driver (small logs, `replay.mode=local`) or as a
 *     Spark job ([[replaysDistributed]]);
 *   - where planning and aggregates from statistics run: where the index is.
 */
private[deltareplay] final case class ReadPolicy(
    spark: SparkSession,
    snapshot: TableSnapshot,
    conf: PlanningSettings,
    countOnly: Boolean = false
) extends IndexRequest
    with Logging {
  private def segment = snapshot.segment

  /** The layout of this table's index entries (`countOnly`: [[FileEntry.countOnly]]'s). */
  lazy val entry: FileEntry =
    FileEntry(snapshot.meta, conf.log.timeZone).copy(countOnly = countOnly)

  /**
   * This policy for a `count(*)` answered from statistics: its narrowed read ([[narrowedIndex]])
   * reads only `numRecords` of each statistics JSON, with no filter too (the whole version, for a
   * count of the table); the index built in the background is the whole one ([[full]]).
   */
  def forCount: ReadPolicy = copy(countOnly = true)

  /** This policy with whole statistics: the index the session caches and scans plan from. */
  def full: ReadPolicy = if (countOnly) copy(countOnly = false) else this

  /**
   * The session's index of this table, if it can serve this version (with `needStats`): one whose
   * entries have this version's layout ([[FileEntry]]: the schema with its column-mapping names and
   * ids, the partition columns, and the session's current time zone, in which partition values
   * without an offset are read, as V1 reads them). After a change of metadata the entries of the
   * cached files hold statistics keyed by the old physical names and types, so the index is
   * replayed afresh instead of rolled forward: a column dropped and added again under column
   * mapping must not show the dropped column's statistics.
   */
  def cachedState(needStats: Boolean): Option[IndexCache.Entry] =
    if (!conf.stateCache || conf.replayMode != ReplayMode.Auto) None
    else
      IndexCache
        .lookup(spark, segment.paths.root, snapshot.meta.tableId, segment.version, needStats)
        .filter(_.index.entry == entry)
        .filter { e =>
          conf.planningMode match {
            case PlanningMode.Driver => e.index.livesIn(Home.Driver)
            case PlanningMode.Executors => e.index.livesIn(Home.Executors)
            case PlanningMode.Auto => true
          }
        }

  /** Whether a replay of this version runs as a Spark job (the mode, or `auto`'s size rule). */
  def replaysDistributed: Boolean = Replay.isDistributed(segment, conf.replay, logBytes)

  /** The bytes of this version's log, sidecars included ([[Replay.logBytes]]). */
  private lazy val logBytes: Long = Replay.logBytes(segment, logReader)

  /** One reader of this version's log for the size rules (the V2 sidecars read once). */
  private lazy val logReader = new LogReader(spark, segment, conf.log)

  /**
   * Where a fresh index of this version lives. `auto` puts it on the executors when the table has
   * about `executorsMinFiles` files or more (and the scratch directory is reachable by every
   * executor), unless replay is forced `local`.
   */
  def home: Home =
    conf.planningMode match {
      case PlanningMode.Driver => Home.Driver
      case PlanningMode.Executors =>
        if (!scratchShared) {
          throw Errors.scratchDirNotShared(conf.scratchDir, spark.sparkContext.master)
        }
        Home.Executors
      case PlanningMode.Auto if conf.replayMode == ReplayMode.Local => Home.Driver
      case PlanningMode.Auto if !scratchShared =>
        logWarning(
          s"Planning ${snapshot.table} on the driver: the default planning.scratchDir " +
            s"${conf.scratchDir} is on this machine's local disk, which executors on other hosts " +
            "(master " + spark.sparkContext.master + ") cannot read. Set " +
            "spark.deltareplay.planning.scratchDir to shared storage to plan on the executors."
        )
        Home.Driver
      case PlanningMode.Auto =>
        // No log holds a file action in under 8 bytes: smaller logs skip the footer reads.
        val big = logBytes >= 8 * conf.executorsMinFiles &&
          logReader.estimatedFiles() >= conf.executorsMinFiles
        if (big) Home.Executors else Home.Driver
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
    def scheme = {
      val p = new org.apache.hadoop.fs.Path(conf.scratchDir)
      val fs = p.getFileSystem(spark.sessionState.newHadoopConf())
      fs.makeQualified(p).toUri.getScheme
    }
    ReadPolicy.scratchReachable(spark.sparkContext.master, userSet = !isDefault, scheme)
  }

  def cacheBudgetBytes: Long = conf.stateCacheBudgetBytes

  def buildIndex(needStats: Boolean, maxDriverBytes: Long): ReplayResult =
    index(needStats, maxDriverBytes = maxDriverBytes)

  /**
   * The index of this version: the cached one (rolled forward by the commits in between), or a
   * fresh one in its [[home]]. Offered to the session's cache (`replay.stateCache.enabled`). A
   * fresh one on the driver built as a Spark job stops past `maxDriverBytes`
   * ([[io.deltareplay.internal.index.IndexOverBudget]]; background builds).
   */
  def index(
      needStats: Boolean,
      keepPersisted: Option[StorageLevel] = None,
      maxDriverBytes: Long = Long.MaxValue
  ): ReplayResult = {
    val started = System.nanoTime()
    val rolled =
      cachedState(needStats).flatMap(e => Replay.roll(spark, segment, conf.replay, entry, e))
    // a fresh index replaces the cached one: with statistics when filtered reads of this table
    // wait for a background build with them (else a read without filters would leave the cache
    // an index that no filtered read can use, and each of them would narrow again)
    def withStats = needStats || conf.stateCache && IndexBuilds.statsWanted(
      spark,
      segment.paths.root,
      snapshot.meta.tableId
    )
    val result = rolled.getOrElse(build(withStats, keepPersisted, maxDriverBytes))
    if (conf.stateCache)
      IndexCache.offer(spark, result.index, segment.paths.root, conf.stateCacheBudgetBytes)
    // an index the cache did not take is not persisted (buildOnExecutors), nothing to release
    result.copy(millis = (System.nanoTime() - started) / 1000000)
  }

  /**
   * A fresh index. On the executors it is persisted when the cache will keep it, or when the caller
   * keeps it (`keepPersisted`: a stream reading its snapshot in slices); else it is left as a plan
   * that each use replays.
   */
  private def build(
      needStats: Boolean,
      keepPersisted: Option[StorageLevel],
      maxDriverBytes: Long
  ): ReplayResult =
    home match {
      case Home.Driver =>
        Replay.buildOnDriver(
          spark,
          segment,
          snapshot.meta.tableId,
          conf.replay,
          entry,
          needStats,
          replaysDistributed,
          maxDriverBytes
        )
      case Home.Executors =>
        // A cached index is persisted; a read that keeps nothing plans over the replay directly.
        val cached = conf.stateCache && conf.replayMode == ReplayMode.Auto &&
          IndexCache.wouldKeep(spark, segment.paths.root, snapshot.meta.tableId, segment.version)
        val level = if (cached) Some(conf.indexStorageLevel) else keepPersisted
        Replay.buildOnExecutors(
          spark,
          segment,
          snapshot.meta.tableId,
          conf.replay,
          entry,
          needStats,
          level
        )
    }

  /**
   * For a read with `filter` and no index at hand: the files of this version it may match, read
   * through a [[CheckpointFilter]] (kept for reads of this version with the same filters only,
   * [[NarrowedIndexes]]); the index of the whole version is then built in the background
   * (`index.buildInBackground`). None when that does not apply: `replay.filterCheckpoint` off, a
   * forced replay mode, nothing to filter by (unless [[countOnly]]), a small log replayed on the
   * driver, a log replayed on the window path, an index that serves, or an index that would live on
   * the executors. A log of commits only that is not small narrows on the driver
   * ([[commitsNarrowOnDriver]]).
   */
  def narrowedIndex(filter: FileFilter, needStats: Boolean): Either[String, ReplayResult] = {
    val byQuery = CheckpointFilter(entry, filter.over(entry))
    val declined = narrowingDeclined(byQuery, needStats)
    if (declined.isDefined) Left(declined.get)
    else {
      val started = System.nanoTime()
      val kept = if (conf.stateCache) NarrowedIndexes.get(this, filter, needStats) else None
      val result = kept match {
        case Some(k) =>
          k.copy(
            mode = ReplayPath.Reused(snapshot.version, filtered = byQuery.filters),
            actionsReplayed = 0,
            replayTasks = 0
          )
        case None =>
          val r = rolledNarrowed(filter, needStats, byQuery.filters).getOrElse {
            if (commitsNarrowOnDriver) {
              Replay.narrowedOnDriver(
                spark,
                segment,
                conf.replay,
                entry,
                snapshot.meta.tableId,
                filter,
                needStats
              )
            } else {
              val replay =
                new DistributedReplay(
                  spark,
                  segment,
                  conf.replay,
                  needStats,
                  Some(entry),
                  Some(byQuery)
                )
              replay.index(entry, snapshot.meta.tableId).copy(narrowed = true)
            }
          }
          if (conf.stateCache) NarrowedIndexes.put(this, filter, needStats, r)
          r
      }
      if (conf.stateCache && conf.indexInBackground) IndexBuilds.start(full, needStats)
      Right(result.copy(millis = (System.nanoTime() - started) / 1000000))
    }
  }

  /**
   * Why a read with `byQuery` would not narrow ([[narrowedIndex]]), the first reason that holds
   * (scan metrics `narrowedReason`), or None.
   */
  private def narrowingDeclined(byQuery: CheckpointFilter, needStats: Boolean): Option[String] =
    Seq(
      () => (!conf.filterCheckpoint) -> "replay.filterCheckpoint is off",
      () => (conf.replayMode != ReplayMode.Auto) -> s"replay.mode is ${conf.replayMode.name}",
      () => (!byQuery.filters && !countOnly) -> "", // nothing to narrow by
      () =>
        (!replaysDistributed && !commitsNarrowOnDriver) -> "a small log, replayed on the driver",
      () =>
        (!conf.replay.fastPath(segment) && !commitsNarrowOnDriver) ->
          "no checkpoint, or commits after it over replay.tailFastPathMaxBytes",
      () => full.cachedState(needStats).isDefined -> "an index of this version is cached",
      () => (home != Home.Driver) -> "the index of this version lives on the executors"
    ).iterator.map(_()).collectFirst { case (true, why) => why }

  /**
   * A `count(*)` of the files `filter`'s partition filters keep, answered from statistics without
   * building an index where a count would narrow ([[narrowedIndex]]) on the fast path
   * ([[DistributedReplay.aggregateInTasks]]: each task over the checkpoint folds the rows the
   * commits after it did not touch), with how it was computed; or kept from the same count of this
   * version before ([[KeptCounts]]). The answer is None when a file has no `numRecords` (the query
   * then scans). The whole index is then built in the background, as after a narrowed read. Left:
   * why this does not apply (the caller narrows or builds the index as before).
   */
  def countInTasks(
      filter: FileFilter,
      functions: Seq[MetadataAggregates.Function]
  ): Either[String, (Option[MetadataAggregates.Answer], String)] = {
    require(countOnly && functions.forall(_ == MetadataAggregates.CountStarOf()))
    val byQuery = CheckpointFilter(entry, filter.over(entry))
    val declined = narrowingDeclined(byQuery, needStats = true).orElse {
      if (!conf.replay.fastPath(segment)) Some("a log of commits only, narrowed on the driver")
      else None
    }
    if (declined.isDefined) return Left(declined.get)
    val kept = if (conf.stateCache) KeptCounts.get(this, filter) else None
    val result = kept match {
      case Some((answer, _)) =>
        val mode = ReplayPath.Reused(snapshot.version, filtered = byQuery.filters)
        Some(answer) -> s"${mode.describe}, statistics: numRecords only"
      case None =>
        val replay =
          new DistributedReplay(spark, segment, conf.replay, true, Some(entry), Some(byQuery))
        val (fs, layout) = (functions.toArray, MetadataAggregates.StatsLayout(entry))
        val partial =
          replay.aggregateInTasks(entry, () => new MetadataAggregates.Partial(fs, layout), filter)
        val shape = ReplayPath.CountedMapSide(filteredByQuery = replay.filtersCheckpoint)
        val how = s"${ReplayPath.Distributed(shape).describe}, statistics: numRecords only"
        val answer = partial.finish()
        if (conf.stateCache) answer.foreach(a => KeptCounts.put(this, filter, a, how))
        answer -> how
    }
    if (conf.stateCache && conf.indexInBackground) IndexBuilds.start(full, needStats = true)
    Right(result)
  }

  /**
   * A log of commits only that `auto` replays on the driver although it is over
   * `replay.distributedThresholdBytes` ([[Replay.commitsOnDriver]]): a first filtered read of it
   * narrows on the driver ([[Replay.narrowedOnDriver]]) as a checkpoint's read narrows in its job
   * ([[narrowedIndex]] has checked the mode).
   */
  private def commitsNarrowOnDriver: Boolean =
    Replay.commitsOnDriver(segment, conf.replay) && logBytes > conf.replay.distributedThresholdBytes

  /**
   * The narrowed index an earlier read of this table with the same filters kept, rolled forward by
   * the commits since ([[Replay.roll]], as a cached whole index is): a dashboard query after each
   * commit reads those commits, not the checkpoint again. None when none is kept, its entries have
   * another layout (the metadata changed), or the commits in between are gone or too big.
   * `filtered`: the read has filters (its description says "same filters", else "no filter").
   */
  private def rolledNarrowed(
      filter: FileFilter,
      needStats: Boolean,
      filtered: Boolean
  ): Option[ReplayResult] =
    if (!conf.stateCache) None
    else
      NarrowedIndexes
        .before(this, filter, needStats)
        .filter(_._2.index.entry == entry)
        .flatMap { case (from, kept) =>
          val cached = IndexCache.Entry(
            segment.paths.root,
            snapshot.meta.tableId,
            from,
            kept.index.withStats,
            kept.index
          )
          Replay.roll(spark, segment, conf.replay, entry, cached).map { r =>
            val mode = ReplayPath.RolledNarrowed(from, segment.version - from, filtered)
            r.copy(mode = mode, narrowed = true)
          }
        }

  /** The planning of a scan, over the index ([[index]], or one the scan builder already has). */
  def planner(needStats: Boolean, replayedBefore: Option[ReplayResult]): ScanPlanning =
    new ScanPlanning(
      this,
      () => replayedBefore.getOrElse(index(needStats)),
      filter =>
        if (replayedBefore.isDefined) Left("the scan builder replayed it (aggregates)")
        else narrowedIndex(filter, needStats)
    )
}

private[deltareplay] object ReadPolicy {

  /**
   * Whether every executor can reach a scratch directory: one the user set is trusted; the default
   * is refused when it is on a `file:` system and the master runs executors on other hosts (any
   * master but `local`, `local[...]` and `local-cluster[...]`, whose executors share this disk).
   */
  def scratchReachable(master: String, userSet: Boolean, scheme: => String): Boolean =
    userSet || master.startsWith("local") || scheme != "file"
}
