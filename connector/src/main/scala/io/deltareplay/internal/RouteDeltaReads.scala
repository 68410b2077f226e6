package io.deltareplay.internal

import java.util.Locale

import scala.jdk.CollectionConverters._

import scala.util.control.NonFatal

import io.deltareplay.DeltaReplayOptions
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan, UnresolvedDataSource}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * Replaces delta-spark's relation for a user's batch read with this connector's, keeping the
 * version delta-spark pinned at analysis and the relation's output attributes. Leaves alone:
 * commands (writes keep delta-spark's plans), reads with options this connector does not implement,
 * reads marked `deltareplay.route=false`, and everything when `spark.deltareplay.enabled=false`.
 */
private[deltareplay] object RouteDeltaReads {

  /** The user's read options, tagged on delta-spark's DSv2 relation before it is converted. */
  val ReadOptionsTag: TreeNodeTag[Map[String, String]] = TreeNodeTag("deltareplay.readOptions")
}

/**
 * Runs with the hint rules, before delta-spark converts its DSv2 relation into a V1 relation and
 * drops the read options: tags the relation with them (Spark copies tags onto the node a rule
 * replaces it with), so that [[RouteDeltaReads]] can honour `deltareplay.route=false` and pass
 * reads with unknown options to delta-spark.
 */
private[deltareplay] case class TagDeltaReadOptions(spark: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreach {
      case u: UnresolvedDataSource if u.format.equalsIgnoreCase("delta") && !u.isStreaming =>
        if (u.getTagValue(RouteDeltaReads.ReadOptionsTag).isEmpty) {
          u.setTagValue(RouteDeltaReads.ReadOptionsTag, u.options.originalMap)
        }
      case r: DataSourceV2Relation if DeltaAdapter.isDeltaV2Relation(r) =>
        if (r.getTagValue(RouteDeltaReads.ReadOptionsTag).isEmpty) {
          r.setTagValue(
            RouteDeltaReads.ReadOptionsTag,
            r.options.asCaseSensitiveMap().asScala.toMap
          )
        }
      case _ =>
    }
    plan
  }
}

private[deltareplay] case class RouteDeltaReads(spark: SparkSession)
    extends Rule[LogicalPlan]
    with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!ReadConf.routingEnabled(spark) || plan.exists(_.isInstanceOf[Command])) return plan
    route(plan, None)
  }

  /** Rewrites relations top-down; `options` are the user's read options tagged on an ancestor. */
  private def route(plan: LogicalPlan, inherited: Option[Map[String, String]]): LogicalPlan = {
    val options = plan.getTagValue(RouteDeltaReads.ReadOptionsTag).orElse(inherited)
    plan match {
      case rel: LogicalRelation => replace(rel, options.getOrElse(Map.empty))
      case other =>
        val children = other.children.map(c => route(c, options))
        if (children.zip(other.children).forall { case (a, b) => a eq b }) other
        else other.withNewChildren(children)
    }
  }

  private def replace(rel: LogicalRelation, userOptions: Map[String, String]): LogicalPlan =
    DeltaAdapter.deltaRead(rel) match {
      case Some(read) if routable(read.options ++ userOptions) =>
        try {
          val snapshot =
            TableSnapshot.load(spark, read.tablePath.toString, Some(read.version), None)
          val table = new DeltaReplayTable(spark, snapshot, Map.empty)
          DataSourceV2Relation(
            table,
            rel.output,
            None,
            None,
            CaseInsensitiveStringMap.empty()
          )
        } catch {
          case e: Errors.DeltaReplayException if e.getMessage.contains("reader features") =>
            logWarning(s"Reading ${read.tablePath} with delta-spark: ${e.getMessage}")
            rel
          case NonFatal(e) => throw e
        }
      case _ => rel
    }

  private def routable(options: Map[String, String]): Boolean = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val optedOut = lower
      .get(DeltaReplayOptions.RouteOption.toLowerCase(Locale.ROOT))
      .exists(_.trim.equalsIgnoreCase("false"))
    val unknown = lower.keySet -- DeltaReplayOptions.KnownReadOptions
    !optedOut && unknown.isEmpty
  }
}
