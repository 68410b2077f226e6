package io.deltareplay.internal

import java.util.Locale

import scala.jdk.CollectionConverters._

import scala.util.control.NonFatal

import io.deltareplay.{DeltaReplayOptions, DeltaReplaySource}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{
  AnalysisHelper,
  Command,
  DeleteFromTable,
  LogicalPlan,
  MergeIntoTable,
  SubqueryAlias,
  UnresolvedDataSource,
  UpdateTable
}
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation
import org.apache.spark.sql.catalyst.streaming.Unassigned
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
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
    if (!ReadConf.routeAtLoad(spark)) plan
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
    val snapshot = DeltaReplaySource.load(spark, options)
    if (snapshot.meta.writerFeatures.contains("rowTracking")) None
    else {
      val table = DeltaReplaySource.table(spark, snapshot, options)
      Some(
        DataSourceV2Relation.create(table, None, None, new CaseInsensitiveStringMap(options.asJava))
      )
    }
  }

  /** This connector's stream over the table, with the columns of delta-spark's source. */
  private def stream(options: Map[String, String]): LogicalPlan = {
    val snapshot = RouteDeltaStreams.snapshot(spark, options("path"))
    val output = toAttributes(DeltaAdapter.streamSchema(spark, snapshot.meta))
    RouteDeltaStreams.relation(spark, snapshot, options, output, None, Unassigned)
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

private[deltareplay] case class RouteDeltaReads(spark: SparkSession)
    extends Rule[LogicalPlan]
    with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (plan.exists(_.isInstanceOf[Command])) return plan
    val newest = new Newest
    val routed = if (ReadConf.routingEnabled(spark)) route(plan, None, newest) else plan
    resolveNewest(routed, newest)
  }

  /** The newest snapshot of each table, loaded once per query (all its reads see one version). */
  private final class Newest {
    private val loaded = scala.collection.mutable.Map.empty[String, TableSnapshot]
    def apply(table: String): TableSnapshot =
      loaded.getOrElseUpdate(table, TableSnapshot.load(spark, table, None, None))

    /** The same, from a snapshot loaded before (kept when it is still the newest). */
    def from(known: TableSnapshot): TableSnapshot =
      loaded.getOrElseUpdate(known.table, TableSnapshot.newest(spark, known))
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
          val snapshot =
            if (read.isTimeTravel) TableSnapshot.load(spark, table, Some(read.version), None)
            else newest(table)
          checkReadable(snapshot, rel.output)
          val options = RouteDeltaReads.connectorOptions(read.options ++ userOptions)
          DataSourceV2Relation(
            new DeltaReplayTable(
              spark,
              snapshot,
              options,
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
        val snapshot = newest.from(t.snapshot)
        checkReadable(snapshot, output)
        r.copy(table = t.resolvedTo(snapshot))
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

/**
 * Hands the target of a MERGE, UPDATE or DELETE back to delta-spark when it is a temp view over a
 * read this connector resolved (`spark.read.format("delta").load(path).createOrReplaceTempView`):
 * delta-spark writes into temp views over its own reads. Runs with the hint rules, before the view
 * is resolved: the target becomes the view with delta-spark's relation of the same table in place
 * of this connector's (same output attributes), which delta-spark's analysis then turns into its
 * write command; a MERGE's source stays with this connector.
 */
private[deltareplay] case class ReturnWriteTargets(spark: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperators {
    case m: MergeIntoTable =>
      returned(m.targetTable).fold[LogicalPlan](m)(t => m.copy(targetTable = t))
    case u: UpdateTable => returned(u.table).fold[LogicalPlan](u)(t => u.copy(table = t))
    case d: DeleteFromTable => returned(d.table).fold[LogicalPlan](d)(t => d.copy(table = t))
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
          case DataSourceV2Relation(_: DeltaReplayTable, _, _, _, _, _) => true
          case _ => false
        })
        .map(v => SubqueryAlias(u.multipartIdentifier.last, toDeltaSpark(v)))
    case _ => None
  }

  private def toDeltaSpark(plan: LogicalPlan): LogicalPlan =
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.transformUp { case r @ DataSourceV2Relation(t: DeltaReplayTable, _, _, _, _, _) =>
        val read = spark.read
          .format("delta")
          .options(DeltaReplaySource.timeTravel(t.options))
          .option(DeltaReplayOptions.RouteOption, "false")
          .load(t.snapshot.table)
        // the bare relation: Spark adds its read-side projections (char padding) above both
        read.queryExecution.analyzed.collectFirst { case rel: LogicalRelation => rel } match {
          case Some(rel) if rel.output.map(_.name) == r.output.map(_.name) =>
            rel.copy(output = r.output)
          case _ => r
        }
      }
    }
}
