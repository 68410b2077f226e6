package io.deltareplay

import java.util.Locale

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Literal}
import org.apache.spark.sql.types.TimestampType
import org.apache.spark.unsafe.types.UTF8String

/**
 * Read options and session configuration keys of the delta-replay connector: one registry
 * ([[Settings]]) that names each setting, where it may be given, the values it takes, its default
 * and what it does. The known-option sets, the defaults, the validation of values and the table in
 * `docs/configuration.md` all derive from it.
 *
 * Per-read options (`spark.read.format("delta-replay").option(...)`) override session keys
 * (`spark.conf.set("spark.deltareplay....", ...)`), which override the defaults. A read of
 * `format("delta-replay")` refuses an option it does not know, naming it.
 *
 * {{{
 *   spark.conf.set(DeltaReplayOptions.ReplayModeKey, "distributed")
 *   spark.read.format("delta-replay").option("versionAsOf", "12").load("/data/events")
 * }}}
 */
object DeltaReplayOptions {

  // what a setting's values and places are (SettingKinds), under the names users of this object know
  private[deltareplay] type Named = SettingKinds.Named
  private[deltareplay] val Named: SettingKinds.Named.type = SettingKinds.Named
  type Scope = SettingKinds.Scope
  val Scope: SettingKinds.Scope.type = SettingKinds.Scope
  type Kind = SettingKinds.Kind
  val Kind: SettingKinds.Kind.type = SettingKinds.Kind

  val SessionPrefix = "spark.deltareplay."

  // --- the settings' names (each defined, with what it does, in [[Setting]])
  val VersionAsOf: String = Setting.VersionAsOf.name
  val TimestampAsOf: String = Setting.TimestampAsOf.name
  val ReplayMode: String = Setting.ReplayMode.name
  val DistributedThresholdBytes: String = Setting.DistributedThresholdBytes.name
  val ReplayPartitions: String = Setting.ReplayPartitions.name
  val TailFastPathMaxBytes: String = Setting.TailFastPathMaxBytes.name
  val TailBroadcastMaxBytes: String = Setting.TailBroadcastMaxBytes.name
  val StateCache: String = Setting.StateCache.name
  val FilterCheckpoint: String = Setting.FilterCheckpoint.name
  val CheckpointTwoPass: String = Setting.CheckpointTwoPass.name
  val IndexInBackground: String = Setting.IndexInBackground.name
  val PrefetchTail: String = Setting.PrefetchTail.name
  val ShareHadoopConf: String = Setting.ShareHadoopConf.name
  val CheckpointRowSplits: String = Setting.CheckpointRowSplits.name
  val UseChecksum: String = Setting.UseChecksum.name
  val StateCacheMaxBytes: String = Setting.StateCacheMaxBytes.name
  val StateMaxTailBytes: String = Setting.StateMaxTailBytes.name
  val MetadataAggregates: String = Setting.MetadataAggregates.name
  val DataSkipping: String = Setting.DataSkipping.name
  val IndexStorageLevel: String = Setting.IndexStorageLevel.name
  val SnapshotSliceFiles: String = Setting.SnapshotSliceFiles.name
  val SnapshotStorageLevel: String = Setting.SnapshotStorageLevel.name
  val PlanningMode: String = Setting.PlanningMode.name
  val PlanningExecutorsMinFiles: String = Setting.PlanningExecutorsMinFiles.name
  val PlanningScratchDir: String = Setting.PlanningScratchDir.name
  val Enabled: String = Setting.Enabled.name
  val RouteAtLoad: String = Setting.RouteAtLoad.name

  /** Read option that keeps one `format("delta")` read on delta-spark (value `false`). */
  val RouteOption: String = Setting.RouteOption.name

