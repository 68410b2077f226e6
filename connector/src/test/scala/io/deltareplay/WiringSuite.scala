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
      assert(spark.conf.get("spark.sql.shuffle.partitions") === "2")
      assert(spark.sparkContext.getConf.get("spark.ui.enabled") === "false")
    }
  }

  test("the oracle compares typed values: floating point by its bits, binary by its bytes") {
    import io.deltareplay.test.DeltaOracle.typed
    assert(typed(-0.0) != typed(0.0))
    assert(typed(Double.NaN) == typed(Double.NaN))
    assert(typed(-0.0f) != typed(0.0f) && typed(1.0f) != typed(1.0))
    assert(typed(Array[Byte](1, 2)) == typed(Array[Byte](1, 2)))
    assert(typed(Row(1, Array[Byte](3), Seq(0.0))) != typed(Row(1, Array[Byte](3), Seq(-0.0))))
    assert(typed(Map("k" -> Double.NaN)) == typed(Map("k" -> Double.NaN)))
    assert(typed(BigDecimal("1.10").bigDecimal) != typed(BigDecimal("1.1").bigDecimal))
  }
}
