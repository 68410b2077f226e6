package io.deltareplay.differential

import java.io.File

import scala.util.Random
import scala.util.control.NonFatal

import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.expr

/** One answer that differs from delta-spark V1's, with what it takes to reproduce it. */
final case class Difference(
    seed: Long,
    mode: String,
    recipe: String,
    query: String,
    minimal: String,
    detail: String
) {
  def report: String =
    s"""DIFFERENCE (seed $seed, mode $mode)
       |$recipe
       |-- query: $query
       |-- minimal: $minimal
       |-- $detail""".stripMargin
}

/** What a run did. */
final case class RunStats(
    tables: Int,
    queries: Int,
    modeRuns: Int,
    v1Failures: Int,
    streams: Int,
    differences: Seq[Difference],
    v1Pushdown: Seq[String] = Nil,
    features: Set[String] = Set.empty,
    oursOnly: Seq[String] = Nil,
    changes: Int = 0
) {
  def +(o: RunStats): RunStats = RunStats(
    tables + o.tables,
    queries + o.queries,
    modeRuns + o.modeRuns,
    v1Failures + o.v1Failures,
    streams + o.streams,
    differences ++ o.differences,
    v1Pushdown ++ o.v1Pushdown,
    features ++ o.features,
    oursOnly ++ o.oursOnly,
    changes + o.changes
  )
  def summary: String =
    s"$tables tables, $changes steps read after, $queries queries, $modeRuns answers compared, " +
      s"$streams streams, $v1Failures queries V1 could not answer (${oursOnly.size} of them " +
      s"answered by ours), ${v1Pushdown.size} answers where V1's Parquet pushdown departs from " +
      s"Spark's semantics and ours does not, ${features.size} of ${Feature.all.size} generator " +
      s"features, ${differences.size} differences"

  /** The block docs/correctness.md takes as it is. */
  def block(first: Long, last: Long, seconds: Double, commit: String): String = {
    val missing = Feature.all.filterNot(features.contains)
    (Seq(
      "```",
      s"differential run: seeds $first-$last, ${seconds.round} s, code of $commit",
      s"tables            $tables",
      s"steps read after  $changes",
      s"queries           $queries",
      s"answers compared  $modeRuns",
      s"streams           $streams",
      s"V1 failed         $v1Failures (ours answered ${oursOnly.size})",
      s"V1 pushdown       ${v1Pushdown.size}",
      s"features          ${features.size} of ${Feature.all.size}" +
        (if (missing.isEmpty) "" else s" (not met: ${missing.mkString(", ")})"),
      s"differences       ${differences.size}"
    ) ++ oursOnly.distinct.take(20).map("ours only: " + _) :+ "```").mkString("\n")
  }
}
object RunStats {
  val empty: RunStats = RunStats(0, 0, 0, 0, 0, Nil)
}

/**
 * The differential test: generated tables and queries, each answered by delta-spark V1 (the oracle)
 * and by this connector, compared as typed values. A short run answers each query in the `auto`
 * mode (state cache on) and in one of the forced modes in turn; `allModes` answers it in every
 * mode. A difference is reported with its seed, the table's recipe and the query shrunk to a
 * smaller one that still differs.
 */
trait Differential { oracle: DeltaOracle =>

  /** Seconds spent per part of the run (table writes, the oracle, each mode), for the summary. */
  val timeSpent: scala.collection.mutable.Map[String, Double] =
    scala.collection.mutable.Map.empty.withDefaultValue(0.0)

  def timed[T](part: String)(body: => T): T = {
    val t0 = System.nanoTime()
    try body
    finally timeSpent(part) += (System.nanoTime() - t0) / 1e9
  }

  /**
   * Modes besides `auto`: the forced replay modes; `filtered`: every read replayed as a Spark job
   * with no index kept, so a read with filters on a table with a checkpoint reads only the
   * checkpoint adds they may match ([[io.deltareplay.internal.replay.CheckpointFilter]]); `window`:
   * the distributed replay by the keyed window (over the commits after the checkpoint when there is
   * one, the checkpoint kept map-side), not the driver-reconciled fast path.
   */
  val forcedModes: Seq[String] = Seq("local", "distributed", "executors", "filtered", "window")

