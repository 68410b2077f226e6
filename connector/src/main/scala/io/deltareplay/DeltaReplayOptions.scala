package io.deltareplay

/**
 * Read options and session configuration keys of the delta-replay connector.
 *
 * Per-read options (`spark.read.format("delta-replay").option(...)`) override session keys
 * (`spark.conf.set("spark.deltareplay....", ...)`), which override the defaults below. Every key is
 * documented in `docs/configuration.md`.
 *
 * {{{
 *   spark.conf.set(DeltaReplayOptions.ReplayModeKey, "distributed")
 *   spark.read.format("delta-replay").option("versionAsOf", "12").load("/data/events")
 * }}}
 */
object DeltaReplayOptions {
  val SessionPrefix = "spark.deltareplay."

  // --- time travel (read options, as delta-spark names them)
  val VersionAsOf = "versionAsOf"
  val TimestampAsOf = "timestampAsOf"

  // --- replay (session keys; also accepted as read options without the prefix)
  /** `auto` (default), `local` (driver) or `distributed` (Spark job on the executors). */
  val ReplayMode = "replay.mode"

  /** In `auto` mode, logs with more than this many bytes of checkpoint + commits go distributed. */
  val DistributedThresholdBytes = "replay.distributedThresholdBytes"

  /** Partitions of the replay shuffle in distributed mode (0 = Spark's shuffle partitions). */
  val ReplayPartitions = "replay.partitions"

  /**
   * Distributed mode: the commits after the checkpoint are reconciled on the driver and the
   * checkpoint is filtered map-side (no shuffle) when they hold at most this many bytes; otherwise
   * the keyed window replay runs over everything.
   */
  val TailFastPathMaxBytes = "replay.tailFastPathMaxBytes"

  /**
   * Distributed mode, a tail over `tailFastPathMaxBytes`: when the commits after the checkpoint
   * hold at most this many bytes, only they go through the keyed window, and the checkpoint's adds
   * are kept map-side unless the tail holds their key (its keys broadcast); otherwise every action
   * of the log is shuffled. 0 = always the whole window.
   */
  val TailBroadcastMaxBytes = "replay.tailBroadcastMaxBytes"

  /**
   * Whether `auto` replay keeps the replayed file list of the table version last read (per session,
   * on the driver) and rolls it forward by the new commits when a newer version is read (default
   * true).
   */
  val StateCache = "replay.stateCache.enabled"

  /**
   * Whether a read with partition or statistics filters that has no index of its table version at
   * hand, on a log replayed as a Spark job (checkpoint plus a short tail), reads only the
   * checkpoint adds its filters may match: the filters go into the checkpoint's Parquet read, so
   * row groups and pages whose `stats_parsed` bounds exclude them are never decoded (default true).
   * The index of the whole version is then built in the background ([[IndexInBackground]]).
   */
  val FilterCheckpoint = "replay.filterCheckpoint"

  /**
   * Whether a read through [[FilterCheckpoint]] reads each checkpoint Parquet file in two passes:
   * first only the columns its filters use, then all columns of the rows that pass, through the
   * file's page index (default true). `false`: one pass decodes every column of every row.
   */
  val CheckpointTwoPass = "replay.filterCheckpoint.twoPass"

  /**
   * Whether the index of a version first read through [[FilterCheckpoint]] is built in the
   * background for the reads after it (a Spark job in its own job group; default true, with
   * [[StateCache]]). Off: the next read that needs the whole index builds it.
   */
  val IndexInBackground = "index.buildInBackground"

  /**
   * Session key: whether the commits after a checkpoint are parsed on a background thread as soon
   * as a DataFrame or stream over a table with no cached index is created, so that its replay finds
   * them reconciled (default true).
   */
  val PrefetchTail = "replay.prefetchTail"

  /**
   * Session key: whether a snapshot's protocol and metadata are taken from the version checksum
   * file of its version (`NNN.crc`) when the log has one, instead of from its commits and
   * checkpoint (default true).
   */
  val UseChecksum = "replay.useChecksum"

  /** Byte budget of the replay state cache (0 = a tenth of the driver's max heap). */
  val StateCacheMaxBytes = "replay.stateCache.maxBytes"

  /** The state cache rolls forward over at most this many bytes of commits (else: full replay). */
  val StateMaxTailBytes = "replay.stateCache.maxTailBytes"

  /**
   * Whether `count(*)`, and `min`/`max` of integral and date columns, are answered from the log's
   * statistics without reading data files, when no filter on a data column prevents it (default
   * true).
   */
  val MetadataAggregates = "aggregates.fromStats"

  /** Whether min/max/nullCount statistics skip files (default true). */
  val DataSkipping = "skipping.enabled"

  /**
   * Storage level of a snapshot index kept on the executors (tables too big for the driver, see
   * [[PlanningMode]]); default `MEMORY_AND_DISK`.
   */
  val IndexStorageLevel = "index.storageLevel"

  /**
   * A stream's initial snapshot on the executors is read in slices of this many files, each found
   * in one pass over the snapshot index (default 50000).
   */
  val SnapshotSliceFiles = "streaming.snapshotSliceFiles"

