package io.deltareplay

import io.deltareplay.internal.routing.{
  ResolveDeltaLoads,
  ReturnWriteTargets,
  RouteDeltaReads,
  RouteDeltaStreams,
  SqlFunctions,
  TagDeltaReadOptions
}
import org.apache.spark.sql.SparkSessionExtensions

/**
 * Session extension that routes delta-spark batch reads through this connector.
 *
 * {{{
 *   spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension,io.deltareplay.DeltaReplayExtension
 * }}}
 *
 * `spark.read.format("delta").load(path)` is resolved to this connector's relation when the
 * DataFrame is created (`ResolveDeltaLoads`). Other reads (SQL, catalog tables) are resolved by
 * delta-spark; the rewrite of those runs when a query is about to be optimized (a plan
 * normalization rule), so the analyzed plan still holds delta-spark's relation:
 * `DeltaTable.merge/update/delete`, which take their target from the analyzed plan, and
 * delta-spark's own scans inside MERGE, UPDATE, DELETE and OPTIMIZE stay with delta-spark. Turn
 * routing off with `spark.deltareplay.enabled=false`, or for one read with option
 * `deltareplay.route=false`.
 *
 * It also registers `delta_replay_version()` and `delta_replay_scan_metrics(TABLE(query))`, which
 * answer any client, a Spark Connect client included (see `internal.routing.SqlFunctions`).
 */
class DeltaReplayExtension extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectHintResolutionRule(spark => ResolveDeltaLoads(spark))
    extensions.injectHintResolutionRule(spark => TagDeltaReadOptions(spark))
    extensions.injectHintResolutionRule(spark => ReturnWriteTargets(spark))
    extensions.injectPlanNormalizationRule(spark => RouteDeltaReads(spark))
    extensions.injectPostHocResolutionRule(spark => RouteDeltaStreams(spark))
    extensions.injectFunction(SqlFunctions.version)
    extensions.injectTableFunction(SqlFunctions.scanMetrics)
  }
}
