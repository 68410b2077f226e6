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
 * delta-spark's commands with this extension installed leave what they leave without it. Each
 * command of [[CommandMatrix.commands]] runs on fresh copies of one table written by delta-spark:
 * once with routing off (`spark.deltareplay.enabled=false`, the oracle), once with it on, and once
 * with it on in a session that read the table just before (through this connector). The runs must
 * agree on the command's answer (its rows, or its error condition), the table it leaves (rows and
 * schema, read by delta-spark), its history (operation, parameters, metrics other than times) and,
 * with routing on, the rows this connector reads of it. MERGE cases run with routing on in every
 * replay mode. Mixed into one suite per kind of session (`local[2]` and `local-cluster`).
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

  /** The work directory of one run and the table in it (`t`, a copy of the command's shape). */
  final class Run(val dir: File, shape: Shape) {
    val path: String = new File(dir, "t").getAbsolutePath
    def other(name: String): String = new File(dir, name).getAbsolutePath
    bases.get(shape).foreach(base => FileUtils.copyDirectory(base, new File(path)))
  }

  /**
   * One command: what it runs on, what it does, and which table it leaves to compare; `merge`: run
   * in both replay modes; `readsThrough`: it reads a table through routing in its own work.
   */
  final case class Command(
      name: String,
      shape: Shape,
      run: Run => Option[DataFrame],
      target: Run => String = _.path,
      conf: Seq[(String, String)] = Nil,
      merge: Boolean = false,
      readsThrough: Boolean = false
  )

  /** What a run leaves: its answer or error, the table, its history; routed rows when on. */
  private final case class Outcome(
      answer: Either[String, Seq[String]],
      rows: Seq[Seq[Any]],
      schema: String,
      history: Seq[String],
      routedRows: Option[Seq[Seq[Any]]]
  )

  private def outcome(command: Command, routing: Option[(String, Boolean)]): Outcome =
    withTempDir { dir =>
      val run = new Run(dir, command.shape)
      val on = routing.isDefined
      val answer = withConf(Seq(EnabledKey -> on.toString) ++ command.conf: _*) {
        def attempt() = Try(command.run(run).map(df => df.toJSON.collect().toSeq))
        val tried = routing match {
          case Some((mode, readFirst)) =>
            withReplayMode(mode) {
              if (readFirst && new File(run.path, "_delta_log").exists()) {
                spark.read.format("delta").load(run.path).where("id >= 0").collect()
                spark.sql(s"SELECT count(*) FROM delta.`${run.path}`").collect()
              }
              attempt()
            }
          case None => attempt()
        }
        tried match {
          case Success(rows) => Right(rows.getOrElse(Nil).map(normalize(_, dir)).sorted)
          case Failure(e) => Left(conditions(e))
        }
      }
      val target = command.target(run)
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
        Outcome(
          answer,
          table.map(sorted).getOrElse(Nil),
          table.map(_.schema.json).getOrElse(""),
          history.sorted,
          routedRows
        )
      }
    }

  /**
   * The runs with routing on of each command, as pairs (replay mode, whether the session reads the
   * table first): on a table not read before and on one read before; MERGE cases with the log
   * replayed on the driver and as a Spark job (the two replay modes), the others in the default.
   */
  protected def routedRuns(command: Command): Seq[(String, Boolean)] =
    if (command.merge) Seq(("local", false), ("distributed", true))
    else Seq(("auto", false), ("auto", true))

  /** Registers one test per command. */
  protected def registerCommands(commands: Seq[Command]): Unit = commands.foreach { command =>
    test(s"${command.name}: the same with the extension installed") {
      val oracle = outcome(command, None)
      routedRuns(command).foreach { case (mode, readFirst) =>
        val ours = outcome(command, Some(mode -> readFirst))
        val how = s"routing on, replay $mode${if (readFirst) ", table read first" else ""}"
        assert(ours.answer === oracle.answer, s"the command's answer ($how)")
        assert(ours.history === oracle.history, s"the history ($how)")
        assert(ours.schema === oracle.schema, s"the schema ($how)")
        assert(ours.rows === oracle.rows, s"the rows ($how)")
        assert(ours.routedRows.forall(_ == oracle.rows), s"this connector's read ($how)")
      }
    }
  }

  /** A MERGE from `source` into the run's table, all columns, both ways. */
  protected def mergeAll(source: String, into: String, evolution: Boolean = false): String =
    s"MERGE ${if (evolution) "WITH SCHEMA EVOLUTION " else ""}INTO $into t USING $source s " +
      "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"

  protected def sql(q: String): Option[DataFrame] = Some(spark.sql(q))

  /** A MERGE of all columns from `source` into the run's table, schema evolution by conf. */
  protected def evolvingMerge(name: String, shape: Shape, source: String): Command =
    Command(
      name,
      shape,
      r => sql(mergeAll(source, s"delta.`${r.path}`")),
      conf = autoMerge,
      merge = true
    )

  /** A command that is one SQL statement on the run's table (`{t}` in `statement`). */
  protected def onTable(name: String, shape: Shape, statement: String): Command =
    Command(name, shape, r => sql(statement.replace("{t}", s"delta.`${r.path}`")))

  protected def autoMerge: Seq[(String, String)] =
    Seq("spark.databricks.delta.schema.autoMerge.enabled" -> "true")

  /** A Delta table holding `view`'s rows (a source for SQL MERGE and streams). */
  protected def deltaSource(run: Run, view: String): String = {
    val path = run.other("src")
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

  import CommandMatrix.Shape._

  /**
   * The commands: every delta-spark command and API users run around reads, on the shapes they
   * change. The seven MERGE cases of issue 60 are named so.
   */
  protected lazy val commands: Seq[Command] = Seq(
    // MERGE: schema evolution (issue 60's cases 1-7), deletion vectors, clauses, sources
    evolvingMerge(
      "MERGE, schema evolution by conf, new column and struct field (case 1)",
      Plain,
      SrcEvolved
    ),
    Command(
      "MERGE WITH SCHEMA EVOLUTION (case 2)",
      Plain,
      r => sql(mergeAll(SrcEvolved, s"delta.`${r.path}`", evolution = true)),
      merge = true
    ),
    evolvingMerge("MERGE, schema evolution, column mapping (case 3)", Mapped, SrcEvolved),
    Command(
      "DeltaTable merge withSchemaEvolution (case 4)",
      Plain,
      r => { apiMerge(r.path, spark.table(SrcEvolved)); None },
      merge = true
    ),
    Command(
      "RESTORE TO VERSION AS OF 1, then MERGE with schema evolution (case 5)",
      Plain,
      r => {
        spark.sql(s"RESTORE TABLE delta.`${r.path}` TO VERSION AS OF 1").collect()
        sql(mergeAll(SrcEvolved, s"delta.`${r.path}`"))
      },
      conf = autoMerge,
      merge = true
    ),
    Command(
      "foreachBatch DeltaTable merge with schema evolution from a stream (case 6)",
      Plain,
      r => {
        val source = deltaSource(r, SrcEvolved)
        foreachBatchMerge(r, source)(batch => apiMerge(r.path, batch))
        None
      },
      merge = true
    ),
    evolvingMerge("MERGE, schema evolution, a struct field only (case 7)", Plain, SrcStruct),
    evolvingMerge("MERGE, schema evolution, deletion vectors", Dv, SrcEvolved),
    Command(
      "MERGE with DELETE and NOT MATCHED BY SOURCE clauses, deletion vectors",
      Dv,
      r =>
        sql(
          s"MERGE INTO delta.`${r.path}` t USING $SrcPlain s ON t.id = s.id " +
            "WHEN MATCHED AND s.id = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v " +
            "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.id > 4 THEN DELETE"
        ),
      merge = true
    ),
    Command(
      "MERGE from a Delta table source, schema evolution",
      Plain,
      r => sql(mergeAll(s"delta.`${deltaSource(r, SrcEvolved)}`", s"delta.`${r.path}`")),
      conf = autoMerge,
      merge = true
    ),
    Command(
      "MERGE into a catalog table with schema evolution",
      Plain,
      r =>
        named(r, "cm_merge_target")(
          sql(mergeAll(SrcEvolved, "cm_merge_target")).map(_.localCheckpoint())
        ),
      conf = autoMerge,
      merge = true
    ),
    // UPDATE, DELETE
    onTable("UPDATE", Plain, "UPDATE {t} SET v = 'u' WHERE id > 3"),
    onTable("UPDATE, deletion vectors", Dv, "UPDATE {t} SET v = 'u' WHERE id > 3"),
    onTable("DELETE", Plain, "DELETE FROM {t} WHERE id = 2"),
    onTable("DELETE, deletion vectors", Dv, "DELETE FROM {t} WHERE id = 2"),
    Command(
      "DeltaTable update and delete",
      Dv,
      r => {
        val t = DeltaTable.forPath(spark, r.path)
        t.update(
          org.apache.spark.sql.functions.expr("id = 1"),
          Map("v" -> org.apache.spark.sql.functions.lit("api"))
        )
        t.delete("id = 5")
        None
      }
    ),
    // INSERT
    onTable(
      "INSERT INTO",
      Plain,
      "INSERT INTO {t} VALUES (9, 'i', named_struct('x', 90, 'y', 'y9'))"
    ),
    Command(
      "INSERT INTO ... SELECT from the table itself",
      Plain,
      r =>
        sql(
          s"INSERT INTO delta.`${r.path}` SELECT id + 100, v, st FROM delta.`${r.path}` WHERE id > 2"
        ),
      readsThrough = true
    ),
    onTable(
      "INSERT OVERWRITE",
      Partitioned,
      "INSERT OVERWRITE {t} SELECT id + 10, v, p FROM {t} WHERE p = 'x'"
    ),
    onTable(
      "INSERT INTO ... REPLACE WHERE",
      Partitioned,
      "INSERT INTO {t} REPLACE WHERE p = 'x' SELECT 100, 'r', 'x'"
    ),
    onTable(
      "INSERT into a table with a generated column",
      Generated,
      "INSERT INTO {t} (id, v) VALUES (3, 'c')"
    ),
    onTable(
      "INSERT that violates a CHECK constraint",
      Generated,
      "INSERT INTO {t} (id, v) VALUES (-1, 'bad')"
    ),
    Command(
      "INSERT into a temp view over a format(\"delta\") read",
      Plain,
      r => {
        spark.read.format("delta").load(r.path).createOrReplaceTempView("cm_view")
        sql("INSERT INTO cm_view VALUES (8, 'h', named_struct('x', 80, 'y', 'y8'))")
      }
    ),
    // DataFrame writes
    Command(
      "append with mergeSchema",
      Plain,
      r => {
        spark
          .table(SrcEvolved)
          .write
          .format("delta")
          .mode("append")
          .option("mergeSchema", "true")
          .save(r.path)
        None
      }
    ),
    Command(
      "overwrite with overwriteSchema",
      Plain,
      r => {
        spark
          .range(3)
          .selectExpr("id", "'o' AS w")
          .write
          .format("delta")
          .mode("overwrite")
          .option("overwriteSchema", "true")
          .save(r.path)
        None
      }
    ),
    Command(
      "read the table and overwrite it",
      Plain,
      r => {
        spark.read
          .format("delta")
          .load(r.path)
          .where("id > 2")
          .write
          .format("delta")
          .mode("overwrite")
          .save(r.path)
        None
      },
      readsThrough = true
    ),
    Command(
      "CREATE OR REPLACE TABLE ... AS SELECT from itself",
      Plain,
      r =>
        sql(
          s"CREATE OR REPLACE TABLE delta.`${r.path}` USING delta AS SELECT id, v FROM delta.`${r.path}` WHERE id > 1"
        ),
      readsThrough = true
    ),
    onTable(
      "CREATE OR REPLACE TABLE with a new schema",
      Plain,
      "CREATE OR REPLACE TABLE {t} (a INT) USING delta"
    ),
    // RESTORE, CLONE, CONVERT
    onTable("RESTORE TABLE", Plain, "RESTORE TABLE {t} TO VERSION AS OF 1"),
    Command(
      "DeltaTable restoreToVersion",
      Plain,
      r => Some(DeltaTable.forPath(spark, r.path).restoreToVersion(1))
    ),
    Command(
      "SHALLOW CLONE",
      Plain,
      r => sql(s"CREATE TABLE delta.`${r.other("clone")}` SHALLOW CLONE delta.`${r.path}`"),
      target = _.other("clone")
    ),
    Command(
      "DeltaTable clone",
      Plain,
      r => { DeltaTable.forPath(spark, r.path).clone(r.other("clone"), true); None },
      target = _.other("clone")
    ),
    Command("CONVERT TO DELTA", Parquet, r => sql(s"CONVERT TO DELTA parquet.`${r.path}`")),
    // OPTIMIZE, REORG, VACUUM
    onTable("OPTIMIZE", Plain, "OPTIMIZE {t}"),
    onTable("OPTIMIZE ZORDER BY", Plain, "OPTIMIZE {t} ZORDER BY (id)"),
    onTable("OPTIMIZE a liquid-clustered table", Clustered, "OPTIMIZE {t}"),
    Command(
      "DeltaTable optimize",
      Plain,
      r => Some(DeltaTable.forPath(spark, r.path).optimize().executeCompaction())
    ),
    Command(
      "DELETE, then REORG TABLE ... APPLY (PURGE)",
      Dv,
      r => {
        spark.sql(s"DELETE FROM delta.`${r.path}` WHERE id = 2").collect()
        sql(s"REORG TABLE delta.`${r.path}` APPLY (PURGE)")
      }
    ),
    Command(
      "overwrite, then VACUUM RETAIN 0 HOURS",
      Plain,
      r => {
        spark
          .range(2)
          .selectExpr("id", "'n' AS v", "named_struct('x', id, 'y', 'n') AS st")
          .write
          .format("delta")
          .mode("overwrite")
          .save(r.path)
        sql(s"VACUUM delta.`${r.path}` RETAIN 0 HOURS")
      },
      conf = Seq("spark.databricks.delta.retentionDurationCheck.enabled" -> "false")
    ),
    // ALTER TABLE
    onTable("ALTER TABLE ADD COLUMNS", Plain, "ALTER TABLE {t} ADD COLUMNS (w INT)"),
    onTable("ALTER TABLE DROP COLUMN, column mapping", Mapped, "ALTER TABLE {t} DROP COLUMN v"),
    onTable(
      "ALTER TABLE RENAME COLUMN, column mapping",
      Mapped,
      "ALTER TABLE {t} RENAME COLUMN v TO w"
    ),
    onTable(
      "ALTER TABLE DROP COLUMN without column mapping (an error)",
      Plain,
      "ALTER TABLE {t} DROP COLUMN v"
    ),
    onTable("ALTER TABLE CLUSTER BY", Clustered, "ALTER TABLE {t} CLUSTER BY (v)"),
    onTable(
      "ALTER TABLE SET TBLPROPERTIES",
      Plain,
      "ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration' = '10 days')"
    ),
    onTable(
      "ALTER TABLE DROP FEATURE deletionVectors",
      Dv,
      "ALTER TABLE {t} DROP FEATURE deletionVectors"
    ),
    // the DeltaTable API's reads
    Command(
      "DeltaTable history",
      Plain,
      r => Some(DeltaTable.forPath(spark, r.path).history().drop("timestamp"))
    ),
    Command("DeltaTable detail", Plain, r => Some(DeltaTable.forPath(spark, r.path).detail())),
    Command(
      "DeltaTable forName merge",
      Plain,
      r =>
        named(r, "cm_api_target") {
          DeltaTable
            .forName(spark, "cm_api_target")
            .as("t")
            .merge(spark.table(SrcPlain).as("s"), "t.id = s.id")
            .whenMatched()
            .updateAll()
            .whenNotMatched()
            .insertAll()
            .execute()
          None
        }
    ),
    // streams into the table
    Command(
      "a stream appending to the table",
      Plain,
      r => {
        val source = deltaSource(r, SrcPlain)
        spark.readStream
          .format("delta")
          .load(source)
          .writeStream
          .format("delta")
          .option("checkpointLocation", r.other("checkpoint"))
          .trigger(Trigger.AvailableNow())
          .start(r.path)
          .awaitTermination()
        None
      },
      readsThrough = true
    )
  )

  private def historyLine(r: Row): String = {
    def sortedMap(i: Int, keep: String => Boolean) =
      r.getMap[String, String](i).toSeq.filter(kv => keep(kv._1)).sorted.mkString("{", ",", "}")
    val metrics = sortedMap(3, k => !k.toLowerCase(java.util.Locale.ROOT).contains("time"))
    s"v${r.getLong(0)} ${r.getString(1)} ${sortedMap(2, _ => true)} $metrics"
  }
}

object CommandMatrix {
  val EnabledKey = "spark.deltareplay.enabled"

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
  private val Times =
    """"(\w*(?:[Tt]ime|createdAt|lastModified)\w*)":("[^"]*"|-?[0-9.Ee+-]+|null)""".r

  /**
   * A line of an answer or history with the run's directory, ids (UUIDs, expression ids of
   * predicates) and times taken out.
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
