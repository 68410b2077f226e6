package io.deltareplay.internal.routing

import io.deltareplay.internal.scan.DeltaReplayTable
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{
  AnalysisHelper,
  DeleteFromTable,
  InsertIntoStatement,
  LogicalPlan,
  MergeIntoTable,
  SubqueryAlias,
  UpdateTable
}
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * Hands the target of a MERGE, UPDATE, DELETE or INSERT back to delta-spark when it is a temp view
 * over a read this connector resolved
 * (`spark.read.format("delta").load(path).createOrReplaceTempView`): delta-spark writes into temp
 * views over its own reads. Runs with the hint rules, before the view is resolved: the target
 * becomes the view with delta-spark's relation of the same table in place of this connector's (same
 * output attributes), which delta-spark's analysis then turns into its write command; a MERGE's
 * source stays with this connector.
 */
private[deltareplay] case class ReturnWriteTargets(spark: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperators {
    case m: MergeIntoTable =>
      returned(m.targetTable).fold[LogicalPlan](m)(t => m.copy(targetTable = t))
    case u: UpdateTable => returned(u.table).fold[LogicalPlan](u)(t => u.copy(table = t))
    case d: DeleteFromTable => returned(d.table).fold[LogicalPlan](d)(t => d.copy(table = t))
    case i: InsertIntoStatement => returned(i.table).fold[LogicalPlan](i)(t => i.copy(table = t))
  }

  /**
   * The write's target with delta-spark's relation in place of this connector's, when it names a
   * temp view whose plan reads through this connector (the view under its own name, as Spark's
   * resolution would alias it).
   */
  private def returned(target: LogicalPlan): Option[LogicalPlan] = target match {
    case a @ SubqueryAlias(_, child) => returned(child).map(c => a.copy(child = c))
    case u: UnresolvedRelation =>
      val catalog = spark.sessionState.catalog
      val view = u.multipartIdentifier match {
        case Seq(name) => catalog.getTempView(name)
        case Seq(db, name) if catalog.globalTempDatabase.equalsIgnoreCase(db) =>
          catalog.getGlobalTempView(name)
        case _ => None
      }
      view
        .filter(_.exists {
          case r: DataSourceV2Relation => r.table.isInstanceOf[DeltaReplayTable]
          case _ => false
        })
        .map(v => SubqueryAlias(u.multipartIdentifier.last, toDeltaSpark(v)))
    case _ => None
  }

  private def toDeltaSpark(plan: LogicalPlan): LogicalPlan =
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.transformUp { case RouteDeltaReads.ConnectorRelation(r, _) =>
        RouteDeltaReads.deltaSparkRelation(spark, r)
      }
    }
}
