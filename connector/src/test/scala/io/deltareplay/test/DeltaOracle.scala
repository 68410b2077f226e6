package io.deltareplay.test

import io.deltareplay.internal.index.{IndexBuilds, IndexCache}
import io.deltareplay.internal.log.{DvDescriptor, TableSnapshot}
import io.deltareplay.internal.scan.{DeltaReplayScan, ScanMetrics, StatsAggregateScan}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.execution.{FileSourceScanExec, LocalTableScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, Metadata, StructType}
import org.scalactic.source.Position
import org.scalatest.Suite

/**
 * Compares this connector with delta-spark V1 (the oracle) on a table written by delta-spark in the
 * test: same rows at the same version, and the plans really hold this connector's scan on one side
 * and V1's on the other.
 */
trait DeltaOracle extends SharedSparkSession { self: Suite =>

  /**
   * Modes every oracle case runs in: replay on the driver or as a Spark job, both planned on the
   * driver, and `executors`: distributed replay with the file list kept on the executors.
   */
  val replayModes: Seq[String] = Seq("local", "distributed", "executors")

  /** The modes whose replay brings a file list to the driver (live-file sets compare there). */
  val driverReplayModes: Seq[String] = Seq("local", "distributed")

  def withReplayMode[T](mode: String)(body: => T): T = mode match {
    case "auto" => withConf("spark.deltareplay.replay.mode" -> "auto")(body)
    case "executors" =>
      withConf(
        "spark.deltareplay.replay.mode" -> "distributed",
        "spark.deltareplay.planning.mode" -> "executors"
      )(body)
    case other =>
      withConf(
        "spark.deltareplay.replay.mode" -> other,
        "spark.deltareplay.planning.mode" -> "driver"
      )(body)
  }

