package io.deltareplay

import io.deltareplay.internal.scan.StatsAggregateScan
import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite

/** count/min/max from the log's statistics, against V1 and against a real scan. */
class MetadataAggregatesSuite extends AnyFunSuite with DeltaOracle {

  private def answeredFromStats(df: DataFrame): Boolean = {
    def walk(p: SparkPlan): Boolean = p match {
      case a: AdaptiveSparkPlanExec => walk(a.executedPlan)
      case q: QueryStageExec => walk(q.plan)
      case b: BatchScanExec => b.scan.isInstanceOf[StatsAggregateScan]
      case other => other.children.exists(walk)
    }
    walk(df.queryExecution.executedPlan)
  }

  /**
   * Same answer as V1 and as our own scan with the optimisation off; answered from stats or not.
   */
  private def check(path: String, sql: String, fromStats: Boolean): Unit = {
    v1(path).createOrReplaceTempView("t_v1")
    ours(path).createOrReplaceTempView("t_ours")
    def run(view: String): DataFrame = spark.sql(sql.replace("TABLE", view))
    val expected = sorted(run("t_v1"))
    spark.conf.set("spark.deltareplay.aggregates.fromStats", "false")
    val scanned =
      try {
        val df = run("t_ours")
        assert(!answeredFromStats(df))
        sorted(df)
      } finally spark.conf.unset("spark.deltareplay.aggregates.fromStats")
    // Answered where the file list is planned: folded on the driver, or in the replay tasks.
    Seq("driver", "executors").foreach { planning =>
      withConf("spark.deltareplay.planning.mode" -> planning) {
        val df = run("t_ours")
        val plan = df.queryExecution.executedPlan
        assert(answeredFromStats(df) === fromStats, s"[$planning] $sql\n$plan")
        assert(sorted(df) === expected, s"[$planning] $sql")
        if (fromStats) {
          assert(
            plan.toString.contains("on the executors") === (planning == "executors"),
            s"[$planning] $plan"
          )
        }
      }
    }
    assert(scanned === expected, sql)
  }

  test("count(*) with and without partition filters, with deletion vectors") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 1000)
        .selectExpr(
          "id",
          "CAST(id % 5 AS INT) AS p",
          "DATE'2024-01-01' + CAST(id % 40 AS INT) AS d"
        )
        .repartition(8)
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 13 = 0")
      check(path, "SELECT count(*) FROM TABLE", fromStats = true)
      check(path, "SELECT count(*) FROM TABLE WHERE p IN (1, 3)", fromStats = true)
      check(path, "SELECT count(*) FROM TABLE WHERE p = 99", fromStats = true)
      // With DVs the bounds are not exact and nulls of deleted rows are unknown: scanned.
      check(path, "SELECT min(id), max(d) FROM TABLE", fromStats = false)
      check(path, "SELECT count(id) FROM TABLE", fromStats = false)
      // A filter on a data column or a group by: scanned.
      check(path, "SELECT count(*) FROM TABLE WHERE id > 500", fromStats = false)
      check(path, "SELECT p, count(*) FROM TABLE GROUP BY p", fromStats = false)
      assert(spark.read.format("delta").load(path).count() === 1000 - 77)
      // The metrics Python reads name the table and the aggregates answered from stats.
      ours(path).createOrReplaceTempView("t_ours")
      val json = DeltaReplay.scanMetricsJson(spark.sql("SELECT count(*) FROM t_ours"))
      assert(json.contains(s""""aggregatesFromStats":["count(*)"]"""), json)
      assert(json.contains(s""""filesAfterPartitionPruning":"""), json)
      assert(json.startsWith("[{\"table\":\""), json)
      assert(json.contains(new java.io.File(path).getAbsolutePath), json)
    }
  }

  test("min, max and count(col) without deletion vectors; nulls; unsupported types are scanned") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 600)
        .selectExpr(
          "id",
          "IF(id % 3 = 0, NULL, CAST(id * 7 AS INT)) AS n",
          "IF(id >= 300, NULL, CAST(id AS SMALLINT)) AS s",
          "DATE'2020-02-01' + CAST(id AS INT) AS d",
          "CAST(id AS STRING) AS str"
        )
        .repartition(6)
        .write
        .format("delta")
        .save(path)
      check(
        path,
        "SELECT min(id), max(id), min(n), max(n), min(s), max(s), min(d), max(d) FROM TABLE",
        fromStats = true
      )
      check(path, "SELECT count(*), count(n), count(s) FROM TABLE", fromStats = true)
      check(path, "SELECT max(str) FROM TABLE", fromStats = false)
      check(path, "SELECT count(DISTINCT n) FROM TABLE", fromStats = false)
      check(path, "SELECT sum(id) FROM TABLE", fromStats = false)
      // An empty table version: count 0, min null.
      spark.sql(s"DELETE FROM delta.`$path`")
      check(path, "SELECT count(*), min(id) FROM TABLE", fromStats = true)
    }
  }

  test("the routed format(\"delta\") read answers count() from stats too; EXPLAIN says so") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark.range(0, 300).repartition(3).write.format("delta").save(path)
      val df = spark.read.format("delta").load(path).groupBy().count()
      assert(answeredFromStats(df))
      assert(df.collect().head.getLong(0) === 300L)
      val explain = df.queryExecution.executedPlan.toString
      assert(explain.contains("aggregates from log statistics: count(*) over 3 files"), explain)
    }
  }
}
