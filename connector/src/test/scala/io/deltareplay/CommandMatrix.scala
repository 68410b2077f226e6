package io.deltareplay

import java.io.File

import scala.util.{Failure, Success, Try}

import io.delta.tables.DeltaTable
import io.deltareplay.test.DeltaOracle
import org.apache.commons.io.FileUtils
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/**
 * delta-spark's commands with this extension installed leave what they leave without it. Each case
 * of [[CommandMatrixCases.cases]] runs its commands, one after the other, on a fresh copy of one
 * table written by delta-spark: once with routing off (`spark.deltareplay.enabled=false`, the
 * oracle), then with it on ([[routedRuns]]: tables read through this connector before commands and
 * not). The runs must agree on each command's answer (its rows, or its error condition), then on
 * the tables the case leaves (rows and schema read by delta-spark, and the history: every command's
 * operation, parameters and metrics other than times and sizes) and, with routing on, on the rows
 * this connector reads of them. Issue 60's seven MERGE cases (and two more MERGEs with schema
 * evolution) are cases of their own, each on a fresh table, with the log replayed on the driver and
 * as a Spark job; the other commands share a table per shape, in the order users run them. Mixed
 * into one suite per kind of session (`local[2]` and `local-cluster`).
 */
trait CommandMatrix extends DeltaOracle { self: AnyFunSuite =>

  import CommandMatrix._

  /** The base tables, written once per suite by delta-spark; a run works on a copy. */
  private lazy val baseDir = java.nio.file.Files.createTempDirectory("command-matrix").toFile

  private lazy val bases: Map[Shape, File] = {
    spark.sql(sourcesSql(SrcEvolved, "id, v, named_struct('x', x, 'y', y, 'z', z) AS st, extra"))
    spark.sql(sourcesSql(SrcStruct, "id, v, named_struct('x', x, 'y', y, 'z', z) AS st"))
    spark.sql(sourcesSql(SrcPlain, "id, v, named_struct('x', x, 'y', y) AS st"))
    Shape.all.map { shape =>
      val dir = new File(baseDir, shape.name)
      shape.write(spark, dir.getAbsolutePath)
      shape -> dir
    }.toMap
  }

  override protected def afterAll(): Unit =
    try FileUtils.deleteQuietly(baseDir)
    finally super.afterAll()

  /** The work directory of one run and the table in it (`t`, a copy of the case's shape). */
  final class Run(val dir: File, shape: Shape) {
    val path: String = new File(dir, "t").getAbsolutePath
    def other(name: String): String = new File(dir, name).getAbsolutePath
    bases.get(shape).foreach(base => FileUtils.copyDirectory(base, new File(path)))
  }

  /** One command of a case: what it does (its answer, if any), with these session settings. */
  final case class Step(
      name: String,
      run: Run => Option[DataFrame],
      conf: Seq[(String, String)] = Nil
  )

  /**
   * A case: commands run one after the other on a copy of `shape`, and the tables to compare after
   * them (the copy, by default); `merge`: its runs replay the log on the driver and as a Spark job;
   * `readsThrough`: a command reads a table through routing in its own work.
   */
  final case class Case(
      name: String,
      shape: Shape,
      steps: Seq[Step],
      targets: Seq[String] = Seq("t"),
      merge: Boolean = false,
      readsThrough: Boolean = false
  )

  /** A case of one command. */
  protected def single(
      name: String,
      shape: Shape,
      run: Run => Option[DataFrame],
      conf: Seq[(String, String)] = Nil,
      merge: Boolean = false,
      readsThrough: Boolean = false
  ): Case =
    Case(name, shape, Seq(Step(name, run, conf)), merge = merge, readsThrough = readsThrough)

  /** A table a case leaves: rows and schema, history; the rows this connector reads, when on. */
  private final case class TableState(
      rows: Seq[Seq[Any]],
      schema: String,
      history: Seq[String],
      routedRows: Option[Seq[Seq[Any]]]
  )

  /** What a run leaves: each command's answer or error, then each target table's state. */
  private final case class Outcome(
      answers: Seq[(String, Either[String, Seq[String]])],
      tables: Seq[(String, TableState)]
  )