  /**
   * One generated table (`shape` forces its settings, else they are drawn from the seed): written
   * step by step in its session time zone, with `perStep` queries answered after each step (so the
   * session's caches roll forward across every change) and `atEnd` more on the last version, then a
   * stream and a DataFrame reused across a commit.
   */
  def run(
      dir: File,
      seed: Long,
      shape: Option[Tables.Shape],
      perStep: Int,
      atEnd: Int,
      allModes: Boolean,
      streams: Boolean
  ): RunStats = {
    spark.udf.register("dr_same", (s: String) => s)
    val table = Tables.generate(seed, shape)
    val path = new File(dir, s"t$seed").getAbsolutePath
    val r = Tables.random(seed * 31 + 7)
    withConf("spark.sql.session.timeZone" -> table.timeZone) {
      var stats = RunStats(1, 0, 0, 0, 0, Nil)
      val written = scala.collection.mutable.Map.empty[(Int, String), Vector[Any]]
      def values(c: Column): IndexedSeq[Any] = written.getOrElse((c.uid, c.kind.ddl), Vector.empty)
      val travels = Vector.newBuilder[Travel]
      var asked = 0
      def ask(columns: Seq[Column], past: Seq[Travel], n: Int): Unit = {
        val gen = new Queries(columns, values, past, r)
        (0 until n).foreach { _ =>
          val q = gen.next()
          val modes =
            if (allModes) "auto" +: forcedModes
            else Seq("auto", forcedModes(asked % forcedModes.size))
          asked += 1
          stats = stats + check(seed, table, path, q, modes).copy(features = q.features)
        }
      }
      val steps =
        try
          timed("write and read the table") {
            table.build(spark, path) { step =>
              step.op.foreach {
                case Op.Append(cols, rows, _) => remember(written, cols, rows)
                case Op.Merge(cols, rows, _) => remember(written, cols, rows)
                case _ =>
              }
              val past = travels.result()
              // the generator's columns after the step are the table's (else its queries would
              // name columns the table does not have, and both readers fail alike)
              val names = v1(path, Map("versionAsOf" -> step.version.toString)).schema.fieldNames
              assert(
                names.toSeq.sorted == ("id" +: step.columns.map(_.name)).sorted,
                s"seed $seed v${step.version}: the generator's columns " +
                  s"${step.columns.map(_.name).mkString(", ")} are not the table's " +
                  names.mkString(", ")
              )
              if (step.op.isDefined) {
                stats =
                  stats + RunStats(0, 0, 0, 0, 0, Nil, features = step.op.get.features, changes = 1)
                ask(step.columns, past, perStep)
              }
              travels += Travel(step.version, commitTime(path, step.version), step.columns)
            }
          }
        catch {
          case NonFatal(e) if !e.isInstanceOf[org.scalatest.exceptions.TestFailedException] =>
            // delta-spark refused to create the table (not a reader question): skip it
            System.err.println(
              s"differential: seed $seed table not written: ${e.getMessage.take(200)}"
            )
            return RunStats.empty
        }
      val written_ = table.copy(ops = table.ops.take(steps.size - 1))
      stats = stats.copy(features = stats.features ++ written_.features)
      val last = steps.last
      val past = travels.result().dropRight(1)
      ask(last.columns, past, atEnd)
      // one read of an older version by version and one by timestamp, whatever was drawn
      if (past.nonEmpty) {
        val t = past(r.nextInt(past.size))
        val pred = new Queries(t.columns, values, Nil, r).pred()
        Seq(Query.AtVersion(t.version), Query.AtTimestamp(t.timestamp)).foreach { at =>
          val q = Query.Select(Seq("*"), Some(pred), at)
          stats = stats + check(seed, table, path, q, Seq("auto", forcedModes(asked % 5)))
            .copy(features = q.features)
          asked += 1
        }
      }
      if (streams) stats = stats + timed("streams")(stream(dir, seed, written_, path, steps, r))
      val gen = new Queries(last.columns, values, Nil, r)
      stats + timed("reused DataFrame")(reused(seed, written_, path, last.columns, gen))
    }
  }

  private def remember(
      written: scala.collection.mutable.Map[(Int, String), Vector[Any]],
      cols: Seq[Column],
      rows: Seq[Row]
  ): Unit =
    cols.filter(_.generatedAs.isEmpty).zipWithIndex.foreach { case (c, i) =>
      val key = (c.uid, c.kind.ddl)
      written(key) =
        written.getOrElse(key, Vector.empty) ++ rows.map(_.get(i + 1)).filter(_ != null)
    }

