package io.deltareplay.internal.routing

import io.deltareplay.internal.replay.TailPrefetch
import scala.jdk.CollectionConverters._

import io.deltareplay.internal.compat.SparkShim
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.scan.{DeltaReplayTable, ReadConf}
import io.deltareplay.{DeltaReplayOptions, DeltaReplaySource}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * Routes delta-spark streaming reads (`readStream.format("delta")`, `readStream.table(...)`) to
 * this connector's micro-batch stream. Streams with options this connector does not implement (for
 * example `readChangeFeed` or `schemaTrackingLocation`) stay with delta-spark, as do all streams
 * when `spark.deltareplay.enabled=false`.
 */
private[deltareplay] case class RouteDeltaStreams(spark: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!RoutingSwitches.enabled(spark)) return plan
    plan.resolveOperatorsUp {
      case rel @ SparkShim.V1StreamingRelation(ds, output, identifyingName)
          if DeltaAdapter.isDeltaSource(ds.className) =>
        val options = ds.options
        val path = options
          .collectFirst { case (k, v) if k.equalsIgnoreCase("path") => v }
          .orElse(ds.catalogTable.map(_.location.toString))
        if (path.isEmpty || !RouteDeltaStreams.routable(options)) rel
        else {
          val conf = ReadConf(spark, RouteDeltaReads.connectorOptions(options))
          RouteDeltaStreams.relation(
            spark,
            RouteDeltaStreams.snapshot(spark, path.get, conf),
            options,
            conf,
            output.map(_.asInstanceOf[AttributeReference]),
            Some(rel),
            identifyingName
          )
        }
    }
  }
}

private[deltareplay] object RouteDeltaStreams {

  /** Whether a stream with `options` may be routed: no opt-out, no option unknown here. */
  def routable(options: Map[String, String]): Boolean =
    RouteDeltaReads.routable(options, DeltaReplayOptions.KnownStreamOptions)

  /**
   * The newest snapshot of the table a stream reads, its commit tail parsed ahead of the stream's
   * first batch ([[TailPrefetch]]; a stream's snapshot needs no statistics).
   */
  def snapshot(spark: SparkSession, path: String, conf: ReadConf): TableSnapshot = {
    val loaded = TableSnapshot.load(spark, path, None, None, conf.log)
    TailPrefetch.start(spark, loaded, withStats = false, conf.replay)
    loaded
  }

  /**
   * This connector's stream over `snapshot`'s table with `output`; `v1` is delta-spark's relation
   * it replaces, when delta-spark resolved the read first.
   */
  def relation(
      spark: SparkSession,
      snapshot: TableSnapshot,
      options: Map[String, String],
      conf: ReadConf,
      output: Seq[AttributeReference],
      v1: Option[LogicalPlan],
      name: SparkShim.SourceName
  ): StreamingRelationV2 =
    SparkShim.streamingRelationV2(
      new DeltaReplaySource,
      "delta-replay",
      new DeltaReplayTable(spark, snapshot, options, conf, timeTravel = false),
      new CaseInsensitiveStringMap(options.asJava),
      output,
      v1,
      name
    )
}
