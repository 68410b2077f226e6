package io.deltareplay.internal.scan

import java.util.Locale

import io.deltareplay.Errors
import io.deltareplay.{DeltaReplayOptions => O}
import io.deltareplay.internal.log.{LogSettings, SparkSettings}
import io.deltareplay.internal.planning.{PlanningMode, PlanningSettings}
import io.deltareplay.internal.replay.{ReplayMode, ReplaySettings}
import io.deltareplay.internal.streaming.{StreamOptions, StreamSettings}
import org.apache.spark.sql.SparkSession
import org.apache.spark.storage.StorageLevel

/**
 * The settings of one read, resolved once where the read is loaded (read option > session key >
 * default, [[io.deltareplay.DeltaReplayOptions.Settings]]): by this room's table and scan, by the
 * routing rules that build them and by the source. The rooms below never see it whole: each takes
 * its own typed part ([[log]], [[replay]], [[planning]], [[stream]]), and nothing below rebuilds
 * settings from the session.
 */
private[deltareplay] case class ReadConf(
    replayMode: ReplayMode,
    distributedThresholdBytes: Long,
    replayPartitions: Int,
    tailFastPathMaxBytes: Long,
    tailBroadcastMaxBytes: Long,
    dataSkipping: Boolean,
    stateCache: Boolean,
    filterCheckpoint: Boolean,
    checkpointTwoPass: Boolean,
    checkpointRowSplits: Boolean,
    indexInBackground: Boolean,
    stateCacheBudgetBytes: Long,
    stateMaxTailBytes: Long,
    metadataAggregates: Boolean,
    indexStorageLevel: StorageLevel,
    snapshotSliceFiles: Int,
    planningMode: PlanningMode,
    executorsMinFiles: Long,
    scratchDir: String,
    useChecksum: Boolean = true,
    prefetchTail: Boolean = true,
    shareHadoopConf: Boolean = true,
    snapshotStorageLevel: Option[StorageLevel] = None,
    streamOptions: StreamOptions,
    sparkSettings: SparkSettings
) {

  /** What the log room takes of these settings. */
  def log: LogSettings = LogSettings(stateCache, useChecksum, tailFastPathMaxBytes, sparkSettings)

  /** What the replay room takes of these settings. */
  def replay: ReplaySettings = ReplaySettings(
    replayMode,
    distributedThresholdBytes,
    replayPartitions,
    tailBroadcastMaxBytes,
    checkpointTwoPass,
    checkpointRowSplits,
    stateMaxTailBytes,
    prefetchTail,
    log
  )

  /** What the planning room takes of these settings. */
  def planning: PlanningSettings = PlanningSettings(
    replay,
    stateCache,
    filterCheckpoint,
    indexInBackground,
    stateCacheBudgetBytes,
    indexStorageLevel,
    planningMode,
    executorsMinFiles,
    scratchDir
  )

  /**
   * What the streaming room takes of these settings; the stream's snapshot index is kept at
   * `snapshot.storageLevel`, else at `index.storageLevel`.
   */
  def stream: StreamSettings = StreamSettings(
    streamOptions,
    planning,
    snapshotSliceFiles,
    snapshotStorageLevel.getOrElse(indexStorageLevel),
    shareHadoopConf
  )
}