  /** The commit time of `version` as a `timestampAsOf` value in the session time zone. */
  private def commitTime(path: String, version: Long): String = {
    val file = new File(path, f"_delta_log/$version%020d.json")
    val zone = java.time.ZoneId.of(spark.conf.get("spark.sql.session.timeZone"))
    java.time.Instant
      .ofEpochMilli(file.lastModified())
      .atZone(zone)
      .toLocalDateTime
      .format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS"))
  }

  /**
   * A DataFrame defined before a commit and executed after it reads the newest version, as V1's
   * does.
   */
  private def reused(
      seed: Long,
      table: TableRecipe,
      path: String,
      columns: Seq[Column],
      gen: Queries
  ): RunStats = {
    val q = Query.Select(Seq("*"), Some(gen.pred()))
    val modes = Seq("auto", "local")
    val oracleFrame =
      try frame(q, path, oracleSide = true)
      catch {
        case NonFatal(e) =>
          // V1 cannot plan the query: nothing to compare (as in `check`), and never a test error
          System.err.println(s"differential: seed $seed: reused ${q.describe}: V1 failed: $e")
          return RunStats(0, 1, 0, 1, 0, Nil, features = Set(Feature.Reused))
      }
    val ourFrames =
      modes.map(m => m -> scala.util.Try(withMode(m)(frame(q, path, oracleSide = false, m))))
    val copied = columns.filter(_.generatedAs.isEmpty).map(_.q)
    val commit = s"INSERT INTO delta.`$path` (${("id" +: copied).mkString(", ")}) SELECT " +
      s"${("id + 1000000" +: copied).mkString(", ")} FROM delta.`$path` WHERE id % 3 = 0"
    spark.sql(commit).collect()
    val expected = asOracle(answer(oracleFrame))
    val diffs = ourFrames.flatMap { case (mode, df) =>
      val actual =
        try withMode(mode)(answer(df.get))
        catch { case NonFatal(e) => (Nil, Seq(Seq(s"failed: ${causeMessages(e).take(400)}"))) }
      if (actual == expected) None
      else
        Some(
          Difference(
            seed,
            mode,
            table.describe(path) + s"\n-- DataFrame defined here, then: $commit",
            s"reused DataFrame: ${q.describe}",
            q.describe,
            s"V1 ${expected._2.size} rows, ours ${actual._2.size}"
          )
        )
    }
    RunStats(0, 1, modes.size, 0, 0, diffs, features = Set(Feature.Reused))
  }

  /** V1's answer to `q`, planned and run as the oracle ([[DeltaOracle.asOracle]]). */
  private def oracleAnswer(q: Query, path: String): Answer =
    timed("V1")(asOracle(answer(frame(q, path, oracleSide = true))))

  /**
   * The query's DataFrame: V1's, or ours; ours in `auto` mode is the user's plain `format("delta")`
   * read, routed by the extension (resolved by this connector at load), in the other modes
   * `format("delta-replay")`.
   */
  private def frame(
      q: Query,
      path: String,
      oracleSide: Boolean,
      mode: String = "auto"
  ): DataFrame = {
    def read(opts: Map[String, String]) =
      if (oracleSide) v1(path, opts)
      else if (mode == "auto") spark.read.format("delta").options(opts).load(path)
      else ours(path, opts)
    q match {
      case Query.Select(columns, pred, at) =>
        val base = read(at.options)
        val filtered = pred.fold(base)(p => base.where(expr(p.sql)))
        filtered.select(columns.map(c => if (c == "*") expr("*") else expr(c)): _*)
      case Query.Aggregate(functions, pred) =>
        val base = read(Map.empty)
        pred.fold(base)(p => base.where(expr(p.sql))).select(functions.map(expr): _*)
    }
  }

  /** An answer: the columns (names and types) and the rows. */
  type Answer = (Seq[(String, String)], Seq[Seq[Any]])

