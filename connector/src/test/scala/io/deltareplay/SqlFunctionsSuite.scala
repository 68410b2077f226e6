package io.deltareplay

import java.io.File

import io.deltareplay.test.DeltaOracle
import org.scalatest.funsuite.AnyFunSuite

/**
 * The SQL functions the extension registers: what a Spark Connect client reads the connector by.
 */
class SqlFunctionsSuite extends AnyFunSuite with DeltaOracle {

  private def metricsOf(query: String): Seq[(Int, String)] =
    spark
      .sql(s"SELECT * FROM delta_replay_scan_metrics(TABLE($query)) ORDER BY scan")
      .collect()
      .map(r => (r.getInt(0), r.getString(1)))
      .toSeq

  test("delta_replay_version() is the jar's version") {
    val v = spark.sql("SELECT delta_replay_version()").head().getString(0)
    assert(v === DeltaReplay.version)
    assert(v.matches("""\d+\.\d+\.\d+.*"""), v)
    val described = spark.sql("DESCRIBE FUNCTION delta_replay_version").collect().mkString("\n")
    assert(described.contains("The version of the delta-replay connector"), described)
    val e = intercept[Exception](spark.sql("SELECT delta_replay_version(1)").collect())
    assert(causeMessages(e).contains("delta_replay_version takes no argument"), causeMessages(e))
  }

  test("delta_replay_scan_metrics(TABLE(query)) gives each scan's metrics, as scanMetricsJson") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 3).foreach { i =>
        spark
          .range(i * 10, (i + 1) * 10)
          .coalesce(1)
          .write
          .format("delta")
          .mode("append")
          .save(path)
      }
      val query = s"SELECT * FROM delta.`$path` WHERE id < 5"
      val Seq((0, json)) = metricsOf(query)
      assert(json.contains("\"liveFiles\":3") && json.contains("\"filesAfterSkipping\":1"), json)
      // the same figures as the DataFrame entry point
      val fromDf = DeltaReplay.scanMetricsJson(spark.sql(query))
      assert(fromDf.contains("\"filesAfterSkipping\":1"), fromDf)
      // a temp view (what a Connect client's spark.sql("... {df} ...", df=df) makes), two scans
      spark
        .sql(s"SELECT a.id FROM delta.`$path` a JOIN delta.`$path` b USING (id)")
        .createOrReplaceTempView("joined")
      try assert(metricsOf("joined").map(_._1) === Seq(0, 1))
      finally spark.catalog.dropTempView("joined")
      // a plan without a delta-replay scan: no row
      assert(metricsOf("SELECT 1 AS x").isEmpty)
      // a wrong call says what the function takes
      val e =
        intercept[Exception](spark.sql("SELECT * FROM delta_replay_scan_metrics(1)").collect())
      assert(causeMessages(e).contains("takes one TABLE(...) argument"), causeMessages(e))
    }
  }
}
