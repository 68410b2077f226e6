package io.deltareplay.internal.index

import io.deltareplay.internal.log.{DvDescriptor, FileEntry, Reconciler, TablePaths}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.storage.StorageLevel
import org.apache.spark.unsafe.types.UTF8String

/**
 * The snapshot index: the live files of one table version in columnar form, the one structure batch
 * planning, data skipping, aggregates from statistics and the streaming snapshot read. Two homes,
 * one row format ([[FileEntry]]): [[DriverIndex]] (compact columns on the driver) and
 * [[ExecutorIndex]] (a persisted dataset on the executors, for tables too big for the driver). The
 * read's policy (in `planning`) decides which; [[IndexCache]] keeps them per session and rolls them
 * forward.
 *
 * What differs between the homes lives here, each home implementing it once: rolling forward, the
 * order of a stream's snapshot, what the session's cache may keep, release. Planning a scan and
 * aggregates from statistics run where the index is, with code of the room above (`planning`),
 * which gives one function per home to [[byHome]]: the compiler checks that both are handled, and
 * this room does not depend on planning. The two homes are the only implementations: [[home]] is
 * visible inside this package only.
 */
private[deltareplay] trait TableIndex {
  def entry: FileEntry
  def tableId: String
  def version: Long

  /** Whether the entries carry statistics (an index built for unfiltered reads does not). */
  def withStats: Boolean

  /** Live files (for an executor index that is not persisted: the replay's count, if known). */
  def size: Long

  /** Driver heap held. */
  def bytes: Long

  def describe: String

  /** Where the index lives. */
  private[index] def home: Home

  /** Whether it lives on the driver (planning there too). */
  final def onDriver: Boolean = home == Home.Driver

  /** Whether it is in `wanted` (a planning mode that names one). */
  final def livesIn(wanted: Home): Boolean = home == wanted

  /** Whether the session's cache may keep it (an index replayed by each use may not). */
  def keepable: Boolean = true

  /**
   * Whether this index reads `other`'s persisted blocks (a roll-forward before it materialised).
   */
  def sharesBlocksWith(other: TableIndex): Boolean = false

  /** The live files, counted (with a Spark job for an index that is not persisted). */
  def liveFiles(): Long = size

  /** The live files (path as the log has it, deletion vector): for inspection and tests. */
  def files(): Iterator[(String, Option[DvDescriptor])]

  /** `f`'s function for the home this index lives in. */
  def byHome[R](f: TableIndex.ByHome[R]): R

  /** How an answer from this index is described after the replay's `mode`. */
  def answeredBy(mode: ReplayPath): String =
    if (entry.countOnly) s"${mode.describe}, statistics: numRecords only" else mode.describe

  /** This index rolled forward to `newVersion` by the reconciled commits in between. */
  def rolledForward(
      spark: SparkSession,
      tail: Reconciler,
      newVersion: Long
  ): TableIndex

  /**
   * A stream's snapshot of this version in DeltaSource's order ([[SnapshotOrder]]): `keep` turns an
   * entry into a planned file, `first` are the files a first micro-batch already took (keys and
   * files, in order).
   */
  def snapshotOrder(
      spark: SparkSession,
      paths: TablePaths,
      keep: InternalRow => KeptFile,
      sliceFiles: Int,
      storageLevel: StorageLevel,
      first: Array[(Long, UTF8String, KeptFile)]
  ): SnapshotOrder

  /** Frees what it holds outside the driver heap (persisted blocks). */
  def release(): Unit = ()
}

private[deltareplay] object TableIndex {

  /**
   * What a caller does with an index, one function per home: planning a scan (splits on the driver,
   * or manifests written on the executors) and aggregates from statistics.
   */
  trait ByHome[R] {
    def onDriver(index: DriverIndex): R
    def onExecutors(index: ExecutorIndex): R
  }
}