  private def outcome(c: Case, routing: Option[(String, Reads)]): Outcome =
    withTempDir { dir =>
      val run = new Run(dir, c.shape)
      val on = routing.isDefined
      val mode = routing.fold("auto")(_._1)
      val reads = routing.fold(Reads.Never: Reads)(_._2)
      val answers = withConf(EnabledKey -> on.toString) {
        withReplayMode(mode) {
          c.steps.zipWithIndex.map { case (step, i) =>
            if (reads.before(i) && new File(run.path, "_delta_log").exists()) {
              spark.read.format("delta").load(run.path).collect()
            }
            val tried = withConf(step.conf: _*) {
              Try(step.run(run).map(df => df.toJSON.collect().toSeq))
            }
            step.name -> (tried match {
              case Success(rows) => Right(rows.getOrElse(Nil).map(normalize(_, dir)).sorted)
              case Failure(e) => Left(conditions(e))
            })
          }
        }
      }
      val tables = c.targets.map { name =>
        val target = run.other(name)
        withConf(EnabledKey -> "false") {
          val exists = new File(target, "_delta_log").exists()
          val table = if (exists) Some(spark.read.format("delta").load(target)) else None
          val history =
            if (!exists) Nil
            else
              spark
                .sql(s"DESCRIBE HISTORY delta.`$target`")
                .select("version", "operation", "operationParameters", "operationMetrics")
                .collect()
                .toSeq
                .map(r => normalize(historyLine(r), dir))
          val routedRows =
            if (on && exists)
              Some(withConf(EnabledKey -> "true")(sorted(spark.read.format("delta").load(target))))
            else None
          name -> TableState(
            table.map(sorted).getOrElse(Nil),
            table.map(_.schema.json).getOrElse(""),
            history.sorted,
            routedRows
          )
        }
      }
      Outcome(answers, tables)
    }

  /**
   * The runs with routing on of each case, as pairs (replay mode, when the session reads the table
   * through this connector). A MERGE case runs on a table not read, with the log replayed on the
   * driver, and on a table read first, replayed as a Spark job (the two replay modes). A case of
   * other commands runs once, in the default mode, reading the table before every other command:
   * its commands run on a table just read and on one not (a run of each kind for every command
   * would double these cases' time, the larger part of the matrix's).
   */
  protected def routedRuns(c: Case): Seq[(String, Reads)] =
    if (c.merge) Seq(("local", Reads.Never), ("distributed", Reads.Always))
    else Seq(("auto", Reads.Alternately))

  /** Registers one test per case. */
  protected def registerCases(cases: Seq[Case]): Unit = cases.foreach { c =>
    test(s"${c.name}: the same with the extension installed") {
      val oracle = outcome(c, None)
      routedRuns(c).foreach { case (mode, reads) =>
        val ours = outcome(c, Some(mode -> reads))
        val how = s"routing on, replay $mode, $reads"
        ours.answers.zip(oracle.answers).foreach { case ((step, answer), (_, expected)) =>
          assert(answer === expected, s"the answer of '$step' ($how)")
        }
        ours.tables.zip(oracle.tables).foreach { case ((name, state), (_, expected)) =>
          assert(state.history === expected.history, s"the history of $name ($how)")
          assert(state.schema === expected.schema, s"the schema of $name ($how)")
          assert(state.rows === expected.rows, s"the rows of $name ($how)")
          assert(
            state.routedRows.forall(_ == expected.rows),
            s"this connector's read of $name ($how)"
          )
        }
      }
    }
  }

  /** A MERGE from `source` into the run's table, all columns, both ways. */
  protected def mergeAll(source: String, into: String, evolution: Boolean = false): String =
    s"MERGE ${if (evolution) "WITH SCHEMA EVOLUTION " else ""}INTO $into t USING $source s " +
      "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"

  protected def sql(q: String): Option[DataFrame] = Some(spark.sql(q))

  /** A case: a MERGE of all columns from `source` into the table, schema evolution by conf. */
  protected def evolvingMerge(name: String, shape: Shape, source: String): Case =
    single(name, shape, r => sql(mergeAll(source, s"delta.`${r.path}`")), autoMerge, merge = true)

  /** A step that is one SQL statement on the run's table (`{t}` in `statement`). */
  protected def statement(
      name: String,
      statement: String,
      conf: Seq[(String, String)] = Nil
  ): Step =
    Step(name, r => sql(statement.replace("{t}", s"delta.`${r.path}`")), conf)

