package io.deltareplay.internal.routing

import java.util.Locale

import scala.jdk.CollectionConverters._

import scala.util.control.NonFatal

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.planning.ReadConf
import io.deltareplay.internal.read.FileMetadata
import io.deltareplay.internal.scan.DeltaReplayTable
import io.deltareplay.DeltaReplayOptions
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{Command, LogicalPlan}
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
private[deltareplay] object RouteDeltaReads extends Logging {

  /** The user's read options, tagged on delta-spark's DSv2 relation before it is converted. */
  val ReadOptionsTag: TreeNodeTag[Map[String, String]] = TreeNodeTag("deltareplay.readOptions")

  /** The read options this connector takes (routing and path options dropped). */
  def connectorOptions(options: Map[String, String]): Map[String, String] =
    options.filter { case (k, _) =>
      val key = k.toLowerCase(Locale.ROOT)
      DeltaReplayOptions.KnownReadOptions.contains(key) && key != "path" && key != "paths" &&
      key != DeltaReplayOptions.RouteOption.toLowerCase(Locale.ROOT)
    }

  /**
   * Whether a read with `options` may be routed: no opt-out, no option outside `known` (lower case;
   * batch reads by default, [[RouteDeltaStreams.routable]] for streams).
   */
  def routable(
      options: Map[String, String],
      known: Set[String] = DeltaReplayOptions.KnownReadOptions
  ): Boolean = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val optedOut = lower
      .get(DeltaReplayOptions.RouteOption.toLowerCase(Locale.ROOT))
      .exists(_.trim.equalsIgnoreCase("false"))
    val unknown = options.keys.filterNot(k => known.contains(k.toLowerCase(Locale.ROOT)))
    unknown.filter(DeltaReplayOptions.looksOwn).foreach(warnOnce)
    !optedOut && unknown.isEmpty
  }

  private val warned = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /**
   * Says once per option name that a read's option looks like one of this connector's settings but
   * is none (delta-spark, which reads it then, ignores options it does not know).
   */
  private def warnOnce(key: String): Unit =
    if (warned.add(key.toLowerCase(Locale.ROOT))) {
      val hint = DeltaReplayOptions.closest(key).fold("")(c => s" (did you mean '$c'?)")
      logWarning(
        s"Read option '$key' is not a delta-replay setting$hint: the read is left to " +
          "delta-spark, which ignores it. docs/configuration.md lists the settings."
      )
    }
}

private[deltareplay] case class RouteDeltaReads(spark: SparkSession)
    extends Rule[LogicalPlan]
    with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (plan.exists(_.isInstanceOf[Command])) return plan
    val newest = new Newest
    val routed = if (ReadConf.routingEnabled(spark)) route(plan, None, newest) else plan
    resolveNewest(routed, newest)
  }

  /**
   * The newest snapshot of each table, loaded once per query (all its reads see one version), by
   * the first read of it with that read's settings.
   */
  private final class Newest {
    private val loaded = scala.collection.mutable.Map.empty[String, TableSnapshot]
    def apply(table: String, conf: ReadConf): TableSnapshot =
      loaded.getOrElseUpdate(table, TableSnapshot.load(spark, table, None, None, conf))

    /** The same, from a snapshot loaded before (kept when it is still the newest). */
    def from(known: TableSnapshot, conf: ReadConf): TableSnapshot =
      loaded.getOrElseUpdate(known.table, TableSnapshot.newest(spark, known, conf))
  }

  /** Rewrites relations top-down; `options` are the user's read options tagged on an ancestor. */
  private def route(
      plan: LogicalPlan,
      inherited: Option[Map[String, String]],
      newest: Newest
  ): LogicalPlan = {
    val options = plan.getTagValue(RouteDeltaReads.ReadOptionsTag).orElse(inherited)
    plan match {
      case rel: LogicalRelation => replace(rel, options.getOrElse(Map.empty), newest)
      case other =>
        val children = other.children.map(c => route(c, options, newest))
        if (children.zip(other.children).forall { case (a, b) => a eq b }) other
        else other.withNewChildren(children)
    }
  }

  private def replace(
      rel: LogicalRelation,
      userOptions: Map[String, String],
      newest: Newest
  ): LogicalPlan =
    DeltaAdapter.deltaRead(rel) match {
      case Some(read)
          if RouteDeltaReads.routable(read.options ++ userOptions) && metadataServable(rel) =>
        try {
          val table = read.tablePath.toString
          val options = RouteDeltaReads.connectorOptions(read.options ++ userOptions)
          // the read's settings, resolved once for this query
          val conf = ReadConf(spark, options)
          val snapshot =
            if (read.isTimeTravel) TableSnapshot.load(spark, table, Some(read.version), None, conf)
            else newest(table, conf)
          checkReadable(snapshot, rel.output)
          DataSourceV2Relation(
            new DeltaReplayTable(
              spark,
              snapshot,
              options,
              conf,
              timeTravel = read.isTimeTravel,
              resolved = true
            ),
            rel.output,
            None,
            None,
            new CaseInsensitiveStringMap(options.asJava)
          )
        } catch {
          case e: io.deltareplay.DeltaReplayException.UnsupportedTable =>
            logWarning(s"Reading ${read.tablePath} with delta-spark: ${e.getMessage}")
            rel
          case NonFatal(e) => throw e
        }
      case _ => rel
    }

  /** Reads of this connector that do not travel in time, resolved to the newest version. */
  private def resolveNewest(plan: LogicalPlan, newest: Newest): LogicalPlan =
    plan.transformDown {
      case r @ DataSourceV2Relation(t: DeltaReplayTable, output, _, _, _, _) if t.needsResolving =>
        // the read's settings, resolved once for this query (session keys as they are now)
        val conf = ReadConf(spark, t.options)
        val snapshot = newest.from(t.snapshot, conf)
        checkReadable(snapshot, output)
        r.copy(table = t.resolvedTo(snapshot, conf))
    }

  /**
   * Fails when the columns a query was analysed with cannot be read from `snapshot` (a column
   * dropped, renamed or retyped since): the DataFrame must be created again, as delta-spark says.
   */
  private def checkReadable(snapshot: TableSnapshot, output: Seq[Attribute]): Unit = {
    val fields = snapshot.schema.fields.map(f => f.name.toLowerCase(Locale.ROOT) -> f).toMap
    val broken = output.filterNot(isMetadataColumn).filter { a =>
      fields.get(a.name.toLowerCase(Locale.ROOT)).forall(f => f.dataType != a.dataType)
    }
    if (broken.nonEmpty) {
      throw Errors.schemaChangedSinceAnalysis(
        snapshot.table,
        snapshot.version,
        broken.map(a => s"${a.name} ${a.dataType.simpleString}")
      )
    }
  }

  private def isMetadataColumn(a: Attribute): Boolean = a.name == FileMetadata.Column

  /** Whether this connector can fill every `_metadata` field the read asks for. */
  private def metadataServable(rel: LogicalRelation): Boolean =
    rel.output.filter(isMetadataColumn).forall { a =>
      val ok = FileMetadata.servable(a.dataType)
      if (!ok) {
        logInfo(
          s"Reading ${rel.relation} with delta-spark: it asks for _metadata fields " +
            s"${a.dataType.simpleString}, of which this connector serves ${FileMetadata.Supported}"
        )
      }
      ok
    }
}