  // --- DeltaSource's streaming options, as delta-spark names them
  val MaxFilesPerTrigger: String = Setting.MaxFilesPerTrigger.name
  val MaxBytesPerTrigger: String = Setting.MaxBytesPerTrigger.name
  val StartingVersion: String = Setting.StartingVersion.name
  val StartingTimestamp: String = Setting.StartingTimestamp.name
  val IgnoreDeletes: String = Setting.IgnoreDeletes.name
  val IgnoreChanges: String = Setting.IgnoreChanges.name
  val SkipChangeCommits: String = Setting.SkipChangeCommits.name

  /**
   * One setting: its name (a read option as it is; a session key with [[SessionPrefix]]), where it
   * may be given, its values, its default (None: unset) and a line saying what it does.
   */
  final case class Setting(
      name: String,
      scope: Scope,
      kind: Kind,
      default: Option[String],
      doc: String
  ) {
    def sessionKey: String = SessionPrefix + name
  }

  import Kind._
  import Scope._

  /**
   * The settings table: each setting (its name, where it may be given, its values, its default and
   * a line saying what it does) as a value, which the load resolves; the names above, [[Settings]]
   * and everything derived from it come from here. (Its entries name no other member of
   * [[DeltaReplayOptions]], so either object may be initialized first.)
   */
  object Setting {
    private def setting(name: String, scope: Scope, kind: Kind, default: String, doc: String) =
      Setting(name, scope, kind, Option(default), doc)

    val ReplayMode: Setting =
      setting(
        "replay.mode",
        ReadAndSession,
        OneOf(internal.replay.ReplayMode.all.map(_.name): _*),
        "auto",
        "Where the log is replayed: on the driver, as a Spark job, or by the log's size."
      )

    val DistributedThresholdBytes: Setting =
      setting(
        "replay.distributedThresholdBytes",
        ReadAndSession,
        Whole(0),
        (16L << 20).toString,
        "`auto` replay: log bytes above which replay runs as a Spark job (a log without a " +
          "checkpoint: also above `replay.tailFastPathMaxBytes`)."
      )

    val ReplayPartitions: Setting =
      setting(
        "replay.partitions",
        ReadAndSession,
        Whole(0),
        "0",
        "Partitions of the keyed-window replay shuffle (0: `spark.sql.shuffle.partitions`)."
      )

    val TailFastPathMaxBytes: Setting =
      setting(
        "replay.tailFastPathMaxBytes",
        ReadAndSession,
        Whole(0),
        (64L << 20).toString,
        "Commits after the checkpoint up to this size are reconciled on the driver (`auto`: " +
          "a log of commits only, too)."
      )

    val TailBroadcastMaxBytes: Setting =
      setting(
        "replay.tailBroadcastMaxBytes",
        ReadAndSession,
        Whole(0),
        (256L << 20).toString,
        "Bigger tails up to this size go through the keyed window alone (0: shuffle everything)."
      )

    val StateCache: Setting =
      setting(
        "replay.stateCache.enabled",
        ReadAndSession,
        Bool,
        "true",
        "Keep each table's snapshot index and roll it forward by new commits."
      )

    val FilterCheckpoint: Setting =
      setting(
        "replay.filterCheckpoint",
        ReadAndSession,
        Bool,
        "true",
        "A filtered first read builds index entries only for the files its filters may match."
      )

    val CheckpointTwoPass: Setting =
      setting(
        "replay.filterCheckpoint.twoPass",
        ReadAndSession,
        Bool,
        "true",
        "Filtered checkpoint reads decode the filters' columns first, then the matching rows."
      )

    val IndexInBackground: Setting =
      setting(
        "index.buildInBackground",
        ReadAndSession,
        Bool,
        "true",
        "After a filtered first read, build the whole index in the background."
      )

    val PrefetchTail: Setting =
      setting(
        "replay.prefetchTail",
        Session,
        Bool,
        "true",
        "Parse the commits after a checkpoint when a DataFrame or stream is created."
      )

    val ShareHadoopConf: Setting =
      setting(
        "read.shareHadoopConf",
        Session,
        Bool,
        "true",
        "A scan's file readers share one Hadoop configuration instead of a copy per file."
      )

