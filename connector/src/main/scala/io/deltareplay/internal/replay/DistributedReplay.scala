package io.deltareplay.internal.replay

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.index.{
  DriverIndex,
  KeyHash,
  KeyHasher,
  KeyLookup,
  ReplayPath,
  ReplayResult,
  SnapshotKeys
}
import io.deltareplay.internal.log.{
  DvDescriptor,
  FileAction,
  FileEntry,
  LiveFile,
  LogReader,
  LogSegment,
  Reconciler
}
import io.deltareplay.internal.skipping.FileFilter
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The replay rules of [[Replay]] as a Spark job on the executors.
 *
 * Step 1 ([[LogFrames]]): read the checkpoint (parts or V2 sidecars) and the commits after it as
 * DataFrames of adds and removes ([[FileAction.Schema]]), each tagged with its version; the log
 * files are read as exactly the listed files, never following `ignoreCorruptFiles` /
 * `ignoreMissingFiles` (a skipped log file would be a silently wrong answer). Step 2 and 3, either
 *   - fast path (a checkpoint and a commit tail of at most `tailFastPathMaxBytes`): reconcile the
 *     tail on the driver, and keep the checkpoint adds whose key it did not touch, plus the tail's
 *     winning adds. No shuffle: checkpoint rows are unique per key. For a file list that stays on
 *     the executors the touched keys are broadcast and filtered map-side; for an index on the
 *     driver the checkpoint's entries are built on the executors while the driver reconciles the
 *     tail, and the rows it touched are then dropped as in a roll-forward; or
 *   - window path: key every row by (canonical path, DV unique id) ([[FileAction.keyUdf]]),
 *     repartition by key, keep the newest row per key (version desc, add first), drop keys whose
 *     winner is a remove. With a checkpoint and a tail of at most `tailBroadcastMaxBytes`, only the
 *     tail is windowed; the checkpoint's adds whose key the tail does not hold are kept map-side
 *     (broadcast anti join on the tail's keys).
 * Step 4: only [[LiveFile.Schema]] travels on (stats only when asked).
 */
private[deltareplay] class DistributedReplay(
    spark: SparkSession,
    segment: LogSegment,
    conf: ReplaySettings,
    needStats: Boolean,
    typedStats: Option[FileEntry] = None,
    checkpointFilter: Option[CheckpointFilter] = None
) {
  private val reader = new LogReader(spark, segment, conf.log)
  private val paths = segment.paths
  private lazy val frames = new LogFrames(
    spark,
    segment,
    reader,
    conf,
    needStats,
    statsParsed,
    countOnly = typedStats.exists(_.countOnly)
  )

  /**
   * The snapshot index of the segment's version on the driver: each replay task turns its live
   * files into [[FileEntry]] columns (statistics parsed there, in parallel) and the driver keeps
   * the chunks it receives, with what the build did (mode label, actions replayed, tasks run). With
   * `maxDriverBytes`, the job stops once the chunks the driver received pass it
   * ([[IndexOverBudget]]): an index that big would not be kept.
   */
  def index(
      entry: FileEntry,
      tableId: String,
      maxDriverBytes: Long = Long.MaxValue
  ): ReplayResult = {
    val p = paths
    val ((index, actions), tasks) =
      Replay.inJobGroup(
        spark,
        s"delta-replay: index ${segment.table} v${segment.version}"
      ) {
        if (useFastPath) {
          // The checkpoint's adds are turned into chunks on the executors while the driver
          // reconciles the tail; the rows the tail touched then leave as in a roll-forward.
          val direct = selectedEntries(entry)
          lazy val qe = entryFrame(entry, checkpointAdds())
          val pending = new ChunkJob(
            spark,
            segment,
            SparkBridge.mapPartitionsUncleaned(direct.getOrElse(logged(qe.toRdd)))(
              DriverIndex.chunksOf(entry, p, _)
            ),
            maxDriverBytes
          )
          // any failure here (the tail's read, the job, an interrupt while waiting) cancels the
          // job; cancelling a finished one does nothing
          val (tail, added, chunks) =
            try {
              val t = reconciledTail()
              // a narrowed read builds entries only for the tail adds its filters may match
              val onTail = checkpointFilter
                .filter(_ => filtersCheckpoint)
                .map(c => new TailFilter(entry, c.filter))
                .filter(_.narrows)
              val keep = onTail.fold((_: LiveFile) => true)(f => f.keeps)
              val added = DriverIndex.tailChunk(entry, p, t, entry.projector(), keep)
              val chunks = pending.await()
              (t, added, chunks)
            } catch {
              case e: Throwable =>
                pending.cancel()
                throw e
            }
          val atCheckpoint = DriverIndex(
            entry,
            p,
            tableId,
            segment.checkpointVersion.get,
            needStats,
            chunks.toVector
          )
          val rolled = atCheckpoint.rolledForward(tail, segment.version, added)
          (
            if (rolled.wantsCompaction) rolled.compacted else rolled,
            direct.fold(LogFrames.scannedRows(qe.executedPlan))(_ => 0L) +
              frames.selectedRead.value + tail.count
          )
        } else {
          val qe = entryFrame(entry, windowLive())
          val built = logged(qe.toRdd).mapPartitions(DriverIndex.chunksOf(entry, p, _))
          val chunks = new ChunkJob(spark, segment, built, maxDriverBytes).await()
          (
            DriverIndex(entry, p, tableId, segment.version, needStats, chunks.toVector),
            LogFrames.scannedRows(qe.executedPlan)
          )
        }
      }
    ReplayResult(index, path, actions, millis = 0L, replayTasks = tasks)
  }

  /**
   * A fold (`zero` makes an empty one: the aggregates of a count from statistics) over the live
   * files of the segment's version that `filter`'s partition filters keep, without building an
   * index (fast path only): the checkpoint's read is planned while the commits after it are
   * reconciled on the driver, the keys they touched are broadcast, and each task over the
   * checkpoint's adds folds the entries of the rows whose key they did not touch into one fold; the
   * tail's winning adds are folded on the driver while the tasks run. Only one fold per task
   * reaches the driver.
   */
  def aggregateInTasks[F <: DistributedReplay.EntryFold[F]: scala.reflect.ClassTag](
      entry: FileEntry,
      zero: () => F,
      filter: FileFilter
  ): F = {
    require(useFastPath, "the count of a replay's tasks needs a checkpoint and a small tail")
    val p = paths
    val (folded, _) =
      Replay.inJobGroup(spark, s"delta-replay: count ${segment.table} v${segment.version}") {
        // the checkpoint's read is planned (and its code compiled) while the tail is read
        val entries =
          selectedEntries(entry).getOrElse(logged(entryFrame(entry, checkpointAdds()).toRdd))
        val tail = reconciledTail()
        val touched = spark.sparkContext.broadcast(DistributedReplay.TouchedKeys(tail))
        val perTask = SparkBridge.mapPartitionsUncleaned(entries) { rows =>
          SparkBridge.withTaskConf {
            val partial = zero()
            val keys = new KeyHasher(p)
            val t = touched.value
            while (rows.hasNext && !partial.stopped) {
              val r = rows.next()
              val kept = t.isEmpty || !t.holds(keys.ofEntry(entry, r), entry.key(p, r))
              if (kept && filter.keepsPartition(r)) partial.add(r)
            }
            Iterator(partial)
          }
        }
        // the tail's adds are folded on the driver while the tasks run
        val pending = logged(perTask.collectAsync())
        val (onDriver, partials) =
          try {
            val folded = zero()
            val toEntry = entry.projector()
            tail.liveFiles().iterator.takeWhile(_ => !folded.stopped).foreach { f =>
              val e = toEntry(f)
              if (filter.keepsPartition(e)) folded.add(e)
            }
            (folded, LogJobErrors.await(segment, pending))
          } catch {
            case e: Throwable =>
              pending.cancel()
              throw e
          }
        partials.foldLeft(onDriver)(_ merge _)
      }
    folded
  }

  /**
   * The first `n` live files of the segment's version in a stream's snapshot order
   * ((modificationTime, path key), [[SnapshotKeys]]), found without building the index: each task
   * over the checkpoint's adds keeps its `2 n` smallest rows (a bounded heap: most rows leave on
   * their modification time alone); the rows whose key the commits after the checkpoint touched are
   * dropped, the smallest of those commits' winning adds join, and the first `n` are taken. The
   * commits are reconciled on the driver while the checkpoint's job runs (fast path), or by a keyed
   * window over them alone, which also reports which of the kept rows' keys they hold.
   *
   * That is exact when every task either kept all its rows or still has `n` untouched ones after
   * the drop (a live file left out of a task's heap then has `n` live files before it). None when
   * that does not hold (commits that removed most of the oldest files, such as an OPTIMIZE), when
   * the version has no more than `n` files, or without a checkpoint: the caller builds the index
   * instead. Returns (the files' keys and entry rows in order, how they were found).
   */
  def firstFiles(
      entry: FileEntry,
      n: Int
  ): Option[(Array[(Long, UTF8String, InternalRow)], String)] =
    if (n <= 0 || segment.checkpointVersion.isEmpty || !(useFastPath || windowsTailOnly)) None
    else {
      val p = paths
      val (found, _) = Replay.inJobGroup(
        spark,
        s"delta-replay: first $n files of ${segment.table} v${segment.version}"
      ) {
        val pending = checkpointHeaps(entry, 2 * n)
        try {
          val (touched, tailFiles, how): (
              ((String, String)) => Boolean,
              Array[(Long, UTF8String, InternalRow)],
              String
          ) =
            if (useFastPath) {
              val tail = reconciledTail()
              // only the n smallest of the commits' adds can be among the first n files: only
              // those become entries
              val toEntry = entry.projector()
              val files = SnapshotKeys
                .smallestLive(tail.liveFiles(), p, n)
                .map { case (time, key, f) => (time, key, toEntry(f)) }
              (
                tail.winners.containsKey(_),
                files,
                f"reconciled on the driver (${tail.count}%,d commit actions)"
              )
            } else {
              val heaps = LogJobErrors.await(segment, pending)
              val keys = new java.util.HashSet[(String, String)]()
              heaps.foreach(_._1.foreach { case (_, _, r) => keys.add(entry.key(p, r)) })
              val (held, files) = tailFirstFiles(entry, n, keys)
              (held.contains(_), files, "by a keyed window")
            }
          val perTask = LogJobErrors.await(segment, pending).toArray
          val untouched = perTask.map { case (rows, left) =>
            val kept = rows.filterNot { case (_, _, r) => touched(entry.key(p, r)) }
            (kept, !left || kept.length >= n)
          }
          val candidates = SnapshotKeys.inOrder(untouched.flatMap(_._1) ++ tailFiles)
          val exact = untouched.forall(_._2) && candidates.length > n
          val note = s"in one pass over the checkpoint, the commits after it $how"
          if (exact) Some((candidates.take(n), note)) else None
        } catch {
          case e: Throwable =>
            pending.cancel()
            throw e
        }
      }
      found
    }

  /**
   * A query's RDD: with adaptive execution, making it runs the query's shuffle stages, which read
   * the log, so a failure there is named as the log's too.
   */
  private def logged[T](rdd: => T): T = LogJobErrors.forLog(segment)(rdd)

  /**
   * A job over the checkpoint's adds: per task, its `capacity` smallest rows in snapshot order (as
   * entries) and whether it had more. The heap runs over the adds as read; only the rows it keeps
   * become entries.
   */
  private def checkpointHeaps(entry: FileEntry, capacity: Int) = {
    val p = paths
    logged(checkpointAdds().select(LiveFile.columnsOfActions: _*).queryExecution.toRdd)
      .mapPartitions { rows =>
        val (kept, left) = SnapshotKeys.smallestOf(
          rows,
          LiveFile.Ord.Path,
          LiveFile.Ord.ModificationTime,
          p,
          None,
          capacity
        )
        Iterator((DistributedReplay.asEntries(entry, kept), left))
      }
      .collectAsync()
  }

  /**
   * The keyed window over the commits after the checkpoint alone: which of `keys` they hold, and
   * the `n` smallest of their winning adds in snapshot order (as entries).
   */
  private def tailFirstFiles(
      entry: FileEntry,
      n: Int,
      keys: java.util.HashSet[(String, String)]
  ): (Set[(String, String)], Array[(Long, UTF8String, InternalRow)]) = {
    val wanted = spark.sparkContext.broadcast(keys)
    val p = paths
    val winners = newestPerKey(keyedActions(frames.commitActions()))
      .select(LiveFile.columnsOfActions ++ Seq(col("_key"), col("_dvKey"), col("isAdd")): _*)
    val at = LiveFile.Schema.length // _key, _dvKey, isAdd follow the live-file columns
    val perTask = logged(winners.queryExecution.toRdd)
      .mapPartitions { rows =>
        val held = scala.collection.mutable.ArrayBuffer.empty[(String, String)]
        val adds = rows.filter { r =>
          val k = (r.getUTF8String(at).toString, r.getUTF8String(at + 1).toString)
          if (wanted.value.contains(k)) held += k
          r.getBoolean(at + 2)
        }
        val (kept, _) =
          SnapshotKeys.smallestOf(
            adds,
            LiveFile.Ord.Path,
            LiveFile.Ord.ModificationTime,
            p,
            None,
            n
          )
        Iterator((held.toArray, DistributedReplay.asEntries(entry, kept)))
      }
    val results = LogJobErrors.forLog(segment)(perTask.collect())
    (results.iterator.flatMap(_._1).toSet, results.flatMap(_._2))
  }

  /** The plan of `live`'s rows as index entries. */
  private def entryFrame(entry: FileEntry, live: DataFrame) = {
    val kept = live.select(liveColumns: _*)
    kept
      .select(entry.columnsFromLiveFile(kept.columns.contains(FileEntry.StatsParsedColumn)): _*)
      .queryExecution
  }

  /** The path [[index]] or [[liveFrame]] takes (read after the job: the decoded counts). */
  def path: ReplayPath.Distributed = {
    val shape =
      if (!useFastPath && windowsTailOnly) ReplayPath.KeyedWindowOverTail
      else if (!useFastPath) ReplayPath.KeyedWindow
      else if (filtersCheckpoint && frames.selectedRead.value > 0) {
        ReplayPath.MapSide(
          filteredByQuery = true,
          Some((frames.selectedDecoded.value, frames.selectedRead.value))
        )
      } else ReplayPath.MapSide(filteredByQuery = filtersCheckpoint)
    ReplayPath.Distributed(shape)
  }

  private def useFastPath: Boolean = conf.fastPath(segment)

  /**
   * Whether the window path shuffles only the commits after the checkpoint (their keys broadcast to
   * filter the checkpoint map-side) rather than every action of the log.
   */
  private def windowsTailOnly: Boolean =
    segment.checkpointVersion.isDefined && segment.commits.nonEmpty &&
      segment.commitBytes <= conf.tailBroadcastMaxBytes

  /** Whether the checkpoint's adds are read through `checkpointFilter` (fast path only). */
  def filtersCheckpoint: Boolean = useFastPath && checkpointFilter.exists(_.filters)

  /**
   * The live files as a DataFrame of [[LiveFile.Schema]] that stays on the executors (stats null
   * unless asked for; paths as the log stores them), with the number of commit actions reconciled
   * on the driver to build it (the fast path's tail; 0 on the window path). Rows its log scans read
   * show in [[LogFrames.scannedRows]] of its plan once it has run.
   */
  def liveFrame(): DistributedReplay.LiveFrame =
    if (!useFastPath) DistributedReplay.LiveFrame(windowLive().select(liveColumns: _*), 0L)
    else {
      val tail = reconciledTail()
      val adds = checkpointAdds()
      val survivors =
        if (tail.winners.isEmpty) adds
        else adds.where(!touchedBy(tail)(col("path"), col("dv")))
      val tailFiles =
        spark.createDataFrame(tail.liveFiles().map(_.toRow).asJava, LiveFile.Schema)
      val tailFrame = statsParsed.fold(tailFiles) { t =>
        tailFiles.withColumn(FileEntry.StatsParsedColumn, lit(null).cast(t))
      }
      DistributedReplay.LiveFrame(
        survivors.select(liveColumns: _*).unionByName(tailFrame),
        tail.count
      )
    }

  /** The checkpoint's adds (those the query's filter may match, when it filters). */
  private def checkpointAdds(): DataFrame =
    frames.checkpointActions(checkpointFilter.filter(_.filters)).where(col("isAdd"))

  /**
   * The checkpoint adds of a narrowed fast-path read as entry rows, selected ([[CheckpointSelect]])
   * and turned into entries in the tasks without a DataFrame: the handful of rows a selective
   * filter keeps does not repay the analysis, planning and code compile of one, most of a first
   * filtered query's time in a new JVM. None where it does not serve (no filter, two passes off, a
   * JSON checkpoint part, a layout the filter does not move onto): the frames do.
   */
  private def selectedEntries(entry: FileEntry): Option[RDD[InternalRow]] = {
    val filter = checkpointFilter.filter(_ => filtersCheckpoint && conf.checkpointTwoPass)
    if (filter.isEmpty || frames.checkpointJson.nonEmpty) return None
    val moved = frames.checkpointByLayout.toSeq.map { case (layout, fs) =>
      // over the add fields the selection reads (the JSON statistics may be left out)
      val fields = layout.selectFields(needStats, statsParsed)
      filter.get.column(fields, layout.statsParsedInEveryAdd).map(c => (layout, fs, c))
    }
    if (moved.exists(_.isEmpty)) return None
    val parts = moved.flatten.map { case (layout, fs, f) =>
      CheckpointSelect.entries(
        spark,
        fs,
        layout,
        f,
        entry,
        statsParsed,
        needStats,
        conf,
        frames.selectedRead,
        frames.selectedDecoded
      )
    }
    Some(if (parts.size == 1) parts.head else spark.sparkContext.union(parts))
  }

  /** The fast path's commits after the checkpoint, reconciled on the driver. */
  private def reconciledTail(): Reconciler =
    LocalReplay.tailOf(reader, segment, needStats)

  /**
   * The type of the statistics taken typed from a checkpoint's `add.stats_parsed` (when asked for,
   * `typedStats`): the index entry's statistics struct. Such rows carry no JSON statistics.
   */
  private val statsParsed = typedStats.filter(_ => needStats).map(_.statsSchema)

  private def liveColumns: Seq[Column] =
    LiveFile.columnsOfActions ++ statsParsed.map(_ => col(FileEntry.StatsParsedColumn))

  /**
   * Whether a (path, dv) is a key the reconciled tail touched: its
   * [[DistributedReplay.TouchedKeys]] broadcast, checked map-side.
   */
  private def touchedBy(tail: Reconciler): (Column, Column) => Column = {
    val touched = spark.sparkContext.broadcast(DistributedReplay.TouchedKeys(tail))
    val p = paths
    val f = udf { (path: String, dv: Row) =>
      val key = p.key(path)
      val id = DvDescriptor.fromRow(dv).fold("")(_.uniqueId)
      touched.value.holds(KeyHash.of(key, id), (key, id))
    }
    (path, dv) => f(path, dv)
  }

  /**
   * The keyed window: the newest action per key, kept when it is an add. With a checkpoint and a
   * tail within `tailBroadcastMaxBytes`, only the tail is shuffled: the checkpoint is reconciled
   * (one row per key), so its adds whose key the tail never mentions are live as they are, found
   * map-side by an anti join on the tail's keys (broadcast), and the tail's winning adds join them.
   * A big log's checkpoint, most of its rows, then never goes through the shuffle.
   */
  private def windowLive(): DataFrame = {
    def newestAdds(actions: DataFrame) = newestPerKey(actions).where(col("isAdd"))
    if (windowsTailOnly) {
      // one plan of the tail, used twice: Spark scans its files twice (see LogFrames.scannedRows)
      val tail = keyedActions(frames.commitActions())
      val untouched = keyedActions(frames.checkpointActions())
        .where(col("isAdd"))
        .join(broadcast(tail.select("_key", "_dvKey")), Seq("_key", "_dvKey"), "left_anti")
      untouched.unionByName(newestAdds(tail))
    } else newestAdds(keyedActions(frames.checkpointActions().unionByName(frames.commitActions())))
  }

  /** Actions with their replay key as columns `_key` (canonical path) and `_dvKey`. */
  private def keyedActions(actions: DataFrame): DataFrame =
    actions
      .withColumn("_key", FileAction.keyUdf(paths)(col("path")))
      .withColumn("_dvKey", FileAction.dvKeyUdf(col("dv")))

  /** The newest of keyed actions per key (version desc, add first): adds and removes. */
  private def newestPerKey(keyed: DataFrame): DataFrame = {
    val partitions =
      if (conf.replayPartitions > 0) conf.replayPartitions
      else conf.log.sparkSettings.shufflePartitions
    val newestFirst = Window.partitionBy("_key", "_dvKey").orderBy(desc("version"), desc("isAdd"))
    keyed
      .repartition(partitions, col("_key"), col("_dvKey"))
      .withColumn("_rank", row_number().over(newestFirst))
      .where(col("_rank") === 1)
      .drop("_rank")
  }

}

private[deltareplay] object DistributedReplay {

  /**
   * What [[DistributedReplay.aggregateInTasks]] folds entry rows into, in each task and on the
   * driver, then merges: `stopped` once no more rows can change its answer.
   */
  trait EntryFold[F] extends Serializable {
    def add(e: InternalRow): Unit
    def stopped: Boolean
    def merge(other: F): F
  }

  /**
   * The keys (canonical path, DV unique id) a reconciled tail touched, as a task checks them: by
   * [[KeyHash]] first (a [[KeyLookup]] built in the task; most rows leave on the hash alone), then
   * the key itself.
   */
  final class TouchedKeys private (hashes: Array[Long], keys: java.util.HashSet[(String, String)])
      extends Serializable {
    @transient private lazy val lookup = new KeyLookup(hashes, 0)

    def isEmpty: Boolean = hashes.isEmpty

    /**
     * Whether the row with key hash `hash` (and key `key`, made only on a hash match) was touched.
     */
    def holds(hash: Long, key: => (String, String)): Boolean =
      lookup.contains(hash) && keys.contains(key)
  }

  object TouchedKeys {
    def apply(tail: Reconciler): TouchedKeys = {
      val keys = new java.util.HashSet[(String, String)](tail.winners.keySet())
      val hashes = keys.asScala.iterator.map { case (path, dv) => KeyHash.of(path, dv) }.toArray
      new TouchedKeys(hashes, keys)
    }
  }

  /**
   * The live files on the executors (`frame`, see [[DistributedReplay.liveFrame]]) and the commit
   * actions reconciled on the driver to build it (`tailActions`).
   */
  final case class LiveFrame(frame: DataFrame, tailActions: Long)

  /** Keyed live-file rows ([[LiveFile.Schema]] first) as keyed entry rows; runs in a task. */
  private def asEntries(
      entry: FileEntry,
      rows: Array[(Long, UTF8String, InternalRow)]
  ): Array[(Long, UTF8String, InternalRow)] = {
    val toEntry =
      org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(entry.fromLiveFile)
    rows.map { case (t, k, r) => (t, k, toEntry(r).copy(): InternalRow) }
  }

}
