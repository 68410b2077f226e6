package io.deltareplay.internal.index

import io.deltareplay.internal.log.{FileEntry, TableSnapshot}
import org.apache.spark.sql.SparkSession

/**
 * What background builds ([[IndexBuilds]]) and narrowed indexes ([[NarrowedIndexes]]) need of the
 * read that asks for an index: the session, the table version, the layout of its entries, the
 * cache's budget, and how to build the index. The read's policy in `planning` is the one
 * implementation; this room does not look into it.
 */
private[deltareplay] trait IndexRequest {
  def spark: SparkSession
  def snapshot: TableSnapshot
  def entry: FileEntry

  /** The session's budget for kept indexes, in bytes. */
  def cacheBudgetBytes: Long

  /**
   * The index of this version as the read would get it (and offer to the cache); a build on the
   * driver stops past `maxDriverBytes` ([[IndexOverBudget]]).
   */
  def buildIndex(needStats: Boolean, maxDriverBytes: Long): ReplayResult
}
