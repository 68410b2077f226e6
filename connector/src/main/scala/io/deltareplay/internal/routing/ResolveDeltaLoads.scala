package io.deltareplay.internal.routing

import scala.jdk.CollectionConverters._

import scala.util.control.NonFatal

import io.deltareplay.internal.compat.SparkShim
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.DeltaReplaySource
import io.deltareplay.internal.scan.{DeltaReplayTable, ReadConf}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnresolvedDataSource}
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * Resolves `spark.read.format("delta").load(path)` to this connector's relation when the DataFrame
 * is created, in place of delta-spark's resolution, which loads delta-spark's own snapshot of the
 * table only to be replaced by [[RouteDeltaReads]] when the query runs (on a table without checksum
 * files, that load reads the checkpoint in a Spark job: seconds at a million files). The relation
 * shows delta-spark's columns ([[DeltaAdapter.relationSchema]]) and reads the newest version at
 * every execution, as delta-spark's does.
 *
 * `spark.readStream.format("delta").load(path)` becomes this connector's stream the same way
 * (columns of delta-spark's streaming source), in place of [[RouteDeltaStreams]]'s swap after
 * delta-spark's source loaded its snapshot.
 *
 * Left to delta-spark (and to [[RouteDeltaReads]] / [[RouteDeltaStreams]] after it): reads with a
 * user-given schema, with more than one path, with options this connector does not implement or
 * `deltareplay.route=false`; time travel (by option or path suffix such as `@v3`: delta-spark also
 * checks the newest version, and refuses some reads this connector would answer); the reads of
 * delta-spark's `DeltaTable` API (it writes into them); tables with row tracking (their `_metadata`
 * has fields this connector does not fill); and any read this connector cannot load (not a table, a
 * protocol it does not read, ...), so that the user sees delta-spark's answer.
 * `spark.deltareplay.routeAtLoad=false` turns this off.
 */
private[deltareplay] case class ResolveDeltaLoads(spark: SparkSession)
    extends Rule[LogicalPlan]
    with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!RoutingSwitches.routeAtLoad(spark)) plan
    else
      // a stream's source sits under a NamedStreamingRelation; Spark's NameStreamingSources gives
      // the resolved source its name (StreamingRelationV2 takes one)
      plan.resolveOperatorsUp {
        case u: UnresolvedDataSource if candidate(u) =>
          resolve(u).getOrElse {
            u.setTagValue(ResolveDeltaLoads.Declined, ())
            u
          }
      }

  private def candidate(u: UnresolvedDataSource): Boolean =
    DeltaAdapter.isDeltaSource(u.format) && u.userSpecifiedSchema.isEmpty &&
      u.getTagValue(ResolveDeltaLoads.Declined).isEmpty && {
        val options = u.options.originalMap
        if (u.isStreaming) RouteDeltaStreams.routable(options)
        else RouteDeltaReads.routable(options)
      }

  private def resolve(u: UnresolvedDataSource): Option[LogicalPlan] = {
    val path = (u.paths, u.options.get("path")) match {
      case (Seq(p), None) => Some(p)
      case (Seq(), Some(p)) => Some(p)
      case _ => None
    }
    val declined = path.isEmpty || ResolveDeltaLoads.hasTimeTravelSuffix(path.get) ||
      DeltaReplaySource.timeTravel(u.options.originalMap).nonEmpty ||
      ResolveDeltaLoads.byDeltaSpark
    if (declined) None
    else
      try {
        val requested = u.options.originalMap
        if (u.isStreaming) Some(stream(requested + ("path" -> path.get)))
        else batch(RouteDeltaReads.connectorOptions(requested) + ("path" -> path.get))
      } catch {
        case NonFatal(e) =>
          logInfo(s"Reading ${path.get} with delta-spark: ${e.getMessage}")
          None
      }
  }

  private def batch(options: Map[String, String]): Option[LogicalPlan] = {
    val table = DeltaReplaySource.read(spark, options)
    if (table.snapshot.meta.writerFeatures.contains("rowTracking")) None
    else {
      // the relation's options without the path, as a routed SQL read's: the same read of a table
      // is the same plan (a cached one is found by delta-spark's commands)
      val settings = DeltaReplayTable.settings(options)
      Some(
        DataSourceV2Relation.create(
          table,
          None,
          None,
          new CaseInsensitiveStringMap(settings.asJava)
        )
      )
    }
  }

  /** This connector's stream over the table, with the columns of delta-spark's source. */
  private def stream(options: Map[String, String]): LogicalPlan = {
    val conf = ReadConf(spark, options)
    val snapshot = RouteDeltaStreams.snapshot(spark, options("path"), conf)
    val output = toAttributes(DeltaAdapter.streamSchema(spark, snapshot.meta))
    RouteDeltaStreams.relation(
      spark,
      snapshot,
      options,
      conf,
      output,
      None,
      SparkShim.UnnamedSource
    )
  }
}

private[deltareplay] object ResolveDeltaLoads {

  /** Marks a load this connector declined, so the analyzer's next pass does not try again. */
  val Declined: TreeNodeTag[Unit] = TreeNodeTag("deltareplay.declined")

  /** delta-spark's time travel in a path: `.../table@v12` or `.../table@20240101000000000`. */
  private val TimeTravelSuffix = ".*@(v[0-9]+|[0-9]{17})$".r

  def hasTimeTravelSuffix(path: String): Boolean =
    TimeTravelSuffix.matches(path.stripSuffix("/"))

  /**
   * Whether the load is made by delta-spark itself: its `io.delta.tables` API (`DeltaTable.forPath`
   * reads with `format("delta").load` and writes its merge, update and delete into that read's
   * plan, so the read must stay delta-spark's), or its internals, which expect their own relation.
   */
  def byDeltaSpark: Boolean =
    StackWalker
      .getInstance()
      .walk(frames =>
        frames.anyMatch { f =>
          val c = f.getClassName
          c.startsWith("io.delta.tables.") || c.startsWith("org.apache.spark.sql.delta.")
        }
      )
}
