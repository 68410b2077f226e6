package io.deltareplay.internal.routing

import java.util.Locale

import io.deltareplay.{DeltaReplayOptions => O}
import org.apache.spark.sql.SparkSession

/**
 * The routing room's session switches, read where a plan is rewritten (the analysis of a query:
 * where a routed read is loaded). Session keys only; on unless set to `false`.
 */
private[deltareplay] object RoutingSwitches {

  /** Whether routing of `format("delta")` reads is on for this session. */
  def enabled(spark: SparkSession): Boolean = on(spark, O.EnabledKey)

  /** Whether routed `format("delta").load(...)` reads are resolved by this connector at load. */
  def routeAtLoad(spark: SparkSession): Boolean = enabled(spark) && on(spark, O.RouteAtLoadKey)

  private def on(spark: SparkSession, key: String): Boolean =
    spark.conf.getOption(key).forall(_.trim.toLowerCase(Locale.ROOT) != "false")
}
