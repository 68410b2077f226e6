package io.deltareplay.internal.planning

import io.deltareplay.internal.index.NarrowedIndexes
import io.deltareplay.internal.session.{BoundedLru, SessionState}
import io.deltareplay.internal.skipping.FileFilter

/**
 * The answers of counts computed in the replay's tasks ([[ReadPolicy.countInTasks]]: no index
 * kept), per SparkSession, under the key a narrowed index of the same read would have (table,
 * version, time zone, partition filters: [[NarrowedIndexes.key]]), with how they were computed: the
 * same count repeated before the whole index is cached is answered from memory. An answer never
 * goes stale (a version does not change); once the whole index is cached, reads use that instead.
 * At most [[NarrowedIndexes.MaxEntries]] answers, the least recently used first out;
 * `spark.deltareplay.replay.stateCache.enabled=false` keeps none.
 */
private[deltareplay] object KeptCounts {

  private type Kept = (MetadataAggregates.Answer, String)

  private val countsOf = new SessionState.Part[BoundedLru[NarrowedIndexes.Key, Kept]](
    "counts from statistics",
    () =>
      new BoundedLru[NarrowedIndexes.Key, Kept](NarrowedIndexes.MaxEntries, Long.MaxValue, _ => 0L),
    size = _.size.toLong
  )

  /** The count of this version with these filters that an earlier read computed, and how. */
  def get(request: ReadPolicy, filter: FileFilter): Option[Kept] =
    countsOf(request.spark).get(NarrowedIndexes.key(request, filter, withStats = true))

  /** Keeps a count computed in the replay's tasks, and how it was computed. */
  def put(
      request: ReadPolicy,
      filter: FileFilter,
      answer: MetadataAggregates.Answer,
      how: String
  ): Unit =
    countsOf(request.spark)
      .put(NarrowedIndexes.key(request, filter, withStats = true), answer -> how)
}