    val CheckpointRowSplits: Setting =
      setting(
        "replay.checkpointRowSplits",
        Session,
        Bool,
        "false",
        "A checkpoint Parquet file's splits divide its row groups by rows, read by as many tasks."
      )

    val UseChecksum: Setting =
      setting(
        "replay.useChecksum",
        Session,
        Bool,
        "true",
        "Take protocol and metadata from the version checksum file when there is one."
      )

    val StateCacheMaxBytes: Setting =
      setting(
        "replay.stateCache.maxBytes",
        ReadAndSession,
        Whole(0),
        "0",
        "Driver heap budget of cached indexes (0: a tenth of the driver's max heap)."
      )

    val StateMaxTailBytes: Setting =
      setting(
        "replay.stateCache.maxTailBytes",
        ReadAndSession,
        Whole(0),
        (64L << 20).toString,
        "Roll a cached index forward over at most this many bytes of commits."
      )

    val MetadataAggregates: Setting =
      setting(
        "aggregates.fromStats",
        ReadAndSession,
        Bool,
        "true",
        "Answer count/min/max from the log's statistics when no data filter prevents it."
      )

    val DataSkipping: Setting =
      setting(
        "skipping.enabled",
        ReadAndSession,
        Bool,
        "true",
        "Skip files by their min/max/null-count statistics."
      )

    val IndexStorageLevel: Setting =
      setting(
        "index.storageLevel",
        ReadAndSession,
        StorageLevelName,
        "MEMORY_AND_DISK",
        "Storage level of a snapshot index kept on the executors (unset, with a `local` master: " +
          "DISK_ONLY)."
      )

    val PlanningMode: Setting =
      setting(
        "planning.mode",
        ReadAndSession,
        OneOf(internal.planning.PlanningMode.all.map(_.name): _*),
        "auto",
        "Where the index lives and a batch scan plans: driver, executors, or by table size."
      )

    val PlanningExecutorsMinFiles: Setting =
      setting(
        "planning.executorsMinFiles",
        ReadAndSession,
        Whole(0),
        "0",
        "`auto` planning: tables with this many files plan on the executors (0: 1 per 2 KiB heap)."
      )

    val PlanningScratchDir: Setting =
      setting(
        "planning.scratchDir",
        ReadAndSession,
        Text,
        "/tmp/delta-replay",
        "Directory of executor planning's manifests; every executor must reach it."
      )

    val SnapshotSliceFiles: Setting =
      setting(
        "streaming.snapshotSliceFiles",
        ReadAndSession,
        Whole(1),
        "50000",
        "A stream's initial snapshot on the executors is read in slices of this many files."
      )

    val SnapshotStorageLevel: Setting =
      Setting(
        "streaming.snapshotStorageLevel",
        ReadAndSession,
        StorageLevelName,
        None,
        "Storage level of a stream's snapshot index on the executors (unset: `index.storageLevel`)."
      )

    val Enabled: Setting =
      setting(
        "enabled",
        Session,
        Bool,
        "true",
        "With the extension: route `format(\"delta\")`, tables and SQL through this connector."
      )

    val RouteAtLoad: Setting =
      setting(
        "routeAtLoad",
        Session,
        Bool,
        "true",
        "Resolve `format(\"delta\").load(path)` to this connector when the DataFrame is created."
      )

    val VersionAsOf: Setting =
      Setting("versionAsOf", Read, Version, None, "Read this table version.")

    val TimestampAsOf: Setting =
      Setting(
        "timestampAsOf",
        Read,
        Timestamp,
        None,
        "Read the version that was newest at this timestamp."
      )

    val RouteOption: Setting =
      Setting(
        "deltareplay.route",
        Read,
        Bool,
        None,
        "`false` keeps one `format(\"delta\")` read on delta-spark."
      )

    val MaxFilesPerTrigger: Setting =
      setting(
        "maxFilesPerTrigger",
        Stream,
        Whole(1, Int.MaxValue),
        "1000",
        "Files admitted per micro-batch."
      )