  // --- planning (session keys; also accepted as read options without the prefix)
  /**
   * Where a batch scan's file list is pruned, skipped and split: `driver` (collected to the driver,
   * as delta-spark does), `executors` (the list stays on the executors, written as manifest Parquet
   * files under [[PlanningScratchDir]]; input partitions name a bin of a manifest, so the driver
   * holds O(input partitions), not O(files)) or `auto` (default: `executors` when the table has at
   * least [[PlanningExecutorsMinFiles]] files and no replayed state is at hand on the driver).
   */
  val PlanningMode = "planning.mode"

  /**
   * In `auto` planning, tables with at least this many files (estimated) plan on the executors (0 =
   * one file per 2 KiB of the driver's max heap: 1M files at 2 GB, 2M at 4 GB).
   */
  val PlanningExecutorsMinFiles = "planning.executorsMinFiles"

  /**
   * Directory for the manifests of executor-side planning; must be readable by every executor (the
   * default file system's `/tmp/delta-replay` by default). Each scan writes its own subdirectory
   * and deletes it when the scan is garbage-collected or the application ends.
   */
  val PlanningScratchDir = "planning.scratchDir"

  // --- routing (session key)
  /** Whether `format("delta")` reads are routed through this connector (default true). */
  val Enabled = "enabled"

  /**
   * Whether a routed `spark.read.format("delta").load(path)` is resolved to this connector's
   * relation when the DataFrame is created (default true), without delta-spark loading its own
   * snapshot of the table for the analysis; `false`: delta-spark resolves it and the connector
   * takes over when the query runs, as for SQL and catalog reads.
   */
  val RouteAtLoad = "routeAtLoad"

  /** Read option that keeps one `format("delta")` read on delta-spark (value `false`). */
  val RouteOption = "deltareplay.route"

  val ReplayModeKey: String = SessionPrefix + ReplayMode
  val DistributedThresholdBytesKey: String = SessionPrefix + DistributedThresholdBytes
  val ReplayPartitionsKey: String = SessionPrefix + ReplayPartitions
  val TailFastPathMaxBytesKey: String = SessionPrefix + TailFastPathMaxBytes
  val TailBroadcastMaxBytesKey: String = SessionPrefix + TailBroadcastMaxBytes
  val DataSkippingKey: String = SessionPrefix + DataSkipping
  val EnabledKey: String = SessionPrefix + Enabled
  val RouteAtLoadKey: String = SessionPrefix + RouteAtLoad
  val StateCacheKey: String = SessionPrefix + StateCache
  val FilterCheckpointKey: String = SessionPrefix + FilterCheckpoint
  val IndexInBackgroundKey: String = SessionPrefix + IndexInBackground
  val CheckpointTwoPassKey: String = SessionPrefix + CheckpointTwoPass
  val PrefetchTailKey: String = SessionPrefix + PrefetchTail
  val UseChecksumKey: String = SessionPrefix + UseChecksum
  val StateCacheMaxBytesKey: String = SessionPrefix + StateCacheMaxBytes
  val StateMaxTailBytesKey: String = SessionPrefix + StateMaxTailBytes
  val MetadataAggregatesKey: String = SessionPrefix + MetadataAggregates
  val IndexStorageLevelKey: String = SessionPrefix + IndexStorageLevel
  val PlanningModeKey: String = SessionPrefix + PlanningMode
  val PlanningExecutorsMinFilesKey: String = SessionPrefix + PlanningExecutorsMinFiles
  val PlanningScratchDirKey: String = SessionPrefix + PlanningScratchDir

  /** Defaults, by key without prefix. */
  val Defaults: Map[String, String] = Map(
    ReplayMode -> "auto",
    DistributedThresholdBytes -> (16L * 1024 * 1024).toString,
    ReplayPartitions -> "0",
    TailFastPathMaxBytes -> (64L * 1024 * 1024).toString,
    TailBroadcastMaxBytes -> (256L * 1024 * 1024).toString,
    DataSkipping -> "true",
    StateCache -> "true",
    FilterCheckpoint -> "true",
    CheckpointTwoPass -> "true",
    IndexInBackground -> "true",
    StateCacheMaxBytes -> "0",
    StateMaxTailBytes -> (64L * 1024 * 1024).toString,
    MetadataAggregates -> "true",
    IndexStorageLevel -> "MEMORY_AND_DISK",
    SnapshotSliceFiles -> "50000",
    PlanningMode -> "auto",
    PlanningExecutorsMinFiles -> "0",
    PlanningScratchDir -> "/tmp/delta-replay",
    Enabled -> "true",
    RouteAtLoad -> "true",
    PrefetchTail -> "true",
    UseChecksum -> "true"
  )

  /**
   * Read options this connector understands; any other option sends a routed read to delta-spark.
   */
  val KnownReadOptions: Set[String] = Set(
    VersionAsOf,
    TimestampAsOf,
    ReplayMode,
    DistributedThresholdBytes,
    ReplayPartitions,
    TailFastPathMaxBytes,
    TailBroadcastMaxBytes,
    DataSkipping,
    StateCache,
    FilterCheckpoint,
    CheckpointTwoPass,
    IndexInBackground,
    StateCacheMaxBytes,
    StateMaxTailBytes,
    MetadataAggregates,
    IndexStorageLevel,
    SnapshotSliceFiles,
    PlanningMode,
    PlanningExecutorsMinFiles,
    PlanningScratchDir,
    "path",
    "paths"
  ).map(_.toLowerCase)
}
