package io.deltareplay

import io.deltareplay.test.SharedSparkSession
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/** The build's wiring: Spark, delta-spark and the test JVM options work together. */
class WiringSuite extends AnyFunSuite with SharedSparkSession {

  test("delta-spark writes a table and reads it back") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      val s = spark
      import s.implicits._
      Seq((1, "a"), (2, "b")).toDF("id", "v").write.format("delta").save(path)
      Seq((3, "c")).toDF("id", "v").write.format("delta").mode("append").save(path)
      val rows = spark.read.format("delta").load(path).orderBy("id").collect().toSeq
      assert(rows === Seq(Row(1, "a"), Row(2, "b"), Row(3, "c")))
      assert(spark.conf.get("spark.sql.shuffle.partitions") === "4")
      assert(spark.sparkContext.getConf.get("spark.ui.enabled") === "false")
    }
  }
}