  /**
   * The columns as (name, type) and the rows as typed values in a canonical order: binary as byte
   * sequences, floating point values by their bits (so NaN equals NaN and -0.0 differs from 0.0, as
   * the same Parquet bytes read twice must), the type of each value kept (an INT answer never
   * equals a BIGINT one).
   */
  private def answer(df: DataFrame): Answer = {
    def norm(v: Any): Any = v match {
      case null => null
      case b: Array[Byte] => ("binary", b.toSeq)
      case r: Row => r.toSeq.map(norm)
      case d: Double => ("double", java.lang.Double.doubleToLongBits(d), d.toString)
      case f: Float => ("float", java.lang.Float.floatToIntBits(f), f.toString)
      case m: scala.collection.Map[_, _] => m.toSeq.map { case (k, x) => (norm(k), norm(x)) }.toSet
      case s: scala.collection.Seq[_] => s.map(norm).toSeq
      case other => (other.getClass.getSimpleName, other)
    }
    val rows = df.collect().toSeq.map(_.toSeq.map(norm))
    (columnTypes(df), rows.sortBy(_.map(x => Values.show(x)).mkString("|")))
  }

  private def check(seed: Long, table: TableRecipe, path: String, q: Query, modes: Seq[String]) = {
    val expected =
      try Right(oracleAnswer(q, path))
      catch { case NonFatal(e) => Left(e) }
    expected match {
      case Left(e) =>
        // V1 could not answer: ours may fail too; where ours answers, the case is listed
        val ours =
          try Some(withMode("auto")(answer(frame(q, path, oracleSide = false))))
          catch { case NonFatal(_) => None }
        val listed = ours.map { a =>
          s"seed $seed: ${q.describe} (V1: ${conditionOf(e)}; ours: ${a._2.size} rows)"
        }
        RunStats(0, 1, 0, 1, 0, Nil, oursOnly = listed.toSeq)
      case Right(rows) =>
        // V1 without Parquet filter pushdown: its answer by Spark's semantics alone. Where V1's
        // pushdown drops rows Spark's semantics keep (floating-point zeros, see PushedFilters),
        // ours must give that answer instead; it is counted, not failed.
        lazy val semantic = withConf("spark.sql.parquet.filterPushdown" -> "false") {
          oracleAnswer(q, path)
        }
        val outcomes = modes.map { mode =>
          differs(q, path, mode, rows) match {
            case None => (None, None)
            case Some(_) if semantic != rows && differs(q, path, mode, semantic).isEmpty =>
              (None, Some(s"seed $seed $mode: ${q.describe}"))
            case Some(detail) =>
              val d = Difference(
                seed,
                mode,
                table.describe(path),
                q.describe,
                minimal(q, path, mode),
                detail
              )
              (Some(d), None)
          }
        }
        RunStats(0, 1, modes.size, 0, 0, outcomes.flatMap(_._1), outcomes.flatMap(_._2))
    }
  }

  /** The error condition (or class) of an exception, for the list of V1's failures. */
  private def conditionOf(e: Throwable): String =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst {
        case s: org.apache.spark.SparkThrowable if s.getCondition != null => s.getCondition
      }
      .getOrElse(e.getClass.getSimpleName)

  /**
   * Why our answer in `mode` differs from `expected`, if it does. An answer counts only when this
   * connector gave it: a plan with a delta-spark scan, or with neither this connector's scan nor
   * its aggregates from statistics nor a local relation (Spark's optimizer proved the answer
   * empty), is a difference.
   */
  private def differs(q: Query, path: String, mode: String, expected: Answer): Option[String] =
    withMode(mode) {
      try {
        val df = frame(q, path, oracleSide = false, mode)
        val actual = timed(mode)(answer(df))
        // handed back to delta-spark: a V1 scan, or no scan of ours where the optimizer did not
        // prove the answer empty (a local relation)
        if (v1Scans(df).nonEmpty || (!answeredByUs(df) && !v1FromLog(df))) {
          Some(s"not answered by this connector:\n${df.queryExecution.executedPlan}")
        } else if (actual._1 != expected._1) {
          Some(s"columns differ: V1 ${expected._1}, ours ${actual._1}")
        } else if (actual._2 == expected._2) None
        else {
          def show(rows: Seq[Seq[Any]]) =
            rows.take(3).map(_.map(Values.show).mkString("(", ", ", ")"))
          val missing = show(expected._2.diff(actual._2))
          val extra = show(actual._2.diff(expected._2))
          Some(
            s"V1 ${expected._2.size} rows, ours ${actual._2.size}; missing ${missing.mkString(" ")}; " +
              s"extra ${extra.mkString(" ")}"
          )
        }
      } catch {
        case NonFatal(e) => Some(s"ours failed where V1 answered: ${causeMessages(e).take(600)}")
      }
    }

