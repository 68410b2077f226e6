package io.deltareplay

import java.io.File

import io.deltareplay.test.{DeltaOracle, LocalClusterSparkSession}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/** The distributed initial snapshot on local-cluster (executors in their own JVMs). */
class StreamingClusterSuite extends AnyFunSuite with LocalClusterSparkSession with DeltaOracle {

  /**
   * `n` appends of `rows` ids each (commit i holds ids [i * rows, (i + 1) * rows)), checkpoint
   * every 4.
   */
  private def commits(path: String, n: Int, rows: Int, files: Int): Unit =
    (0 until n).foreach { i =>
      spark
        .range(i * rows, (i + 1) * rows)
        .selectExpr("id", "cast(id % 4 as int) as g")
        .repartition(files)
        .write
        .format("delta")
        .mode("append")
        .option("delta.checkpointInterval", "4")
        .save(path)
    }

  test(
    "an initial snapshot on the executors read in slices, then commits, matches the table; " +
      "readStream.table routes too"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      commits(path, 6, rows = 50, files = 2)
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

  test(
    "a query killed in random micro-batches of a snapshot on the executors resumes losing and " +
      "repeating nothing (Delta sink)"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      commits(path, 5, rows = 40, files = 3)
      // A batch dies in a task on an executor while it reads one chosen id: the batch's offsets
      // are in the offset log, its data not in the sink; the restart re-plans that batch from the
      // offsets alone. The ids come from later and later commits, so each run dies once.
      val seed = System.nanoTime()
      val rnd = new scala.util.Random(seed)
      val killIds =
        rnd.shuffle((1 until 5).toList).take(3).sorted.map(c => c * 40L + rnd.nextInt(40))
      val marker = new File(dir, "kill").getAbsolutePath
      val sink = new File(dir, "sink").getAbsolutePath
      val ckpt = new File(dir, "ckpt").getAbsolutePath
      def run(killAt: Option[Long]): Boolean = {
        val target = killAt.getOrElse(-1L)
        val die = org.apache.spark.sql.functions.udf { (id: Long) =>
          if (id == target && new File(marker).exists()) throw new IllegalStateException("killed")
          id
        }
        killAt.foreach(_ => new File(marker).createNewFile())
        val q = spark.readStream
          .format("delta")
          .option("maxFilesPerTrigger", "2")
          .load(path)
          .select(
            die(org.apache.spark.sql.functions.col("id")).as("id"),
            org.apache.spark.sql.functions.col("g")
          )
          .writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .trigger(Trigger.AvailableNow())
          .start(sink)
        try { q.awaitTermination(); false }
        catch { case _: org.apache.spark.sql.streaming.StreamingQueryException => true }
        finally new File(marker).delete()
      }
      withConf("spark.deltareplay.streaming.snapshotSliceFiles" -> "4")(
        withReplayMode("executors") {
          val killed = killIds.map(id => run(Some(id)))
          assert(killed.forall(identity), s"seed $seed: kills at $killIds took effect as $killed")
          // a commit after the snapshot, then run to the end
          spark
            .range(1000, 1010)
            .selectExpr("id", "cast(id % 4 as int) as g")
            .write
            .format("delta")
            .mode("append")
            .save(path)
          assert(!run(None))
        }
      )
      assert(sorted(spark.read.format("delta").load(sink)) === sorted(v1(path)), s"seed $seed")
    }
  }
}
