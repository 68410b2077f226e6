package io.deltareplay.internal.replay

import java.util.concurrent.{Callable, ExecutionException, Future}

import io.deltareplay.internal.index.IndexCache
import io.deltareplay.internal.log.{LogSegment, MetaCache, Reconciler, TableSnapshot}
import io.deltareplay.internal.session.SessionState
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.deltareplay.SparkBridge

/**
 * The commits after a checkpoint, reconciled ahead of need. When a DataFrame or stream over a table
 * is created and no index of the table is cached, the table's replay will reconcile those commits
 * on the driver (the map-side fast path of [[DistributedReplay]], and [[LocalReplay]]): parsing
 * them starts then, on a background thread, while Spark analyses and plans the query on the
 * driver's thread (or the stream starts) with the other core idle, and the replay takes the result
 * instead of parsing the same files again. On a cold driver the parse of a large tail can be done
 * before the replay starts, so a stream's first `latestOffset` waits less; a batch query gains
 * less, since on two cores its planning and the parse share the CPU with the JIT compilers
 * (figures: benchmarks/results/2026-11-26-skipvector.notes.md).
 *
 * Keyed by the session and the exact segment (table, checkpoint, and each commit file with its
 * length, time and ETag as listed): a replay of any other version, or of a table recreated at the
 * same path, parses its own commits. At most [[MaxPending]] results wait per session, each for at
 * most [[MaxAgeMillis]] (a DataFrame created and never run leaves one behind), each of a tail of at
 * most [[MaxTailBytes]]; one thread parses, one tail at a time. Off with
 * `spark.deltareplay.replay.prefetchTail=false`. A failed parse is dropped: the replay parses again
 * and reports the error itself.
 */
private[deltareplay] object TailPrefetch extends Logging {

  val MaxPending = 2
  val MaxAgeMillis = 60000L

  /** Tails of more bytes of JSON are left to the replay (what waits is held on the driver). */
  val MaxTailBytes: Long = 32L << 20

  /** A segment's identity: its commits as listed (a table recreated at the same path differs). */
  private final case class Key(table: String, checkpoint: Long, commits: Seq[MetaCache.FileId])

  private final class Pending(
      val withStats: Boolean,
      val result: Future[Reconciler],
      val startedAt: Long
  )

  private val pendingOf = new SessionState.Part[java.util.LinkedHashMap[Key, Pending]](
    "tails parsed ahead",
    () => new java.util.LinkedHashMap[Key, Pending](),
    release = p => p.synchronized { p.values().forEach(_.result.cancel(true)); p.clear() },
    size = p => p.synchronized(p.size.toLong)
  )

  private lazy val pool = SparkBridge.daemonThread("delta-replay tail prefetch")

  private def key(segment: LogSegment): Option[Key] =
    segment.checkpointVersion.map(Key(segment.table, _, segment.commits.map(MetaCache.FileId(_))))

  /**
   * Starts reconciling `snapshot`'s commits after its checkpoint when a replay of it will: the
   * segment has a checkpoint and commits after it within `replay.tailFastPathMaxBytes`, and no
   * index of the table that could serve the version is cached. `withStats`: keep the actions'
   * statistics (a batch read; a stream's snapshot needs none).
   */
  def start(
      spark: SparkSession,
      snapshot: TableSnapshot,
      withStats: Boolean,
      conf: ReplaySettings
  ): Unit = {
    val segment = snapshot.segment
    if (
      conf.prefetchTail && segment.commits.nonEmpty &&
      segment.commitBytes <= MaxTailBytes && conf.fastPath(segment) &&
      IndexCache
        .lookup(spark, segment.paths.root, snapshot.meta.tableId, segment.version, withStats)
        .isEmpty
    ) {
      key(segment).foreach { k =>
        val pending = pendingOf(spark)
        pending.synchronized {
          expire(pending)
          if (!pending.containsKey(k)) {
            val task: Callable[Reconciler] =
              () => LocalReplay.reconcile(spark, segment, conf.log, withStats)
            pending.put(k, new Pending(withStats, pool.submit(task), System.currentTimeMillis()))
          }
        }
      }
    }
  }

  /**
   * The commits after `segment`'s checkpoint reconciled by [[start]], waiting for them if the parse
   * is still running; None if none was started for this exact segment, if it kept no statistics and
   * `withStats` asks for them, or if it failed. Each result is taken once.
   */
  def take(
      spark: SparkSession,
      segment: LogSegment,
      withStats: Boolean
  ): Option[Reconciler] =
    key(segment).flatMap { k =>
      val pending = pendingOf(spark)
      Option(pending.synchronized(pending.remove(k))).flatMap { p =>
        if (withStats && !p.withStats) {
          p.result.cancel(true)
          None
        } else {
          try {
            val tail = p.result.get()
            Some(if (withStats || !p.withStats) tail else tail.withoutStats)
          } catch {
            case e: ExecutionException =>
              logInfo(s"prefetch of the commits of ${segment.table} failed; parsing them again", e)
              None
          }
        }
      }
    }

  /** Drops results older than [[MaxAgeMillis]], then the oldest beyond [[MaxPending]] - 1. */
  private def expire(pending: java.util.LinkedHashMap[Key, Pending]): Unit = {
    val now = System.currentTimeMillis()
    val it = pending.values().iterator()
    while (it.hasNext) {
      val p = it.next()
      if (now - p.startedAt > MaxAgeMillis || pending.size() >= MaxPending) {
        p.result.cancel(true)
        it.remove()
      }
    }
  }
}
