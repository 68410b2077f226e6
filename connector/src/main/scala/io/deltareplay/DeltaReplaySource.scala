package io.deltareplay

import java.util

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.replay.TailPrefetch
import io.deltareplay.internal.scan.{DeltaReplayTable, ReadConf}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The `delta-replay` data source: reads Delta tables with distributed log replay.
 *
 * {{{
 *   spark.read.format("delta-replay").load("/data/events")
 *   spark.read.format("delta-replay").option("versionAsOf", 3).load("/data/events")
 * }}}
 *
 * With [[DeltaReplayExtension]] in `spark.sql.extensions`, plain `format("delta")` reads go through
 * it as well.
 */
class DeltaReplaySource extends TableProvider with DataSourceRegister {
  @volatile private var loaded: Option[(Map[String, String], DeltaReplayTable)] = None

  override def shortName(): String = "delta-replay"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    table(options.asCaseSensitiveMap().asScala.toMap).schema

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]
  ): Table = table(properties.asScala.toMap)

  override def supportsExternalMetadata(): Boolean = false

  /** Loads the table once per read (Spark asks for the schema, then for the table). */
  private def table(options: Map[String, String]): DeltaReplayTable = synchronized {
    loaded match {
      case Some((o, t)) if o == options => t
      case _ =>
        val t = DeltaReplaySource.read(SparkSession.active, options)
        loaded = Some(options -> t)
        t
    }
  }
}

private[deltareplay] object DeltaReplaySource {

  /**
   * The table a read with `options` (`path`, time travel, settings) asks for, its settings resolved
   * once ([[ReadConf]]) and its snapshot loaded with them. The options are checked first: an option
   * this connector does not take, or a value a setting does not, fails the read naming the option.
   */
  def read(spark: SparkSession, options: Map[String, String]): DeltaReplayTable = {
    checkOptions(options)
    val conf = ReadConf(spark, options)
    table(spark, load(spark, options, conf), options, conf)
  }

  /** The snapshot a read with `options` (`path`, time travel) and settings `conf` asks for. */
  def load(spark: SparkSession, options: Map[String, String], conf: ReadConf): TableSnapshot = {
    val ci = new CaseInsensitiveStringMap(options.asJava)
    val path = Option(ci.get("path")).getOrElse(throw Errors.noPath())
    val version = Option(ci.get(DeltaReplayOptions.VersionAsOf)).map { v =>
      try v.trim.toLong
      catch {
        case _: NumberFormatException =>
          throw Errors.badOption(DeltaReplayOptions.VersionAsOf, v, "a version number")
      }
    }
    val timestamp = Option(ci.get(DeltaReplayOptions.TimestampAsOf))
    val snapshot = TableSnapshot.load(spark, path, version, timestamp, conf.log)
    TailPrefetch.start(spark, snapshot, withStats = true, conf.replay)
    snapshot
  }

  /**
   * Refuses the options of a `format("delta-replay")` read that this connector does not take (batch
   * and streaming reads share one source, so a stream's options pass here too): a typo of one of
   * its settings, or one of delta-spark's options it does not serve, such as `readChangeFeed`,
   * which `format("delta")` reads through delta-spark.
   */
  def checkOptions(options: Map[String, String]): Unit =
    options.keys.toSeq.sorted.foreach { key =>
      if (!DeltaReplayOptions.KnownStreamOptions.contains(key.toLowerCase(java.util.Locale.ROOT))) {
        DeltaReplayOptions.settingNamed(key) match {
          case Some(s) => throw Errors.sessionOnlyOption(key, s.sessionKey)
          case None => throw Errors.unknownOption(key, DeltaReplayOptions.closest(key))
        }
      }
    }

  /** The table a read with `options` reads at `snapshot`. */
  def table(
      spark: SparkSession,
      snapshot: TableSnapshot,
      options: Map[String, String],
      conf: ReadConf
  ): DeltaReplayTable =
    new DeltaReplayTable(spark, snapshot, options, conf, timeTravel(options).nonEmpty)

  /** The options of a read that ask for a version (`versionAsOf`, `timestampAsOf`). */
  def timeTravel(options: Map[String, String]): Map[String, String] = options.filter {
    case (k, _) =>
      k.equalsIgnoreCase(DeltaReplayOptions.VersionAsOf) ||
      k.equalsIgnoreCase(DeltaReplayOptions.TimestampAsOf)
  }
}