  /** A step that is one SQL statement, named by itself. */
  protected def statement(q: String): Step = statement(q.replace("{t}", "t"), q)

  protected def autoMerge: Seq[(String, String)] =
    Seq("spark.databricks.delta.schema.autoMerge.enabled" -> "true")

  /**
   * A Delta table `name` in the run's directory holding `view`'s rows (a MERGE or stream source).
   */
  protected def deltaSource(run: Run, view: String, name: String = "src"): String = {
    val path = run.other(name)
    withConf(EnabledKey -> "false")(spark.table(view).write.format("delta").save(path))
    path
  }

  /** `body` on the run's table registered in the catalog as `name`, dropped after. */
  protected def named[T](run: Run, name: String)(body: => T): T = {
    spark.sql(s"CREATE TABLE $name USING delta LOCATION '${run.path}'")
    try body
    finally spark.sql(s"DROP TABLE IF EXISTS $name")
  }

  /** `merge` run by `foreachBatch` on each micro-batch of a stream of the Delta table `source`. */
  protected def foreachBatchMerge(run: Run, source: String)(merge: DataFrame => Unit): Unit = {
    val each: (DataFrame, Long) => Unit = (batch, _) => merge(batch)
    spark.readStream
      .format("delta")
      .load(source)
      .writeStream
      .option("checkpointLocation", run.other("checkpoint"))
      .foreachBatch(each)
      .trigger(Trigger.AvailableNow())
      .start()
      .awaitTermination()
  }

  /** A DeltaTable API merge of `source` into the run's table with schema evolution. */
  protected def apiMerge(path: String, source: DataFrame): Unit =
    DeltaTable
      .forPath(spark, path)
      .as("t")
      .merge(source.as("s"), "t.id = s.id")
      .withSchemaEvolution()
      .whenMatched()
      .updateAll()
      .whenNotMatched()
      .insertAll()
      .execute()

  /**
   * A version of the history: operation, parameters and metrics other than times and sizes (the
   * bytes of a compacted or Z-ordered file depend on the order it read its files in, which varies
   * run to run where files are of one size; so do the sizes of later commands that remove it).
   */
  private def historyLine(r: Row): String = {
    def sortedMap(i: Int, keep: String => Boolean) =
      r.getMap[String, String](i).toSeq.filter(kv => keep(kv._1)).sorted.mkString("{", ",", "}")
    val metrics = sortedMap(3, k => !Varying.pattern.matcher(k).find())
    s"v${r.getLong(0)} ${r.getString(1)} ${sortedMap(2, _ => true)} $metrics"
  }
}

object CommandMatrix {
  val EnabledKey = "spark.deltareplay.enabled"

  /** When a run reads its table through this connector: before which commands (by index). */
  sealed abstract class Reads(description: String) {
    def before(step: Int): Boolean
    override def toString: String = description
  }

  object Reads {
    case object Never extends Reads("table not read") { def before(step: Int) = false }
    case object Always extends Reads("table read before each command") {
      def before(step: Int) = true
    }
    case object Alternately extends Reads("table read before every other command") {
      def before(step: Int): Boolean = step % 2 == 1
    }
  }

  /**
   * The three MERGE sources, as temp views: with a new column and struct field, struct only, none.
   */
  val SrcEvolved = "cm_src_evolved"
  val SrcStruct = "cm_src_struct"
  val SrcPlain = "cm_src_plain"

  private def sourcesSql(view: String, columns: String): String =
    s"CREATE OR REPLACE TEMP VIEW $view AS SELECT $columns FROM VALUES " +
      "(2L, 'b2', 20L, 'bb', 9.5D, 'e2'), (7L, 'g', 70L, 'gg', 7.0D, 'e7') " +
      "AS s(id, v, x, y, z, extra)"

  /** A table shape: how delta-spark writes the base table a command runs on. */
  sealed abstract class Shape(val name: String) {
    def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit
  }