private[deltareplay] object ReadConf {

  /**
   * A setting's value for a read: the read option (any case) > the session key > the default, with
   * the key it came from as the user wrote it (an error names that key: `replay.mode` for an
   * option, `spark.deltareplay.replay.mode` for a session key). Checked against the setting's
   * values.
   */
  final case class Resolved(value: String, key: String)

  def resolve(
      spark: SparkSession,
      options: Map[String, String],
      setting: O.Setting
  ): Option[Resolved] = {
    val found = givenByUser(spark, options, setting)
    found.foreach { r =>
      if (!setting.kind.accepts(r.value)) {
        throw Errors.badOption(r.key, r.value.trim, setting.kind.expected)
      }
    }
    found.orElse(setting.default.map(Resolved(_, setting.sessionKey)))
  }

  /** The value the read's options or the session give a setting, if either does. */
  private def givenByUser(
      spark: SparkSession,
      options: Map[String, String],
      setting: O.Setting
  ): Option[Resolved] = {
    val fromOption =
      if (!setting.scope.isReadOption) None
      else O.optionValue(options, setting).map { case (k, v) => Resolved(v, k) }
    def fromSession =
      if (!setting.scope.isSessionKey) None
      else spark.conf.getOption(setting.sessionKey).map(Resolved(_, setting.sessionKey))
    fromOption.orElse(fromSession)
  }

  /**
   * Whether the executors run in the driver's JVM (`local`, `local[n]`; not `local-cluster`). An
   * index lives on the executors when the driver's heap is too small for it (`planning.mode` auto),
   * so there it is kept on disk by default: in memory it would fill that same heap's storage pool
   * and leave too little memory for the query's own tasks.
   */
  def executorsInDriver(master: String): Boolean =
    master == "local" || master.startsWith("local[")

  def apply(spark: SparkSession, options: Map[String, String]): ReadConf = {
    import O.{Setting => S}
    // every setting read here but the snapshot storage level has a default in the table
    def get(s: O.Setting): String = resolve(spark, options, s).fold(s.default.get)(_.value.trim)
    def isSet(s: O.Setting): Boolean = givenByUser(spark, options, s).isDefined
    def long(s: O.Setting): Long = get(s).toLong
    def bool(s: O.Setting): Boolean = get(s).toLowerCase(Locale.ROOT) == "true"
    ReadConf(
      replayMode = ReplayMode.parse(get(S.ReplayMode)),
      distributedThresholdBytes = long(S.DistributedThresholdBytes),
      replayPartitions = math.min(long(S.ReplayPartitions), Int.MaxValue.toLong).toInt,
      tailFastPathMaxBytes = long(S.TailFastPathMaxBytes),
      tailBroadcastMaxBytes = long(S.TailBroadcastMaxBytes),
      dataSkipping = bool(S.DataSkipping),
      stateCache = bool(S.StateCache),
      filterCheckpoint = bool(S.FilterCheckpoint),
      checkpointTwoPass = bool(S.CheckpointTwoPass),
      checkpointRowSplits = bool(S.CheckpointRowSplits),
      indexInBackground = bool(S.IndexInBackground),
      stateCacheBudgetBytes = long(S.StateCacheMaxBytes) match {
        case 0L => Runtime.getRuntime.maxMemory() / 10
        case n => n
      },
      stateMaxTailBytes = long(S.StateMaxTailBytes),
      metadataAggregates = bool(S.MetadataAggregates),
      indexStorageLevel =
        if (!isSet(S.IndexStorageLevel) && executorsInDriver(spark.sparkContext.master))
          StorageLevel.DISK_ONLY
        else storageLevel(O.IndexStorageLevelKey, get(S.IndexStorageLevel)),
      snapshotSliceFiles = math.min(long(S.SnapshotSliceFiles), Int.MaxValue.toLong).toInt,
      planningMode = PlanningMode.parse(get(S.PlanningMode)),
      executorsMinFiles = long(S.PlanningExecutorsMinFiles) match {
        // one file per 2 KiB of heap: about where collecting (retained list, split objects and
        // the transient rows of the collect) stops being a small share of the driver
        case 0L => Runtime.getRuntime.maxMemory() / 2048
        case n => n
      },
      scratchDir = get(S.PlanningScratchDir),
      useChecksum = bool(S.UseChecksum),
      prefetchTail = bool(S.PrefetchTail),
      shareHadoopConf = bool(S.ShareHadoopConf),
      snapshotStorageLevel =
        resolve(spark, options, S.SnapshotStorageLevel).map(r => storageLevel(r.key, r.value)),
      streamOptions = StreamOptions(options),
      // Spark's own settings, taken at the load with ours (one value of each for the whole read)
      sparkSettings = SparkSettings.of(spark)
    )
  }

  /** A storage level setting, or an error naming the key. */
  def storageLevel(key: String, value: String): StorageLevel = {
    val v = value.trim.toUpperCase(Locale.ROOT)
    try StorageLevel.fromString(v)
    catch {
      case _: IllegalArgumentException =>
        throw Errors.badOption(key, v, O.Kind.StorageLevelName.expected)
    }
  }
}
