package io.deltareplay.internal.routing

import io.deltareplay.Errors
import io.deltareplay.DeltaReplay
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{
  AttributeReference,
  Expression,
  ExpressionInfo,
  FunctionTableSubqueryArgumentExpression,
  Literal
}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.types.{IntegerType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * SQL functions the session extension registers, so that any client, a Spark Connect client
 * included, can ask the connector without reaching into the driver's JVM:
 *
 * {{{
 *   SELECT delta_replay_version();
 *   SELECT * FROM delta_replay_scan_metrics(TABLE(SELECT * FROM delta.`/data/t` WHERE day = 3));
 * }}}
 *
 * `delta_replay_scan_metrics` plans its table argument (replay and file skipping run, no data file
 * is read) and returns one row per delta-replay scan of that plan: its position and the same JSON
 * that `DeltaReplay.scanMetricsJson` gives for a DataFrame.
 */
private[deltareplay] object SqlFunctions {

  val VersionName = "delta_replay_version"
  val ScanMetricsName = "delta_replay_scan_metrics"

  type Builder = Seq[Expression] => Expression
  type TableBuilder = Seq[Expression] => LogicalPlan

  val version: (FunctionIdentifier, ExpressionInfo, Builder) = (
    FunctionIdentifier(VersionName),
    info(
      VersionName,
      "_FUNC_() - The version of the delta-replay connector loaded in this session.",
      "\n    Examples:\n      > SELECT _FUNC_();\n"
    ),
    args => {
      if (args.nonEmpty) throw usage(VersionName, "takes no argument")
      Literal(DeltaReplay.version)
    }
  )

  val scanMetrics: (FunctionIdentifier, ExpressionInfo, TableBuilder) = (
    FunctionIdentifier(ScanMetricsName),
    info(
      ScanMetricsName,
      "_FUNC_(TABLE(query)) - Plans the query (log replay and file skipping run, no data is read) " +
        "and returns one row per delta-replay scan in it: scan (its position in the plan) and " +
        "metrics (JSON: table, version, replayMode, liveFiles, filesAfterSkipping, ...).",
      "\n    Examples:\n      > SELECT * FROM _FUNC_(TABLE(SELECT * FROM delta.`/data/t` WHERE id < 10));\n"
    ),
    args => {
      val plan = args match {
        case Seq(t: FunctionTableSubqueryArgumentExpression) => t.plan
        case _ => throw usage(ScanMetricsName, "takes one TABLE(...) argument: the query to plan")
      }
      val spark = SparkSession.active
      val planned = spark.sessionState.executePlan(plan).executedPlan
      val rows = DeltaReplay.scanMetrics(planned).zipWithIndex.map { case (json, i) =>
        org.apache.spark.sql.catalyst.InternalRow(i, UTF8String.fromString(json))
      }
      LocalRelation(
        Seq(
          AttributeReference("scan", IntegerType, nullable = false)(),
          AttributeReference("metrics", StringType, nullable = false)()
        ),
        rows
      )
    }
  )

  private def info(name: String, usage: String, examples: String): ExpressionInfo =
    new ExpressionInfo(
      getClass.getName,
      null,
      name,
      usage,
      "",
      examples,
      "",
      "misc_funcs",
      "",
      "",
      "built-in"
    )

  private def usage(name: String, what: String): Errors.DeltaReplayException =
    Errors.badFunctionCall(name, what)
}