  def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val prior = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally
      prior.foreach {
        case (k, Some(v)) => spark.conf.set(k, v)
        case (k, None) => spark.conf.unset(k)
      }
  }

  /**
   * Runs `body` (the oracle's side of a comparison) with the test sessions' default
   * ([[SparkSessions.testDefaults]]: interpreted expressions, no whole-stage code generation, no
   * adaptive execution), also where the suite or test runs ours with Spark's defaults. Plan and
   * execute inside it: a plan made outside keeps its settings.
   */
  def asOracle[T](body: => T): T = withConf(SparkSessions.testDefaults.toSeq: _*)(body)

  /** Runs `body` with Spark's defaults ([[SparkSessions.sparkDefaults]]). */
  def withSparkDefaults[T](body: => T): T = withConf(SparkSessions.sparkDefaults.toSeq: _*)(body)

  def ours(path: String, options: Map[String, String] = Map.empty): DataFrame =
    spark.read.format("delta-replay").options(options).load(path)

  def v1(path: String, options: Map[String, String] = Map.empty): DataFrame =
    spark.read.format("delta").option("deltareplay.route", "false").options(options).load(path)

  /**
   * The rows of `df` as typed values, in a stable order: floating point compared by its bits (NaN
   * equals NaN, -0.0 differs from 0.0), binary by its bytes, structs, arrays and maps element by
   * element; everything else by its own equality (decimals with their scale, timestamps to the
   * microsecond).
   */
  def sorted(df: DataFrame): Seq[Seq[Any]] =
    df.collect().toSeq.map(r => r.toSeq.map(DeltaOracle.typed)).sortBy(_.mkString("|"))

  def deltaReplayScans(df: DataFrame): Seq[DeltaReplayScan] =
    collectScans(df.queryExecution.executedPlan) {
      case b: BatchScanExec if b.scan.isInstanceOf[DeltaReplayScan] =>
        b.scan.asInstanceOf[DeltaReplayScan]
    }

  /** Whether delta-spark answered `df` from its log state alone (its metadata-only aggregates). */
  def v1FromLog(df: DataFrame): Boolean =
    collectScans(df.queryExecution.executedPlan) { case l: LocalTableScanExec => l }.nonEmpty

  /** Scans of this connector that answered aggregates from the log's statistics. */
  def statsAggregateScans(df: DataFrame): Seq[StatsAggregateScan] =
    collectScans(df.queryExecution.executedPlan) {
      case b: BatchScanExec if b.scan.isInstanceOf[StatsAggregateScan] =>
        b.scan.asInstanceOf[StatsAggregateScan]
    }

  /** Whether this connector answered `df`: a scan of its own, or aggregates from statistics. */
  def answeredByUs(df: DataFrame): Boolean =
    deltaReplayScans(df).nonEmpty || statsAggregateScans(df).nonEmpty

  /**
   * The columns of `df` as (name, type) pairs, nested types compared whole: an INT answer never
   * equals a BIGINT one. Nullability is left out (V1's and ours may differ where both hold the same
   * values).
   */
  def columnTypes(df: DataFrame): Seq[(String, String)] =
    df.schema.fields.toSeq.map(f => f.name -> DeltaOracle.withoutNullability(f.dataType).sql)

  def v1Scans(df: DataFrame): Seq[FileSourceScanExec] =
    collectScans(df.queryExecution.executedPlan) {
      case f: FileSourceScanExec
          if f.relation.location.getClass.getName.startsWith("org.apache.spark.sql.delta") =>
        f
    }

  private def collectScans[T](plan: SparkPlan)(pf: PartialFunction[SparkPlan, T]): Seq[T] = {
    def walk(p: SparkPlan): Seq[T] = p match {
      case a: AdaptiveSparkPlanExec => walk(a.executedPlan)
      case q: QueryStageExec => walk(q.plan)
      case other =>
        pf.lift(other).toSeq ++ other.children.flatMap(walk) ++ other.subqueries.flatMap(walk)
    }
    walk(plan)
  }

  /**
   * Asserts both readers return the same rows for `query` applied to the table (at `version` when
   * given), in every replay mode, with the same column names and types; returns the metrics of each
   * mode's scan (none for a mode that answered aggregates from statistics). With `matching`, V1's
   * answer must hold a row (a recipe that is meant to match one).
   */
  def assertSameAsV1(
      path: String,
      version: Option[Long] = None,
      query: DataFrame => DataFrame = identity,
      modes: Seq[String] = replayModes,
      matching: Boolean = false
  )(implicit pos: Position): Map[String, ScanMetrics] = {
    val opts = version.fold(Map.empty[String, String])(v => Map("versionAsOf" -> v.toString))
    val (expectedTypes, expected) = asOracle {
      val oracleDf = query(v1(path, opts))
      // (delta-spark answers some aggregates from its own log state: a local relation)
      assert(
        v1Scans(oracleDf).nonEmpty || v1FromLog(oracleDf),
        s"the oracle plan has no delta-spark V1 scan:\n${oracleDf.queryExecution.executedPlan}"
      )
      assert(!answeredByUs(oracleDf), "the oracle plan was routed through delta-replay")
      (columnTypes(oracleDf), sorted(oracleDf))
    }
    if (matching) assert(expected.nonEmpty, "the recipe should match a row: V1 returns none")
    modes.flatMap { mode =>
      withReplayMode(mode) {
        val df = query(ours(path, opts))
        val scans = deltaReplayScans(df)
        assert(
          answeredByUs(df),
          s"[$mode] the plan has no DeltaReplayScan:\n${df.queryExecution.executedPlan}"
        )
        assert(v1Scans(df).isEmpty, s"[$mode] the plan still has a V1 scan")
        assert(columnTypes(df) === expectedTypes, s"[$mode] column types differ from V1")
        val actual = sorted(df)
        assert(actual.size === expected.size, s"[$mode] row count differs from V1")
        assert(actual === expected, s"[$mode] rows differ from V1")
        // aggregates answered from statistics have no file scan to look into
        scans.headOption.map { scan =>
          val m = scan.metrics
          // (the replay's mode, not its task count: Spark's status store, which counts the tasks,
          // is filled by the listener bus after the jobs end, and lags on a loaded machine)
          if (mode == "distributed")
            assert(m.replayMode.startsWith("distributed"), s"[$mode] not replayed as a job: $m")
          if (mode == "local") assert(m.replayMode === "local")
          if (mode == "executors") {
            assert(m.planning.startsWith("executors"), s"[$mode] planned on the ${m.planning}")
          } else assert(m.planning === "driver", s"[$mode] planned on the ${m.planning}")
          mode -> m
        }
      }
    }.toMap
  }

  /** The live data files V1 sees at `version`, as absolute URIs. */
  def v1LiveFiles(path: String, version: Long): Set[String] = asOracle {
    val log = DeltaLog.forTable(spark, path)
    val snapshot = log.getSnapshotAt(version)
    val root = log.dataPath.toUri.toString.stripSuffix("/")
    snapshot.allFiles
      .collect()
      .map { f =>
        val p = if (f.path.contains(":")) f.path else s"$root/${f.path}"
        normalize(p) + Option(f.deletionVector).map(d => "#" + d.uniqueId).getOrElse("")
      }
      .toSet
  }

  /** The live data files this connector's replay finds at `version`, in `mode`. */
  def ourLiveFiles(path: String, version: Long, mode: String): Set[String] = withReplayMode(mode) {
    val scan = deltaReplayScans(ours(path, Map("versionAsOf" -> version.toString))).head
    val root = scan.snapshot.tablePath.toUri.toString.stripSuffix("/")
    def name(path: String, dv: Option[DvDescriptor]) = {
      val p = if (path.contains(":")) path else s"$root/$path"
      normalize(p) + dv.map(d => "#" + d.uniqueId).getOrElse("")
    }
    scan.planning.replay.index.files().map { case (path, dv) => name(path, dv) }.toSet
  }

  private def normalize(uri: String): String = new java.net.URI(uri).getPath

  def assertLiveFilesMatch(path: String, version: Long)(implicit pos: Position): Unit = {
    val expected = v1LiveFiles(path, version)
    driverReplayModes.foreach { mode =>
      assert(
        ourLiveFiles(path, version, mode) === expected,
        s"[$mode] live files differ at v$version"
      )
    }
  }

  /** The messages of `e` and all its causes, joined: what a user sees of an error. */
  def causeMessages(e: Throwable): String =
    Iterator
      .iterate[Throwable](e)(_.getCause)
      .takeWhile(_ != null)
      .map(_.getMessage)
      .mkString(" / ")

  /**
   * The read of `q` as the first of its version (no index cached), narrowed as a big log's first
   * filtered read is, with no background build after it: its answer checked against V1's, and its
   * scan metrics.
   */
  def firstFilteredRead(path: String, q: String)(implicit pos: Position): ScanMetrics = {
    IndexCache.clear(spark)
    withConf(
      "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
      "spark.deltareplay.index.buildInBackground" -> "false"
    ) {
      val df = ours(path).where(q)
      assert(sorted(df) === sorted(v1(path).where(q)), q)
      deltaReplayScans(df).head.metrics
    }
  }

  def latestVersion(path: String): Long = DeltaLog.forTable(spark, path).update().version

  /** Waits, at most two minutes, until no background index build of `s`'s version runs. */
  def awaitIndexBuild(s: TableSnapshot): Unit = {
    val deadline = System.nanoTime() + 120L * 1000000000L
    while (
      IndexBuilds.isRunning(spark, s.segment.paths.root, s.meta.tableId, s.version) &&
      System.nanoTime() < deadline
    ) Thread.sleep(20)
  }
}