    val MaxBytesPerTrigger: Setting =
      Setting(
        "maxBytesPerTrigger",
        Stream,
        Bytes,
        None,
        "Bytes admitted per micro-batch (at least one file)."
      )

    val StartingVersion: Setting =
      Setting(
        "startingVersion",
        Stream,
        StartVersion,
        None,
        "Read the changes from this version on (`latest`: only new commits), no snapshot."
      )

    val StartingTimestamp: Setting =
      Setting(
        "startingTimestamp",
        Stream,
        Timestamp,
        None,
        "Read the changes from the first commit at or after this timestamp."
      )

    val IgnoreDeletes: Setting =
      setting(
        "ignoreDeletes",
        Stream,
        Bool,
        "false",
        "Skip commits that only remove files."
      )

    val IgnoreChanges: Setting =
      setting(
        "ignoreChanges",
        Stream,
        Bool,
        "false",
        "Re-emit the files that change commits add; their removes are ignored."
      )

    val SkipChangeCommits: Setting =
      setting(
        "skipChangeCommits",
        Stream,
        Bool,
        "false",
        "Skip every commit that removes or rewrites data."
      )
  }

  /** Every setting, in the order `docs/configuration.md` lists them. */
  val Settings: Seq[Setting] = Seq(
    Setting.ReplayMode,
    Setting.DistributedThresholdBytes,
    Setting.ReplayPartitions,
    Setting.TailFastPathMaxBytes,
    Setting.TailBroadcastMaxBytes,
    Setting.StateCache,
    Setting.FilterCheckpoint,
    Setting.CheckpointTwoPass,
    Setting.IndexInBackground,
    Setting.PrefetchTail,
    Setting.ShareHadoopConf,
    Setting.CheckpointRowSplits,
    Setting.UseChecksum,
    Setting.StateCacheMaxBytes,
    Setting.StateMaxTailBytes,
    Setting.MetadataAggregates,
    Setting.DataSkipping,
    Setting.IndexStorageLevel,
    Setting.PlanningMode,
    Setting.PlanningExecutorsMinFiles,
    Setting.PlanningScratchDir,
    Setting.SnapshotSliceFiles,
    Setting.SnapshotStorageLevel,
    Setting.Enabled,
    Setting.RouteAtLoad,
    Setting.VersionAsOf,
    Setting.TimestampAsOf,
    Setting.RouteOption,
    Setting.MaxFilesPerTrigger,
    Setting.MaxBytesPerTrigger,
    Setting.StartingVersion,
    Setting.StartingTimestamp,
    Setting.IgnoreDeletes,
    Setting.IgnoreChanges,
    Setting.SkipChangeCommits
  )

  private val byName: Map[String, Setting] =
    Settings.map(s => s.name.toLowerCase(Locale.ROOT) -> s).toMap

  /** The setting called `name` (any case). */
  def settingNamed(name: String): Option[Setting] = byName.get(name.toLowerCase(Locale.ROOT))

  /** Defaults, by name, of the settings that have one. */
  val Defaults: Map[String, String] = Settings.flatMap(s => s.default.map(s.name -> _)).toMap

  /** Options every `format("delta-replay")` read may carry besides the settings (Spark's). */
  val PathOptions: Set[String] = Set("path", "paths")

  /**
   * Batch read options this connector understands (lower case); others keep a routed read on
   * delta-spark.
   */
  val KnownReadOptions: Set[String] =
    Settings.filter(s => s.scope.isReadOption && s.scope != Stream).map(_.name).toSet.map {
      n: String => n.toLowerCase(Locale.ROOT)
    } ++ PathOptions

  /** Streaming read options this connector understands (lower case), batch ones included. */
  val KnownStreamOptions: Set[String] =
    KnownReadOptions ++ Settings.filter(_.scope == Stream).map(_.name.toLowerCase(Locale.ROOT))