  private def withMode[T](mode: String)(body: => T): T = mode match {
    // the user's plain read, with Spark's defaults: code generation, adaptive execution (the
    // other modes: the tests' default, SparkSessions.testDefaults)
    case "auto" => withSparkDefaults(withConf("spark.deltareplay.replay.mode" -> "auto")(body))
    case "filtered" =>
      withConf(
        "spark.deltareplay.replay.mode" -> "auto",
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.replay.stateCache.enabled" -> "false",
        "spark.deltareplay.planning.mode" -> "driver"
      )(body)
    case "window" =>
      withReplayMode("distributed")(
        withConf("spark.deltareplay.replay.tailFastPathMaxBytes" -> "0")(body)
      )
    case _ => withReplayMode(mode)(body)
  }

  /** The query with its predicate shrunk while the difference remains. */
  private def minimal(q: Query, path: String, mode: String): String = {
    def stillDiffers(p: Pred): Boolean = {
      val smaller = q match {
        case s: Query.Select => s.copy(pred = Some(p))
        case a: Query.Aggregate => a.copy(pred = Some(p))
      }
      try {
        val expected = oracleAnswer(smaller, path)
        differs(smaller, path, mode, expected).isDefined
      } catch { case NonFatal(_) => false }
    }
    val start = q match {
      case Query.Select(_, p, _) => p
      case Query.Aggregate(_, p) => p
    }
    var current = start
    var progress = true
    while (progress && current.isDefined) {
      progress = false
      current.get.shrink.find(stillDiffers).foreach { smaller =>
        current = Some(smaller)
        progress = true
      }
    }
    current.fold(q.describe)(p => s"WHERE ${p.sql}")
  }

  /**
   * The table as a stream (change commits skipped), batch by batch against DeltaSource: from the
   * initial snapshot, from version 0 or from a version in the middle. Both deliver the same batches
   * (columns and rows of each) or stop with the same Delta error condition (a schema change on the
   * way).
   */
  private def stream(
      dir: File,
      seed: Long,
      table: TableRecipe,
      path: String,
      steps: Seq[Step],
      r: Random
  ): RunStats = {
    val start = r.nextInt(3) match {
      case 0 => Map.empty[String, String]
      case 1 => Map("startingVersion" -> "0")
      case _ => Map("startingVersion" -> steps(r.nextInt(steps.size)).version.toString)
    }
    val opts = start ++
      Map("maxFilesPerTrigger" -> (1 + r.nextInt(3)).toString, "skipChangeCommits" -> "true")
    val mode = if (r.nextBoolean()) "local" else "distributed"
    def outcome(delta: Boolean): String = withMode(mode) {
      val reader = spark.readStream.format("delta").options(opts)
      val source = (if (delta) reader.option("deltareplay.route", "false") else reader).load(path)
      val seen = new java.util.concurrent.ConcurrentLinkedQueue[(Long, String)]()
      val ckpt = new File(dir, s"stream-$seed-$delta-${System.nanoTime()}").getAbsolutePath
      try {
        val q = source.writeStream
          .option("checkpointLocation", ckpt)
          .foreachBatch { (d: DataFrame, id: Long) =>
            val ids = d.select("id").collect().map(_.getLong(0)).sorted
            if (ids.nonEmpty)
              seen.add(id -> s"${columnTypes(d).mkString(",")}: ${ids.mkString(",")}")
            ()
          }
          .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
          .start()
        try q.awaitTermination()
        finally q.stop()
        import scala.jdk.CollectionConverters._
        seen.asScala.toSeq.sortBy(_._1).map(_._2).mkString("batches: ", " | ", "")
      } catch {
        case NonFatal(e) => s"stopped: ${conditionOf(e)}"
      }
    }
    val expected = asOracle(outcome(delta = true))
    val actual = outcome(delta = false)
    val diff =
      if (actual == expected) Nil
      else
        Seq(
          Difference(
            seed,
            s"stream $mode",
            table.describe(path),
            s"readStream $opts",
            "the whole stream",
            s"DeltaSource: ${expected.take(600)}\nours: ${actual.take(600)}"
          )
        )
    RunStats(0, 0, 1, 0, 1, diff, features = Set(Feature.Stream))
  }
}
