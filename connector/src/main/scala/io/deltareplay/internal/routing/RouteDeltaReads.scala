package io.deltareplay.internal.routing

import java.util.Locale

import scala.jdk.CollectionConverters._

import scala.util.{Failure, Success, Try}

import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.read.FileMetadata
import io.deltareplay.internal.scan.{DeltaReplayTable, ReadConf}
import io.deltareplay.DeltaReplayOptions
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, Command, LeafNode, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.trees.TreePattern.PLAN_EXPRESSION
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

  /** Whether two qualified table paths name one table. */
  def sameTable(a: String, b: String): Boolean = {
    def uri(p: String) = new org.apache.hadoop.fs.Path(p).toUri.normalize
    uri(a) == uri(b)
  }

  /**
   * A relation of this connector's table, matched by type: Spark's `DataSourceV2Relation` has five
   * fields in 4.0 and six since 4.1, so its extractor differs between the lines.
   */
  private[routing] object ConnectorRelation {
    def unapply(plan: LogicalPlan): Option[(DataSourceV2Relation, DeltaReplayTable)] = plan match {
      case r: DataSourceV2Relation =>
        r.table match {
          case t: DeltaReplayTable => Some((r, t))
          case _ => None
        }
      case _ => None
    }
  }

  /** A read of this connector being resolved anew: [[RouteDeltaReads.resolveNewest]]'s marker. */
  private[routing] final case class Resolving(relation: DataSourceV2Relation) extends LeafNode {
    override def output: Seq[Attribute] = relation.output
  }

  /** The user's read options, tagged on delta-spark's DSv2 relation before it is converted. */
  val ReadOptionsTag: TreeNodeTag[Map[String, String]] = TreeNodeTag("deltareplay.readOptions")

  /**
   * delta-spark's relation of the table `r` reads (same version when it travels in time), with
   * `r`'s output attributes; `r` itself when delta-spark's columns are not the same.
   */
  def deltaSparkRelation(spark: SparkSession, r: DataSourceV2Relation): LogicalPlan = {
    val t = r.table.asInstanceOf[DeltaReplayTable]
    val read = spark.read
      .format("delta")
      .options(io.deltareplay.DeltaReplaySource.timeTravel(t.options))
      .option(DeltaReplayOptions.RouteOption, "false")
      .load(t.snapshot.table)
    // the bare relation: Spark adds its read-side projections (char padding) above both
    read.queryExecution.analyzed.collectFirst { case rel: LogicalRelation => rel } match {
      case Some(rel) if rel.output.map(_.name) == r.output.map(_.name) =>
        rel.copy(output = r.output)
      case _ => r
    }
  }

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

  // per JVM, not per session: a log warning about an option name is said once per application
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

  /**
   * Normalizes `plan`: delta-spark's relations of routable reads become this connector's, and every
   * read of this connector that does not travel in time is resolved to the table's newest version.
   * Spark normalizes a plan for each query and also to find cached plans: delta-spark's MERGE,
   * UPDATE, DELETE and inserts normalize their target after they commit, to re-cache the plans that
   * read it. So this never fails: a read that cannot be routed stays delta-spark's, and a read of
   * this connector that cannot go on (its table unreadable, its schema changed in a way it cannot
   * read) fails when a query asks it for a scan.
   */
  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (plan.exists(_.isInstanceOf[Command])) return plan
    DeltaAdapter.activeTransactionTable match {
      case Some(table) => inTransaction(plan, table)
      case None =>
        val newest = new Newest
        val routed = if (RoutingSwitches.enabled(spark)) route(plan, None, newest) else plan
        resolveNewest(routed, newest)
    }
  }

  /**
   * A plan normalized while a delta-spark command's transaction is open on this thread (the
   * command's own queries: an INSERT's or MERGE's source, an overwrite's data): delta-spark's reads
   * stay delta-spark's, which pin each table's version for the transaction and register reads of
   * its own table with it (they decide its conflicts and whether it is a blind append). A read of
   * this connector of the transaction's table is given back to delta-spark for the same reason;
   * reads of other tables resolve as outside a transaction.
   */
  private def inTransaction(plan: LogicalPlan, table: String): LogicalPlan = {
    val own = plan.transformDownWithSubqueries {
      case RouteDeltaReads.ConnectorRelation(r, t)
          if RouteDeltaReads.sameTable(t.snapshot.table, table) =>
        AnalysisHelper.allowInvokingTransformsInAnalyzer(
          RouteDeltaReads.deltaSparkRelation(spark, r)
        )
    }
    resolveNewest(own, new Newest)
  }

  /**
   * The newest snapshot of each table, loaded once per query (all its reads see one version), by
   * the first read of it with that read's settings; a failed load is remembered as failed.
   */
  private final class Newest {
    private val loaded = scala.collection.mutable.Map.empty[String, Try[TableSnapshot]]
    def apply(table: String, conf: ReadConf): Try[TableSnapshot] =
      loaded.getOrElseUpdate(table, Try(TableSnapshot.load(spark, table, None, None, conf.log)))

    /** The same, from a snapshot loaded before (kept when it is still the newest). */
    def from(known: TableSnapshot, conf: ReadConf): Try[TableSnapshot] =
      loaded.getOrElseUpdate(known.table, Try(TableSnapshot.newest(spark, known, conf.log)))
  }

  /**
   * Rewrites relations top-down, subqueries included; `options` are the user's read options tagged
   * on an ancestor.
   */
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
        val withChildren =
          if (children.zip(other.children).forall { case (a, b) => a eq b }) other
          else other.withNewChildren(children)
        withChildren.transformExpressionsWithPruning(_.containsPattern(PLAN_EXPRESSION)) {
          case s: SubqueryExpression => s.withNewPlan(route(s.plan, None, newest))
        }
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
        val table = read.tablePath.toString
        val options = RouteDeltaReads.connectorOptions(read.options ++ userOptions)
        val routed = Try {
          // the read's settings, resolved once for this query
          val conf = ReadConf(spark, options)
          val snapshot =
            if (read.isTimeTravel)
              TableSnapshot.load(spark, table, Some(read.version), None, conf.log)
            else newest(table, conf).get
          // what delta-spark would refuse to read (a schema changed since), it refuses itself
          if (!read.readableAt(conf.sparkSettings.checkSchemaOnRead, snapshot.meta)) None
          else {
            Some(
              DataSourceV2Relation(
                new DeltaReplayTable(spark, snapshot, options, conf, read.isTimeTravel),
                rel.output,
                None,
                None,
                new CaseInsensitiveStringMap(options.asJava)
              )
            )
          }
        }
        routed match {
          case Success(Some(r)) => r
          case Success(None) => rel
          case Failure(e: io.deltareplay.DeltaReplayException.UnsupportedTable) =>
            logWarning(s"Reading ${read.tablePath} with delta-spark: ${e.getMessage}")
            rel
          case Failure(e) =>
            // delta-spark reads it, and says what is wrong if anything is
            logInfo(s"Reading ${read.tablePath} with delta-spark: ${e.getMessage}")
            rel
        }
      case _ => rel
    }

  /**
   * Reads of this connector that do not travel in time, each resolved to the newest version (again
   * when a normalized plan is normalized anew, as Spark does to re-cache it). Two passes: a
   * resolved table equals the read it came from, and Spark keeps a node a rule returns equal.
   */
  private def resolveNewest(plan: LogicalPlan, newest: Newest): LogicalPlan = {
    val marked = plan.transformDownWithSubqueries {
      case RouteDeltaReads.ConnectorRelation(r, t) if !t.timeTravel =>
        RouteDeltaReads.Resolving(r)
    }
    if (marked eq plan) plan
    else
      marked.transformDownWithSubqueries { case RouteDeltaReads.Resolving(r) =>
        val t = r.table.asInstanceOf[DeltaReplayTable]
        // the read's settings, resolved once for this query (session keys as they are now)
        val resolved = Try(ReadConf(spark, t.options)).flatMap { conf =>
          newest.from(t.snapshot, conf).flatMap(s => Try(t.resolvedTo(s, conf)))
        }
        r.copy(table = resolved.recover { case e => t.failedWith(e) }.get)
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
