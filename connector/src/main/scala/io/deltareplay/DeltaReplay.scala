package io.deltareplay

import io.deltareplay.internal.scan.{DeltaReplayScan, StatsAggregateScan}
import org.apache.spark.sql.Dataset
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

/**
 * Entry points for tools and for Python (through py4j).
 *
 * {{{
 *   val df = spark.read.format("delta").load("/data/events").where("day = '2024-01-01'")
 *   println(DeltaReplay.scanMetricsJson(df))
 * }}}
 */
object DeltaReplay {

  /**
   * What replay and skipping did for each delta-replay scan in the plan of `df`, as a JSON array
   * (an aggregate answered from the log's statistics reports `aggregatesFromStats`). Plans the
   * query (replay and file skipping run; no data is read).
   */
  def scanMetricsJson(df: Dataset[_]): String =
    scanMetrics(df.queryExecution.executedPlan).mkString("[", ",", "]")

  /** The connector's version (the jar's, e.g. `0.1.0`). */
  lazy val version: String = {
    val in = getClass.getResourceAsStream("/io/deltareplay/version.properties")
    val props = new java.util.Properties()
    if (in != null)
      try props.load(in)
      finally in.close()
    props.getProperty("version", "unknown")
  }

  /** The metrics JSON of each delta-replay scan in a physical plan, in plan order. */
  private[deltareplay] def scanMetrics(plan: SparkPlan): Seq[String] = plan match {
    case a: AdaptiveSparkPlanExec => scanMetrics(a.executedPlan)
    case q: QueryStageExec => scanMetrics(q.plan)
    case b: BatchScanExec =>
      b.scan match {
        case s: DeltaReplayScan => Seq(s.metrics.toJson)
        case s: StatsAggregateScan => Seq(s.metricsJson)
        case _ => Nil
      }
    case other => other.children.flatMap(scanMetrics) ++ other.subqueries.flatMap(scanMetrics)
  }
}