  /** id, v, st STRUCT<x, y>: created, then two inserts of three rows (versions 0, 1, 2). */
  class Rows(name: String, clause: String = "", properties: Map[String, String] = Map.empty)
      extends Shape(name) {
    def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit = {
      val props =
        if (properties.isEmpty) ""
        else
          properties.map { case (k, v) => s"'$k' = '$v'" }.mkString(" TBLPROPERTIES (", ", ", ")")
      spark.sql(
        s"CREATE TABLE delta.`$path` (id BIGINT, v STRING, st STRUCT<x: BIGINT, y: STRING>) " +
          s"USING delta $clause$props"
      )
      // one file a commit: every command's work is a few tasks
      Seq(1 to 3, 4 to 6).foreach { ids =>
        val values = ids
          .map(i => s"($i, '${('a' + i - 1).toChar}', named_struct('x', ${i * 10}, 'y', 'y$i'))")
          .mkString(", ")
        spark.sql(s"INSERT INTO delta.`$path` SELECT /*+ REPARTITION(1) */ * FROM VALUES $values")
      }
    }
  }

  object Shape {
    case object Plain extends Rows("plain")
    case object Dv extends Rows("dv", properties = Map("delta.enableDeletionVectors" -> "true"))
    case object Mapped
        extends Rows("mapped", properties = Map("delta.columnMapping.mode" -> "name"))
    case object Clustered extends Rows("clustered", clause = "CLUSTER BY (id) ")

    /** id, v, p: partitioned by p, two inserts. */
    case object Partitioned extends Shape("partitioned") {
      def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit = {
        spark.sql(
          s"CREATE TABLE delta.`$path` (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p)"
        )
        spark.sql(
          s"INSERT INTO delta.`$path` SELECT /*+ REPARTITION(1) */ * FROM VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')"
        )
        spark.sql(
          s"INSERT INTO delta.`$path` SELECT /*+ REPARTITION(1) */ * FROM VALUES (4, 'd', 'y'), (5, 'e', 'z')"
        )
      }
    }

    /** id, v, g GENERATED ALWAYS AS (id * 2), with a CHECK constraint id >= 0. */
    case object Generated extends Shape("generated") {
      def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit = {
        spark.sql(
          s"CREATE TABLE delta.`$path` (id BIGINT, v STRING, g BIGINT GENERATED ALWAYS AS (id * 2)) USING delta"
        )
        spark.sql(s"INSERT INTO delta.`$path` (id, v) VALUES (1, 'a'), (2, 'b')")
        spark.sql(s"ALTER TABLE delta.`$path` ADD CONSTRAINT non_negative CHECK (id >= 0)")
      }
    }

    /** A Parquet directory (for CONVERT TO DELTA). */
    case object Parquet extends Shape("parquet") {
      def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit =
        spark
          .range(1, 6)
          .selectExpr("id", "cast(id as string) AS v")
          .coalesce(1)
          .write
          .parquet(path)
    }

    /** No table: the command creates it. */
    case object Empty extends Shape("none") {
      def write(spark: org.apache.spark.sql.SparkSession, path: String): Unit = ()
    }

    val all: Seq[Shape] = Seq(Plain, Dv, Mapped, Clustered, Partitioned, Generated, Parquet)
  }

  private val ExprId = "#[0-9]+".r
  private val Uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".r

  /** Keys of values that vary run to run: times, and sizes (see `historyLine`). */
  private val Varying = "(?i)(time|createdAt|lastModified|size|bytes|^min$|^max$|^avg$)".r
  private val Times =
    """"(\w*(?:[Tt]ime|createdAt|lastModified|[Ss]ize|[Bb]ytes)\w*|min|max|avg)":("[^"]*"|-?[0-9.Ee+-]+|null)""".r

  /**
   * A line of an answer or history with the run's directory, ids (UUIDs, expression ids of
   * predicates), times and sizes taken out.
   */
  def normalize(line: String, dir: File): String = {
    val d = dir.getCanonicalPath
    val noDirs = line
      .replace("file:" + d, "<dir>")
      .replace(d, "<dir>")
      .replace("file:" + dir.getAbsolutePath, "<dir>")
      .replace(dir.getAbsolutePath, "<dir>")
    val noIds = ExprId.replaceAllIn(Uuid.replaceAllIn(noDirs, "<uuid>"), "#_")
    Times.replaceAllIn(noIds, m => s""""${m.group(1)}":"_"""")
  }

  /** The error conditions (or class names) along `e`'s causes. */
  def conditions(e: Throwable): String =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .take(6)
      .map {
        case s: SparkThrowable if s.getCondition != null => s.getCondition
        case other => other.getClass.getSimpleName
      }
      .mkString(" <- ")
}
