package io.deltareplay

import java.io.File

import io.deltareplay.test.{DeltaOracle, LocalClusterSparkSession}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/** The distributed initial snapshot on local-cluster (executors in their own JVMs). */
class StreamingClusterSuite extends AnyFunSuite with LocalClusterSparkSession with DeltaOracle {

  test(
    "an initial snapshot on the executors read in slices, then commits, matches the table; " +
      "readStream.table routes too"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 6).foreach { i =>
        spark
          .range(i * 50, (i + 1) * 50)
          .selectExpr("id", "cast(id % 4 as int) as g")
          .repartition(2)
          .write
          .format("delta")
          .mode("append")
          .option("delta.checkpointInterval", "4")
          .save(path)
      }
      val sink = new File(dir, "sink").getAbsolutePath
      withConf("spark.deltareplay.streaming.snapshotSliceFiles" -> "4")(
        withReplayMode("executors") {
          spark.sql(s"CREATE TABLE stream_src USING delta LOCATION '$path'")
          try {
            val q = spark.readStream
              .option("maxFilesPerTrigger", "3")
              .table("stream_src")
              .writeStream
              .format("delta")
              .option("checkpointLocation", new File(dir, "ckpt").getAbsolutePath)
              .trigger(Trigger.AvailableNow())
              .start(sink)
            q.awaitTermination()
            assert(q.lastProgress.sources.head.description.contains("DeltaReplayMicroBatchStream"))
            val snapshot =
              q.recentProgress.flatMap(p => Option(p.sources.head.metrics.get("snapshot")))
            assert(snapshot.exists(_.contains("read in slices of 4")), snapshot.mkString("; "))
          } finally spark.sql("DROP TABLE stream_src")
        }
      )
      assert(sorted(spark.read.format("delta").load(sink)) === sorted(v1(path)))
    }
  }
}
