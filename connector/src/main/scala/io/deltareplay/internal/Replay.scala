package io.deltareplay.internal

import java.util.UUID

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
   * Runs the replay in the mode the configuration asks for (or `auto` picks), or rolls `cached`, a
   * state of an older version, forward by the commits in between ([[ReplayState]]). Offers the
   * result to the state cache when it is on. [[ReadPolicy]] decides what is cached and usable.
   */
  def run(
      spark: SparkSession,
      segment: LogSegment,
      tableId: String,
      conf: ReadConf,
      needStats: Boolean,
      cached: Option[ReplayState.Entry]
  ): ReplayResult = {
    val started = System.nanoTime()
    def elapsed = (System.nanoTime() - started) / 1000000
    val uri = segment.paths.root
    val incremental = cached.flatMap { e =>
      if (e.version == segment.version) {
        Some(ReplayResult(e.files, s"cached (v${e.version})", 0L, elapsed, 0))
      } else {
        ReplayState.commitsAfter(spark, segment, e.version).collect {
          case commits
              if commits.map(_.getLen).sum <= math
                .min(segment.totalBytes, conf.stateMaxTailBytes) =>
            val (files, actions) = ReplayState.rollForward(spark, segment, e, commits)
            ReplayResult(
              files,
              s"incremental (v${e.version} + ${commits.size} commits)",
              actions,
              elapsed,
              0
            )
        }
      }
    }
    val result = incremental.getOrElse {
      val (files, mode, actions, tasks) =
        if (isDistributed(segment, conf)) {
          new DistributedReplay(spark, segment, conf, needStats).run()
        } else {
          val (f, a) = LocalReplay.run(new LogReader(spark, segment), segment, needStats)
          (f, "local", a, 0)
        }
      ReplayResult(files, mode, actions, elapsed, tasks)
    }
    if (conf.stateCache) {
      val withStats = incremental.fold(needStats)(_ => cached.get.withStats)
      val entry = ReplayState.Entry(
        uri,
        tableId,
        segment.version,
        withStats,
        result.files,
        ReplayState.estimateBytes(result.files)
      )
      ReplayState.offer(spark, entry, conf.stateCacheBudgetBytes)
    }
    result
  }

  /** Whether the replay of `segment` runs as a Spark job (the mode, or `auto`'s size rule). */
  def isDistributed(segment: LogSegment, conf: ReadConf): Boolean = conf.replayMode match {
    case ReplayMode.Local => false
    case ReplayMode.Distributed => true
    case ReplayMode.Auto => segment.totalBytes > conf.distributedThresholdBytes
  }

  /** Shares identical partition-value maps between files (most files share a few). */
  final class Interner {
    private val seen = new java.util.HashMap[Map[String, String], Map[String, String]]()
    def apply(m: Map[String, String]): Map[String, String] =
      if (m.isEmpty) Map.empty
      else {
        val prior = seen.putIfAbsent(m, m)
        if (prior == null) m else prior
      }
  }

  def newJobGroup(): String = s"delta-replay-${UUID.randomUUID()}"
}
