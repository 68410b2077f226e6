package io.deltareplay.internal

import java.util.Locale

import io.deltareplay.{DeltaReplayOptions => O}
import org.apache.spark.sql.SparkSession
import org.apache.spark.storage.StorageLevel

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

/** How the replay runs: on the driver, as a Spark job, or chosen by log size. */
private[deltareplay] sealed trait ReplayMode extends Named
private[deltareplay] object ReplayMode {
  case object Auto extends ReplayMode { val name = "auto" }
  case object Local extends ReplayMode { val name = "local" }
  case object Distributed extends ReplayMode { val name = "distributed" }

  def parse(value: String): ReplayMode =
    Named.parse(O.ReplayModeKey, value, Seq(Auto, Local, Distributed))
}

/** Where a batch scan's file list is pruned, skipped and split (see `planning.mode`). */
private[deltareplay] sealed trait PlanningMode extends Named
private[deltareplay] object PlanningMode {
  case object Auto extends PlanningMode { val name = "auto" }
  case object Driver extends PlanningMode { val name = "driver" }
  case object Executors extends PlanningMode { val name = "executors" }

  def parse(value: String): PlanningMode =
    Named.parse(O.PlanningModeKey, value, Seq(Auto, Driver, Executors))
}

/**
 * The read configuration, resolved once on the driver: read option > session conf > default. Passed
 * on as plain values.
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
    indexInBackground: Boolean,
    stateCacheBudgetBytes: Long,
    stateMaxTailBytes: Long,
    metadataAggregates: Boolean,
    indexStorageLevel: StorageLevel,
    snapshotSliceFiles: Int,
    planningMode: PlanningMode,
    executorsMinFiles: Long,
    scratchDir: String
)

private[deltareplay] object ReadConf {

  def apply(spark: SparkSession, options: Map[String, String]): ReadConf = {
    val lowerOptions = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    def get(key: String): String =
      lowerOptions
        .get(key.toLowerCase(Locale.ROOT))
        .orElse(spark.conf.getOption(O.SessionPrefix + key))
        .getOrElse(O.Defaults(key))
    def long(key: String): Long =
      try get(key).trim.toLong
      catch {
        case _: NumberFormatException =>
          throw Errors.badOption(O.SessionPrefix + key, get(key), "a whole number")
      }
    def bool(key: String): Boolean = get(key).trim.toLowerCase(Locale.ROOT) match {
      case "true" => true
      case "false" => false
      case other => throw Errors.badOption(O.SessionPrefix + key, other, "true or false")
    }
    ReadConf(
      replayMode = ReplayMode.parse(get(O.ReplayMode)),
      distributedThresholdBytes = long(O.DistributedThresholdBytes),
      replayPartitions = long(O.ReplayPartitions).toInt,
      tailFastPathMaxBytes = long(O.TailFastPathMaxBytes),
      tailBroadcastMaxBytes = long(O.TailBroadcastMaxBytes),
      dataSkipping = bool(O.DataSkipping),
      stateCache = bool(O.StateCache),
      filterCheckpoint = bool(O.FilterCheckpoint),
      checkpointTwoPass = bool(O.CheckpointTwoPass),
      indexInBackground = bool(O.IndexInBackground),
      stateCacheBudgetBytes = long(O.StateCacheMaxBytes) match {
        case 0L => Runtime.getRuntime.maxMemory() / 10
        case n => n
      },
      stateMaxTailBytes = long(O.StateMaxTailBytes),
      metadataAggregates = bool(O.MetadataAggregates),
      indexStorageLevel = storageLevel(O.IndexStorageLevel, get(O.IndexStorageLevel)),
      snapshotSliceFiles = long(O.SnapshotSliceFiles) match {
        case n if n >= 1 && n <= Int.MaxValue => n.toInt
        case _ =>
          throw Errors.badOption(
            O.SessionPrefix + O.SnapshotSliceFiles,
            get(O.SnapshotSliceFiles),
            "a positive whole number"
          )
      },
      planningMode = PlanningMode.parse(get(O.PlanningMode)),
      executorsMinFiles = long(O.PlanningExecutorsMinFiles) match {
        // one file per 2 KiB of heap: about where collecting (retained list, split objects and
        // the transient rows of the collect) stops being a small share of the driver
        case 0L => Runtime.getRuntime.maxMemory() / 2048
        case n => n
      },
      scratchDir = get(O.PlanningScratchDir).trim
    )
  }

  /** A storage level setting, or an error naming the key. */
  def storageLevel(key: String, value: String): StorageLevel = {
    val v = value.trim.toUpperCase(Locale.ROOT)
    try StorageLevel.fromString(v)
    catch {
      case _: IllegalArgumentException =>
        throw Errors.badOption(
          O.SessionPrefix + key,
          v,
          "a Spark storage level such as MEMORY_AND_DISK"
        )
    }
  }

  /** Whether routing of `format("delta")` reads is on for this session. */
  def routingEnabled(spark: SparkSession): Boolean = on(spark, O.EnabledKey)

  /** Whether routed `format("delta").load(...)` reads are resolved by this connector at load. */
  def routeAtLoad(spark: SparkSession): Boolean =
    routingEnabled(spark) && on(spark, O.RouteAtLoadKey)

  /** Whether the commits after a checkpoint are parsed ahead of need ([[TailPrefetch]]). */
  def prefetchTail(spark: SparkSession): Boolean = on(spark, O.PrefetchTailKey)

  /** Whether protocol and metadata come from a version checksum file when there is one. */
  def useChecksum(spark: SparkSession): Boolean = on(spark, O.UseChecksumKey)

  /** A session-only switch: on unless set to `false`. */
  private def on(spark: SparkSession, key: String): Boolean =
    spark.conf.getOption(key).forall(_.trim.toLowerCase(Locale.ROOT) != "false")
}
