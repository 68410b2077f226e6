package io.deltareplay

import io.delta.tables.DeltaTable
import io.deltareplay.CommandMatrix._
import org.apache.spark.sql.functions.{expr, lit}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/**
 * The cases of [[CommandMatrix]]: every delta-spark command and API users run around reads, on the
 * shapes they change, written with the matrix's steps (`single`, `statement`, `evolvingMerge`,
 * ...). The seven MERGE cases of issue 60 are named so.
 */
trait CommandMatrixCases extends CommandMatrix { self: AnyFunSuite =>

  import CommandMatrix.Shape._

  private val plainRow = "named_struct('x', 90, 'y', 'y9')"

  /** The cases, in the order their tests run. */
  protected lazy val cases: Seq[Case] = Seq(
    // issue 60's cases, and two more MERGEs with schema evolution: a table each
    evolvingMerge(
      "MERGE, schema evolution by conf, new column and struct field (case 1)",
      Plain,
      SrcEvolved
    ),
    single(
      "MERGE WITH SCHEMA EVOLUTION (case 2)",
      Plain,
      r => sql(mergeAll(SrcEvolved, s"delta.`${r.path}`", evolution = true)),
      merge = true
    ),
    evolvingMerge("MERGE, schema evolution, column mapping (case 3)", Mapped, SrcEvolved),
    single(
      "DeltaTable merge withSchemaEvolution (case 4)",
      Plain,
      r => { apiMerge(r.path, spark.table(SrcEvolved)); None },
      merge = true
    ),
    Case(
      "RESTORE TO VERSION AS OF 1, then MERGE with schema evolution (case 5)",
      Plain,
      Seq(
        statement("RESTORE TABLE {t} TO VERSION AS OF 1"),
        Step("MERGE", r => sql(mergeAll(SrcEvolved, s"delta.`${r.path}`")), autoMerge)
      ),
      merge = true
    ),
    single(
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
    single(
      "MERGE from a Delta table source, schema evolution",
      Plain,
      r => sql(mergeAll(s"delta.`${deltaSource(r, SrcEvolved)}`", s"delta.`${r.path}`")),
      autoMerge,
      merge = true,
      readsThrough = true
    ),
    // the other commands, a table per shape, in the order users run them
    Case(
      "DML, inserts, clones, OPTIMIZE, the DeltaTable API, a stream, then rewrites",
      Plain,
      Seq(
        statement("UPDATE {t} SET v = 'u' WHERE id > 3"),
        statement("DELETE FROM {t} WHERE id = 2"),
        statement(s"INSERT INTO {t} VALUES (9, 'i', $plainRow)"),
        statement("INSERT INTO {t} SELECT id + 100, v, st FROM {t} WHERE id > 2"),
        Step(
          "INSERT into a temp view over a format(\"delta\") read",
          r => {
            spark.read.format("delta").load(r.path).createOrReplaceTempView("cm_view")
            sql(s"INSERT INTO cm_view VALUES (8, 'h', $plainRow)")
          }
        ),
        Step(
          "DeltaTable forName merge",
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
        Step(
          "DeltaTable history",
          r => Some(DeltaTable.forPath(spark, r.path).history().drop("timestamp"))
        ),
        Step("DeltaTable detail", r => Some(DeltaTable.forPath(spark, r.path).detail())),
        statement("OPTIMIZE {t} ZORDER BY (id)"),
        Step(
          "DeltaTable optimize",
          r => Some(DeltaTable.forPath(spark, r.path).optimize().executeCompaction())
        ),
        Step(
          "a stream appending to the table",
          r => {
            val source = deltaSource(r, SrcPlain, "stream-src")
            spark.readStream
              .format("delta")
              .load(source)
              .writeStream
              .format("delta")
              .option("checkpointLocation", r.other("stream-checkpoint"))
              .trigger(Trigger.AvailableNow())
              .start(r.path)
              .awaitTermination()
            None
          }
        ),
        statement("ALTER TABLE {t} ADD COLUMNS (w INT)"),
        statement("ALTER TABLE {t} SET TBLPROPERTIES ('delta.logRetentionDuration' = '10 days')"),
        statement("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')"),
        statement("ALTER TABLE {t} DROP FEATURE inCommitTimestamp"),
        statement(
          "ALTER TABLE {t} DROP COLUMN v (an error without column mapping)",
          "ALTER TABLE {t} DROP COLUMN v"
        ),
        Step(
          "append with mergeSchema",
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
        Step(
          "DeltaTable restoreToVersion",
          r => Some(DeltaTable.forPath(spark, r.path).restoreToVersion(2))
        ),
        Step(
          "read the table and overwrite it",
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
          }
        ),
        statement(
          "VACUUM RETAIN 0 HOURS",
          "VACUUM {t} RETAIN 0 HOURS",
          Seq("spark.databricks.delta.retentionDurationCheck.enabled" -> "false")
        ),
        Step(
          "SHALLOW CLONE",
          r => sql(s"CREATE TABLE delta.`${r.other("clone")}` SHALLOW CLONE delta.`${r.path}`")
        ),
        Step(
          "DeltaTable clone",
          r => { DeltaTable.forPath(spark, r.path).clone(r.other("clone2"), true); None }
        ),
        statement("CREATE OR REPLACE TABLE {t} USING delta AS SELECT id, v FROM {t} WHERE id > 1"),
        Step(
          "overwrite with overwriteSchema",
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
        statement("CREATE OR REPLACE TABLE {t} (a INT) USING delta")
      ),
      targets = Seq("t", "clone", "clone2"),
      readsThrough = true
    ),
    Case(
      "MERGE with clauses, DELETE, the DeltaTable API, REORG PURGE: deletion vectors",
      Dv,
      Seq(
        Step(
          "MERGE with DELETE and NOT MATCHED BY SOURCE clauses",
          r =>
            sql(
              s"MERGE INTO delta.`${r.path}` t USING $SrcPlain s ON t.id = s.id " +
                "WHEN MATCHED AND s.id = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v " +
                "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.id > 4 THEN DELETE"
            )
        ),
        statement("DELETE FROM {t} WHERE id = 3"),
        Step(
          "DeltaTable update and delete",
          r => {
            val t = DeltaTable.forPath(spark, r.path)
            t.update(
              expr("id = 1"),
              Map("v" -> lit("api"))
            )
            t.delete("id = 4")
            None
          }
        ),
        statement("REORG TABLE {t} APPLY (PURGE)")
      )
    ),
    Case(
      "ALTER TABLE DROP and RENAME COLUMN: column mapping",
      Mapped,
      Seq(
        statement("ALTER TABLE {t} DROP COLUMN v"),
        statement(s"INSERT INTO {t} VALUES (9, $plainRow)"),
        statement("ALTER TABLE {t} RENAME COLUMN st TO s2")
      )
    ),
    Case(
      "OPTIMIZE and ALTER TABLE CLUSTER BY: liquid clustering",
      Clustered,
      Seq(
        statement("OPTIMIZE {t}"),
        statement("ALTER TABLE {t} CLUSTER BY (v)"),
        statement(s"INSERT INTO {t} VALUES (9, 'i', $plainRow)"),
        statement("OPTIMIZE {t}")
      )
    ),
    Case(
      "INSERT OVERWRITE and REPLACE WHERE: partitions",
      Partitioned,
      Seq(
        statement("INSERT OVERWRITE {t} SELECT id + 10, v, p FROM {t} WHERE p = 'x'"),
        statement("INSERT INTO {t} REPLACE WHERE p = 'y' SELECT 100, 'r', 'y'")
      )
    ),
    Case(
      "INSERT with a generated column and a CHECK constraint",
      Generated,
      Seq(
        statement("INSERT INTO {t} (id, v) VALUES (3, 'c')"),
        statement("INSERT INTO {t} (id, v) VALUES (-1, 'bad')")
      )
    ),
    Case(
      "CONVERT TO DELTA, then an INSERT",
      Parquet,
      Seq(
        Step("CONVERT TO DELTA", r => sql(s"CONVERT TO DELTA parquet.`${r.path}`")),
        statement("INSERT INTO {t} VALUES (9, 'i')")
      )
    )
  )
}
