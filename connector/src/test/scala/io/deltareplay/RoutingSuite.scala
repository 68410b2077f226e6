package io.deltareplay

import io.delta.tables.DeltaTable
import io.deltareplay.test.DeltaOracle
import org.scalatest.funsuite.AnyFunSuite

/** The extension routes the reads users ask for, and nothing else. */
class RoutingSuite extends AnyFunSuite with DeltaOracle {

  private def routed(df: org.apache.spark.sql.DataFrame): Boolean = deltaReplayScans(df).nonEmpty

  private def make(path: String, n: Int = 50): Unit =
    spark
      .range(0, n)
      .selectExpr("id", "cast(id % 5 as string) as p")
      .write
      .format("delta")
      .partitionBy("p")
      .save(path)

  test(
    "format(\"delta\"), SQL delta.`path`, catalog tables and time travel read through the connector"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      make(path)
      spark
        .range(50, 60)
        .selectExpr("id", "cast(id % 5 as string) as p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val plain = spark.read.format("delta").load(path)
      assert(routed(plain) && plain.count() === 60)
      assert(deltaReplayScans(plain).head.snapshot.version === 1)
      val sqlPath = spark.sql(s"SELECT * FROM delta.`$path` WHERE p = '1'")
      assert(routed(sqlPath) && sqlPath.count() === 12)
      val travelled = spark.sql(s"SELECT * FROM delta.`$path` VERSION AS OF 0")
      assert(routed(travelled) && travelled.count() === 50)
      val byOption = spark.read.format("delta").option("versionAsOf", 0).load(path)
      assert(routed(byOption) && byOption.count() === 50)
      spark.sql(s"CREATE TABLE routed_catalog_table USING delta LOCATION '$path'")
      try {
        val t = spark.table("routed_catalog_table")
        assert(routed(t) && t.count() === 60)
        // count(*) of a routed table is answered from the log's statistics by this connector.
        val counted = spark.sql("SELECT count(*) FROM routed_catalog_table")
        assert(counted.queryExecution.executedPlan.toString.contains("aggregates from log"))
        assert(counted.head().getLong(0) === 60L)
        assert(routed(spark.sql("SELECT count(id) FROM routed_catalog_table WHERE id > 3")))
      } finally spark.sql("DROP TABLE routed_catalog_table")
    }
  }

  test("a query reads one version, the newest at its execution: a self-join after a commit") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      make(path, 10)
      val left = spark.read.format("delta").load(path)
      spark
        .range(100, 110)
        .selectExpr("id", "'x' as p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val joined = left.as("a").join(left.as("b"), "id")
      assert(routed(joined))
      assert(deltaReplayScans(joined).map(_.snapshot.version).toSet === Set(1L))
      val oracle = v1(path).as("a").join(v1(path).as("b"), "id")
      assert(joined.count() === 20 && oracle.count() === 20)
    }
  }

  test(
    "MERGE, UPDATE, DELETE (SQL and DeltaTable API) and OPTIMIZE keep working and match the extension-off result"
  ) {
    def workload(path: String): Seq[String] = {
      make(path, 40)
      val t = DeltaTable.forPath(spark, path)
      t.as("t")
        .merge(spark.range(30, 50).selectExpr("id", "'m' as p").as("s"), "t.id = s.id")
        .whenMatched()
        .updateAll()
        .whenNotMatched()
        .insertAll()
        .execute()
      t.update(
        org.apache.spark.sql.functions.expr("id < 5"),
        Map("p" -> org.apache.spark.sql.functions.lit("u"))
      )
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0")
      spark.sql(
        s"MERGE INTO delta.`$path` t USING (SELECT 1000L AS id, 'z' AS p) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
      )
      spark.sql(s"OPTIMIZE delta.`$path`")
      sorted(v1(path))
    }
    withTempDir { dir =>
      val on = workload(dir.getAbsolutePath + "/on")
      val off =
        withConf("spark.deltareplay.enabled" -> "false")(workload(dir.getAbsolutePath + "/off"))
      assert(on === off)
      assert(on.size === 43)
    }
  }

  test(
    "routing off per session and per read; unknown options and change data feed go to delta-spark"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 10)
        .selectExpr("id")
        .write
        .format("delta")
        .option("delta.enableChangeDataFeed", "true")
        .save(path)
      withConf("spark.deltareplay.enabled" -> "false") {
        assert(!routed(spark.read.format("delta").load(path)))
      }
      assert(!routed(spark.read.format("delta").option("deltareplay.route", "false").load(path)))
      assert(!routed(spark.read.format("delta").option("someUnknownOption", "1").load(path)))
      val cdf = spark.read
        .format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .load(path)
      assert(!routed(cdf))
      assert(cdf.columns.contains("_change_type"))
      assert(routed(spark.read.format("delta").load(path)))
    }
  }

  test("writes go to delta-spark unchanged: INSERT ... SELECT and CTAS from a routed read") {
    withTempDir { dir =>
      val src = dir.getAbsolutePath + "/src"
      make(src, 20)
      val dst = dir.getAbsolutePath + "/dst"
      spark.read.format("delta").load(src).where("id < 10").write.format("delta").save(dst)
      spark.sql(s"INSERT INTO delta.`$dst` SELECT * FROM delta.`$src` WHERE id >= 15")
      assert(sorted(v1(dst)) === sorted(v1(src).where("id < 10 OR id >= 15")))
    }
  }
}
