package io.deltareplay.internal.index

/**
 * The snapshot index: the live files of one table version in columnar form, the one structure batch
 * planning, data skipping, aggregates from statistics and the streaming snapshot read. Two homes,
 * one row format ([[FileEntry]]): [[DriverIndex]] (compact columns on the driver) and
 * [[ExecutorIndex]] (a persisted dataset on the executors, for tables too big for the driver).
 * [[ReadPolicy]] decides which; [[IndexCache]] keeps them per session and rolls them forward.
 */
private[deltareplay] trait TableIndex {
  def entry: FileEntry
  def tableId: String
  def version: Long

  /** Whether the entries carry statistics (an index built for unfiltered reads does not). */
  def withStats: Boolean

  /** Live files. */
  def size: Long

  /** Driver heap held. */
  def bytes: Long

  def describe: String

  /** Frees what it holds outside the driver heap (persisted blocks). */
  def release(): Unit = ()
}
