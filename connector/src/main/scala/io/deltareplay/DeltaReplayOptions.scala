package io.deltareplay

import java.util.Locale

import scala.util.Try

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

  /** A setting with a few named values. */
  private[deltareplay] trait Named { def name: String }

  private[deltareplay] object Named {

    /** The choice named `value` (any case); an error naming `key` and the choices otherwise. */
    def parse[T <: Named](key: String, value: String, choices: Seq[T]): T = {
      val wanted = value.trim.toLowerCase(Locale.ROOT)
      choices.find(_.name == wanted).getOrElse {
        val names = choices.map(_.name)
        throw Errors.badOption(key, wanted, names.init.mkString(", ") + " or " + names.last)
      }
    }
  }

  val SessionPrefix = "spark.deltareplay."

  // --- names (see [[Settings]] for what each does)
  val VersionAsOf = "versionAsOf"
  val TimestampAsOf = "timestampAsOf"
  val ReplayMode = "replay.mode"
  val DistributedThresholdBytes = "replay.distributedThresholdBytes"
  val ReplayPartitions = "replay.partitions"
  val TailFastPathMaxBytes = "replay.tailFastPathMaxBytes"
  val TailBroadcastMaxBytes = "replay.tailBroadcastMaxBytes"
  val StateCache = "replay.stateCache.enabled"
  val FilterCheckpoint = "replay.filterCheckpoint"
  val CheckpointTwoPass = "replay.filterCheckpoint.twoPass"
  val IndexInBackground = "index.buildInBackground"
  val PrefetchTail = "replay.prefetchTail"
  val ShareHadoopConf = "read.shareHadoopConf"
  val CheckpointRowSplits = "replay.checkpointRowSplits"
  val UseChecksum = "replay.useChecksum"
  val StateCacheMaxBytes = "replay.stateCache.maxBytes"
  val StateMaxTailBytes = "replay.stateCache.maxTailBytes"
  val MetadataAggregates = "aggregates.fromStats"
  val DataSkipping = "skipping.enabled"
  val IndexStorageLevel = "index.storageLevel"
  val SnapshotSliceFiles = "streaming.snapshotSliceFiles"
  val SnapshotStorageLevel = "streaming.snapshotStorageLevel"
  val PlanningMode = "planning.mode"
  val PlanningExecutorsMinFiles = "planning.executorsMinFiles"
  val PlanningScratchDir = "planning.scratchDir"
  val Enabled = "enabled"
  val RouteAtLoad = "routeAtLoad"

  /** Read option that keeps one `format("delta")` read on delta-spark (value `false`). */
  val RouteOption = "deltareplay.route"

  // --- DeltaSource's streaming options, as delta-spark names them
  val MaxFilesPerTrigger = "maxFilesPerTrigger"
  val MaxBytesPerTrigger = "maxBytesPerTrigger"
  val StartingVersion = "startingVersion"
  val StartingTimestamp = "startingTimestamp"
  val IgnoreDeletes = "ignoreDeletes"
  val IgnoreChanges = "ignoreChanges"
  val SkipChangeCommits = "skipChangeCommits"

  /** Where a setting may be given. */
  sealed abstract class Scope(val describe: String) extends Product with Serializable {

    /** Whether a read (`.option(...)`) may give it. */
    def isReadOption: Boolean = this != Scope.Session

    /** Whether a session key `spark.deltareplay.<name>` may give it. */
    def isSessionKey: Boolean = this == Scope.ReadAndSession || this == Scope.Session
  }

  object Scope {

    /** A read option of batch and streaming reads, or a session key. */
    case object ReadAndSession extends Scope("read option or session key")

    /** A session key only. */
    case object Session extends Scope("session key")

    /** A read option only. */
    case object Read extends Scope("read option")

    /** A read option of streams only (DeltaSource's). */
    case object Stream extends Scope("stream option")
  }

  /** The values a setting takes; `expected` says them in an error. */
  sealed abstract class Kind(val expected: String) extends Product with Serializable {

    /** Whether `value` is one of them. */
    def accepts(value: String): Boolean
  }

  object Kind {
    case object Bool extends Kind("true or false") {
      def accepts(value: String): Boolean =
        Set("true", "false").contains(value.trim.toLowerCase(Locale.ROOT))
    }

    /** A whole number of at least `min`. */
    final case class Whole(min: Long) extends Kind(s"a whole number of at least $min") {
      def accepts(value: String): Boolean = Try(value.trim.toLong).toOption.exists(_ >= min)
    }

    /** One of `choices` (any case). */
    final case class OneOf(choices: String*)
        extends Kind(choices.init.mkString(", ") + " or " + choices.last) {
      def accepts(value: String): Boolean = choices.contains(value.trim.toLowerCase(Locale.ROOT))
    }

    case object StorageLevelName extends Kind("a Spark storage level such as MEMORY_AND_DISK") {
      def accepts(value: String): Boolean =
        Try(
          org.apache.spark.storage.StorageLevel.fromString(value.trim.toUpperCase(Locale.ROOT))
        ).isSuccess
    }

    case object Text extends Kind("a non-empty value") {
      def accepts(value: String): Boolean = value.trim.nonEmpty
    }

    case object Version extends Kind("a version number") {
      def accepts(value: String): Boolean = Try(value.trim.toLong).toOption.exists(_ >= 0)
    }

    /** A timestamp or a date (checked against the table when the read resolves it). */
    case object Timestamp extends Kind("a timestamp or date") {
      def accepts(value: String): Boolean = value.trim.nonEmpty
    }

    /** A version number or `latest`. */
    case object StartVersion extends Kind("a version number or 'latest'") {
      def accepts(value: String): Boolean =
        value.trim.equalsIgnoreCase("latest") || Version.accepts(value)
    }

    /** A positive number of bytes: `1048576`, `10k`, `64m`, `1g`. */
    case object Bytes extends Kind("a positive number of bytes (1048576, 64m, 1g, ...)") {
      def accepts(value: String): Boolean = parseBytes(value).exists(_ > 0)
    }
  }

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

  private def setting(name: String, scope: Scope, kind: Kind, default: String, doc: String) =
    Setting(name, scope, kind, Option(default), doc)

  import Kind._
  import Scope._

  /** Every setting, in the order `docs/configuration.md` lists them. */
  val Settings: Seq[Setting] = Seq(
    setting(
      ReplayMode,
      ReadAndSession,
      OneOf("auto", "local", "distributed"),
      "auto",
      "Where the log is replayed: on the driver, as a Spark job, or by the log's size."
    ),
    setting(
      DistributedThresholdBytes,
      ReadAndSession,
      Whole(0),
      (16L << 20).toString,
      "`auto` replay: log bytes above which replay runs as a Spark job (a log without a " +
        "checkpoint: also above `replay.tailFastPathMaxBytes`)."
    ),
    setting(
      ReplayPartitions,
      ReadAndSession,
      Whole(0),
      "0",
      "Partitions of the keyed-window replay shuffle (0: `spark.sql.shuffle.partitions`)."
    ),
    setting(
      TailFastPathMaxBytes,
      ReadAndSession,
      Whole(0),
      (64L << 20).toString,
      "Commits after the checkpoint up to this size are reconciled on the driver (`auto`: " +
        "a log of commits only, too)."
    ),
    setting(
      TailBroadcastMaxBytes,
      ReadAndSession,
      Whole(0),
      (256L << 20).toString,
      "Bigger tails up to this size go through the keyed window alone (0: shuffle everything)."
    ),
    setting(
      StateCache,
      ReadAndSession,
      Bool,
      "true",
      "Keep each table's snapshot index and roll it forward by new commits."
    ),
    setting(
      FilterCheckpoint,
      ReadAndSession,
      Bool,
      "true",
      "A filtered first read builds index entries only for the files its filters may match."
    ),
    setting(
      CheckpointTwoPass,
      ReadAndSession,
      Bool,
      "true",
      "Filtered checkpoint reads decode the filters' columns first, then the matching rows."
    ),
    setting(
      IndexInBackground,
      ReadAndSession,
      Bool,
      "true",
      "After a filtered first read, build the whole index in the background."
    ),
    setting(
      PrefetchTail,
      Session,
      Bool,
      "true",
      "Parse the commits after a checkpoint when a DataFrame or stream is created."
    ),
    setting(
      ShareHadoopConf,
      Session,
      Bool,
      "true",
      "A scan's file readers share one Hadoop configuration instead of a copy per file."
    ),
    setting(
      CheckpointRowSplits,
      Session,
      Bool,
      "false",
      "A checkpoint Parquet file's splits divide its row groups by rows, read by as many tasks."
    ),
    setting(
      UseChecksum,
      Session,
      Bool,
      "true",
      "Take protocol and metadata from the version checksum file when there is one."
    ),
    setting(
      StateCacheMaxBytes,
      ReadAndSession,
      Whole(0),
      "0",
      "Driver heap budget of cached indexes (0: a tenth of the driver's max heap)."
    ),
    setting(
      StateMaxTailBytes,
      ReadAndSession,
      Whole(0),
      (64L << 20).toString,
      "Roll a cached index forward over at most this many bytes of commits."
    ),
    setting(
      MetadataAggregates,
      ReadAndSession,
      Bool,
      "true",
      "Answer count/min/max from the log's statistics when no data filter prevents it."
    ),
    setting(
      DataSkipping,
      ReadAndSession,
      Bool,
      "true",
      "Skip files by their min/max/null-count statistics."
    ),
    setting(
      IndexStorageLevel,
      ReadAndSession,
      StorageLevelName,
      "MEMORY_AND_DISK",
      "Storage level of a snapshot index kept on the executors (unset, with a `local` master: " +
        "DISK_ONLY)."
    ),
    setting(
      PlanningMode,
      ReadAndSession,
      OneOf("auto", "driver", "executors"),
      "auto",
      "Where the index lives and a batch scan plans: driver, executors, or by table size."
    ),
    setting(
      PlanningExecutorsMinFiles,
      ReadAndSession,
      Whole(0),
      "0",
      "`auto` planning: tables with this many files plan on the executors (0: 1 per 2 KiB heap)."
    ),
    setting(
      PlanningScratchDir,
      ReadAndSession,
      Text,
      "/tmp/delta-replay",
      "Directory of executor planning's manifests; every executor must reach it."
    ),
    setting(
      SnapshotSliceFiles,
      ReadAndSession,
      Whole(1),
      "50000",
      "A stream's initial snapshot on the executors is read in slices of this many files."
    ),
    Setting(
      SnapshotStorageLevel,
      ReadAndSession,
      StorageLevelName,
      None,
      "Storage level of a stream's snapshot index on the executors (unset: `index.storageLevel`)."
    ),
    setting(
      Enabled,
      Session,
      Bool,
      "true",
      "With the extension: route `format(\"delta\")`, tables and SQL through this connector."
    ),
    setting(
      RouteAtLoad,
      Session,
      Bool,
      "true",
      "Resolve `format(\"delta\").load(path)` to this connector when the DataFrame is created."
    ),
    Setting(VersionAsOf, Read, Version, None, "Read this table version."),
    Setting(
      TimestampAsOf,
      Read,
      Timestamp,
      None,
      "Read the version that was newest at this timestamp."
    ),
    Setting(
      RouteOption,
      Read,
      Bool,
      None,
      "`false` keeps one `format(\"delta\")` read on delta-spark."
    ),
    setting(
      MaxFilesPerTrigger,
      Stream,
      Whole(1),
      "1000",
      "Files admitted per micro-batch."
    ),
    Setting(
      MaxBytesPerTrigger,
      Stream,
      Bytes,
      None,
      "Bytes admitted per micro-batch (at least one file)."
    ),
    Setting(
      StartingVersion,
      Stream,
      StartVersion,
      None,
      "Read the changes from this version on (`latest`: only new commits), no snapshot."
    ),
    Setting(
      StartingTimestamp,
      Stream,
      Timestamp,
      None,
      "Read the changes from the first commit at or after this timestamp."
    ),
    setting(IgnoreDeletes, Stream, Bool, "false", "Skip commits that only remove files."),
    setting(
      IgnoreChanges,
      Stream,
      Bool,
      "false",
      "Re-emit the files that change commits add; their removes are ignored."
    ),
    setting(
      SkipChangeCommits,
      Stream,
      Bool,
      "false",
      "Skip every commit that removes or rewrites data."
    )
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
