package io.deltareplay.internal.routing

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.delta.DeltaAdapter
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnresolvedDataSource}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

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