  /** The names of a setting family of this connector (`replay.mode` is one of `replay.`). */
  private val OwnPrefixes =
    Settings.filter(_.scope.isSessionKey).map(s => s.name.takeWhile(_ != '.') + ".").toSet

  /** Whether `key` looks like one of this connector's settings (`replay.*`, `planning.*`, ...). */
  def looksOwn(key: String): Boolean =
    OwnPrefixes.exists(p => key.toLowerCase(Locale.ROOT).startsWith(p.toLowerCase(Locale.ROOT)))

  /** The known setting closest to `key` in spelling, if one is close. */
  def closest(key: String): Option[String] = {
    val k = key.toLowerCase(Locale.ROOT)
    val scored = Settings.map(s => s.name -> distance(k, s.name.toLowerCase(Locale.ROOT)))
    scored.filter(_._2 <= math.max(2, k.length / 4)).sortBy(_._2).headOption.map(_._1)
  }

  private def distance(a: String, b: String): Int = {
    val d =
      Array.tabulate(a.length + 1, b.length + 1)((i, j) => if (i == 0) j else if (j == 0) i else 0)
    for (i <- 1 to a.length; j <- 1 to b.length) {
      val cost = if (a(i - 1) == b(j - 1)) 0 else 1
      d(i)(j) = math.min(math.min(d(i - 1)(j) + 1, d(i)(j - 1) + 1), d(i - 1)(j - 1) + cost)
    }
    d(a.length)(b.length)
  }

  /**
   * A timestamp or date string in micro-seconds, read as Spark casts it (in `timeZone` unless it
   * names one); None when it is not one.
   */
  private[deltareplay] def timestampMicros(ts: String, timeZone: String): Option[Long] =
    Option(
      Cast(Literal(UTF8String.fromString(ts)), TimestampType, Some(timeZone), EvalMode.LEGACY)
        .eval()
    ).map(_.asInstanceOf[Long])

  /**
   * The value a read's `options` give `setting` (its name in any case), trimmed, with the option's
   * name as the read wrote it; an error naming that option when the setting does not take the
   * value. None when the options do not give it.
   */
  private[deltareplay] def optionValue(
      options: Map[String, String],
      setting: Setting
  ): Option[(String, String)] =
    options.find(_._1.equalsIgnoreCase(setting.name)).map { case (key, raw) =>
      val value = raw.trim
      if (!setting.kind.accepts(value)) throw Errors.badOption(key, value, setting.kind.expected)
      key -> value
    }

  /** `1048576`, `10k`, `64m`, `1g` (as delta-spark accepts for `maxBytesPerTrigger`). */
  def parseBytes(value: String): Option[Long] = {
    val s = value.trim.toLowerCase(Locale.ROOT).stripSuffix("b")
    val (digits, unit) = s.span(_.isDigit)
    val scale = unit match {
      case "" => Some(1L)
      case "k" => Some(1L << 10)
      case "m" => Some(1L << 20)
      case "g" => Some(1L << 30)
      case "t" => Some(1L << 40)
      case _ => None
    }
    if (digits.isEmpty) None
    else scale.flatMap(m => Try(Math.multiplyExact(digits.toLong, m)).toOption)
  }

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
  val ShareHadoopConfKey: String = SessionPrefix + ShareHadoopConf
  val CheckpointRowSplitsKey: String = SessionPrefix + CheckpointRowSplits
  val UseChecksumKey: String = SessionPrefix + UseChecksum
  val StateCacheMaxBytesKey: String = SessionPrefix + StateCacheMaxBytes
  val StateMaxTailBytesKey: String = SessionPrefix + StateMaxTailBytes
  val MetadataAggregatesKey: String = SessionPrefix + MetadataAggregates
  val IndexStorageLevelKey: String = SessionPrefix + IndexStorageLevel
  val PlanningModeKey: String = SessionPrefix + PlanningMode
  val PlanningExecutorsMinFilesKey: String = SessionPrefix + PlanningExecutorsMinFiles
  val PlanningScratchDirKey: String = SessionPrefix + PlanningScratchDir
}