object DeltaOracle {

  /** A floating-point value compared by its bits, shown as the number. */
  final case class Bits(shown: String, bits: Long) {
    override def toString: String = shown
  }

  /** `t` with every nullability flag set (so that only names and types compare). */
  def withoutNullability(t: DataType): DataType = t match {
    case s: StructType =>
      StructType(
        s.fields.map(f =>
          f.copy(
            dataType = withoutNullability(f.dataType),
            nullable = true,
            metadata = Metadata.empty
          )
        )
      )
    case a: ArrayType => ArrayType(withoutNullability(a.elementType), containsNull = true)
    case m: MapType =>
      MapType(
        withoutNullability(m.keyType),
        withoutNullability(m.valueType),
        valueContainsNull = true
      )
    case other => other
  }

  def typed(v: Any): Any = v match {
    case null => null
    case d: Double => Bits(d.toString, java.lang.Double.doubleToLongBits(d))
    case f: Float => Bits(s"${f}f", java.lang.Float.floatToIntBits(f).toLong)
    case b: Array[Byte] => b.toSeq
    case r: org.apache.spark.sql.Row => r.toSeq.map(typed)
    case m: scala.collection.Map[_, _] => m.map { case (k, x) => typed(k) -> typed(x) }.toMap
    case s: scala.collection.Seq[_] => s.map(typed).toSeq
    case x => x
  }
}
