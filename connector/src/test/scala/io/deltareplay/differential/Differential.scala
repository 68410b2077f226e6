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
    v1Pushdown: Seq[String] = Nil
) {
  def +(o: RunStats): RunStats = RunStats(
    tables + o.tables,
    queries + o.queries,
    modeRuns + o.modeRuns,
    v1Failures + o.v1Failures,
    streams + o.streams,
    differences ++ o.differences,
    v1Pushdown ++ o.v1Pushdown
  )
  def summary: String =
    s"$tables tables, $queries queries, $modeRuns answers compared, $streams streams, " +
      s"$v1Failures queries V1 could not answer (skipped), ${v1Pushdown.size} answers where V1's " +
      s"Parquet pushdown departs from Spark's semantics and ours does not, " +
      s"${differences.size} differences"
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
   * checkpoint adds they may match ([[io.deltareplay.internal.CheckpointFilter]]); `window`: the
   * distributed replay by the keyed window (over the commits after the checkpoint when there is
   * one, the checkpoint kept map-side), not the driver-reconciled fast path.
   */
  val forcedModes: Seq[String] = Seq("local", "distributed", "executors", "filtered", "window")

  def run(dir: File, seed: Long, queries: Int, allModes: Boolean, streams: Boolean): RunStats = {
    spark.udf.register("dr_same", (s: String) => s)
    val table = Tables.generate(seed)
    val path = new File(dir, s"t$seed").getAbsolutePath
    val versions =
      try timed("write the table")(table.build(spark, path))
      catch {
        case NonFatal(e) =>
          // delta-spark refused the generated history (not a reader question): skip the table
          System.err.println(
            s"differential: seed $seed table not written: ${e.getMessage.take(200)}"
          )
          return RunStats.empty
      }
    val r = new Random(seed * 31 + 7)
    val gen = new Queries(table, versions, r)
    var stats = RunStats(1, 0, 0, 0, 0, Nil)
    (0 until queries).foreach { i =>
      val q = gen.next()
      val modes =
        if (allModes) "auto" +: forcedModes else Seq("auto", forcedModes(i % forcedModes.size))
      stats = stats + check(seed, table, path, q, modes)
    }
    if (streams) stats = stats + timed("streams")(stream(seed, table, path, r))
    stats + timed("reused DataFrame")(reused(seed, table, path, gen))
  }

  /**
   * A DataFrame defined before a commit and executed after it reads the newest version, as V1's
   * does (and one with `versionAsOf` keeps its version).
   */
  private def reused(seed: Long, table: TableRecipe, path: String, gen: Queries): RunStats = {
    val q = Query.Select(Seq("*"), Some(gen.pred()), None)
    val modes = Seq("auto", "local")
    val ourFrames = modes.map(m => m -> withMode(m)(frame(q, path, oracleSide = false, m)))
    val oracleFrame = frame(q, path, oracleSide = true)
    val columns = ("id + 1000000 AS id" +: table.columns.map(_.name)).mkString(", ")
    val commit = s"INSERT INTO delta.`$path` SELECT $columns FROM delta.`$path` WHERE id % 3 = 0"
    spark.sql(commit).collect()
    val expected = asOracle(answer(oracleFrame))
    val diffs = ourFrames.flatMap { case (mode, df) =>
      val actual =
        try withMode(mode)(answer(df))
        catch { case NonFatal(e) => Seq(Seq(s"failed: ${causeMessages(e).take(400)}")) }
      if (actual == expected) None
      else
        Some(
          Difference(
            seed,
            mode,
            table.describe(path) + s"\n-- DataFrame defined here, then: $commit",
            s"reused DataFrame: ${q.describe}",
            q.describe,
            s"V1 ${expected.size} rows, ours ${actual.size}"
          )
        )
    }
    RunStats(0, 1, modes.size, 0, 0, diffs)
  }

  /** V1's answer to `q`, planned and run as the oracle ([[DeltaOracle.asOracle]]). */
  private def oracleAnswer(q: Query, path: String): Seq[Seq[Any]] =
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
      case Query.Select(columns, pred, version) =>
        val opts = version.fold(Map.empty[String, String])(v => Map("versionAsOf" -> v.toString))
        val base = read(opts)
        val filtered = pred.fold(base)(p => base.where(expr(p.sql)))
        filtered.select(columns.map(c => if (c == "*") expr("*") else expr(c)): _*)
      case Query.Aggregate(functions, pred) =>
        val base = read(Map.empty)
        pred.fold(base)(p => base.where(expr(p.sql))).select(functions.map(expr): _*)
    }
  }

  /**
   * Rows as typed values in a canonical order: binary as byte sequences, floating point values by
   * their bits (so NaN equals NaN and -0.0 differs from 0.0, as the same Parquet bytes read twice
   * must).
   */
  private def answer(df: DataFrame): Seq[Seq[Any]] = {
    def norm(v: Any): Any = v match {
      case b: Array[Byte] => b.toSeq
      case r: Row => r.toSeq.map(norm)
      case d: Double => ("double", java.lang.Double.doubleToLongBits(d), d.toString)
      case f: Float => ("float", java.lang.Float.floatToIntBits(f), f.toString)
      case other => other
    }
    df.collect().toSeq.map(_.toSeq.map(norm)).sortBy(_.map(Values.show).mkString("|"))
  }

  private def check(seed: Long, table: TableRecipe, path: String, q: Query, modes: Seq[String]) = {
    val expected =
      try Right(oracleAnswer(q, path))
      catch { case NonFatal(e) => Left(e) }
    expected match {
      case Left(_) => RunStats(0, 1, 0, 1, 0, Nil)
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
            case Some(detail) if semantic != rows && differs(q, path, mode, semantic).isEmpty =>
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

  /** Why our answer in `mode` differs from `expected`, if it does. */
  private def differs(
      q: Query,
      path: String,
      mode: String,
      expected: Seq[Seq[Any]]
  ): Option[String] =
    withMode(mode) {
      try {
        val actual = timed(mode)(answer(frame(q, path, oracleSide = false, mode)))
        if (actual == expected) None
        else {
          val missing =
            expected.diff(actual).take(3).map(_.map(Values.show).mkString("(", ", ", ")"))
          val extra = actual.diff(expected).take(3).map(_.map(Values.show).mkString("(", ", ", ")"))
          Some(
            s"V1 ${expected.size} rows, ours ${actual.size}; missing ${missing.mkString(" ")}; " +
              s"extra ${extra.mkString(" ")}"
          )
        }
      } catch {
        case NonFatal(e) => Some(s"ours failed where V1 answered: ${causeMessages(e).take(600)}")
      }
    }

  private def withMode[T](mode: String)(body: => T): T = mode match {
    // the user's plain read, with Spark's default code generation (the other modes: the tests'
    // interpreted default, SparkSessions.interpreted)
    case "auto" => withGeneratedCode(withConf("spark.deltareplay.replay.mode" -> "auto")(body))
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

  /** The whole history as a stream (changes skipped), batch by batch, against DeltaSource. */
  private def stream(seed: Long, table: TableRecipe, path: String, r: Random): RunStats = {
    val opts =
      Map("maxFilesPerTrigger" -> (1 + r.nextInt(3)).toString, "skipChangeCommits" -> "true")
    def batches(delta: Boolean, mode: String): Seq[Seq[String]] = withMode(mode) {
      val name = s"dr_stream_${System.nanoTime()}"
      val reader = spark.readStream.format("delta").options(opts)
      val source = (if (delta) reader.option("deltareplay.route", "false") else reader).load(path)
      val q = source
        .selectExpr("id")
        .writeStream
        .format("memory")
        .queryName(name)
        .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow())
        .start()
      try {
        q.awaitTermination()
        val ids = spark.table(name).collect().map(_.getLong(0).toString).toSeq
        val sizes = q.recentProgress.map(_.numInputRows).filter(_ > 0).toSeq
        // rows per batch as the progress reports count them (V1 counts before DV filtering)
        Seq(sizes.map(_.toString), ids.sorted)
      } finally {
        q.stop()
        spark.sql(s"DROP VIEW IF EXISTS $name")
      }
    }
    val mode = if (r.nextBoolean()) "local" else "distributed"
    val expected =
      try Some(batches(delta = true, mode))
      catch { case NonFatal(_) => None }
    expected match {
      case None => RunStats(0, 0, 0, 1, 1, Nil)
      case Some(e) =>
        val actual =
          try batches(delta = false, mode)
          catch {
            case NonFatal(ex) => Seq(Seq(s"failed: ${causeMessages(ex).take(400)}"))
          }
        // Batch sizes compare only when no file of the table has a deletion vector (DeltaSource
        // reports rows before deletion vectors are applied); the rows always compare.
        val dvs = table.properties.get("delta.enableDeletionVectors").contains("true")
        val same = actual.last == e.last && (dvs || actual.head == e.head)
        val diff =
          if (same) Nil
          else
            Seq(
              Difference(
                seed,
                s"stream $mode",
                table.describe(path),
                s"readStream $opts",
                "the whole stream",
                s"DeltaSource batches ${e.head.mkString(",")} rows ${e.last.size}; ours " +
                  s"${actual.head.mkString(",")} rows ${actual.last.size}"
              )
            )
        RunStats(0, 0, 1, 0, 1, diff)
    }
  }
}
