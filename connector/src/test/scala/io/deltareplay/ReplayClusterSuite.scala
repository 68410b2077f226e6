package io.deltareplay

import scala.collection.mutable

import io.deltareplay.test.{DeltaOracle, LocalClusterSparkSession}
import org.apache.spark.scheduler.{SparkListener, SparkListenerJobStart, SparkListenerTaskEnd}
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite

/** Distributed replay on local-cluster: replay tasks run in executor JVMs, results match V1. */
class ReplayClusterSuite extends AnyFunSuite with LocalClusterSparkSession with DeltaOracle {

  /**
   * The table the tests read, written once for the suite (writes on local-cluster are its slowest
   * part): six appends with DVs enabled and checkpoints every three commits, then a DELETE. A test
   * that commits to it works on a copy ([[copyOfTable]]).
   */
  private lazy val tableDir = java.nio.file.Files.createTempDirectory("replay-cluster").toFile

  private lazy val sharedTable: String = {
    val path = tableDir.getAbsolutePath + "/t"
    (0 until 6).foreach { i =>
      spark
        .range(i * 100, (i + 1) * 100)
        .selectExpr("id", "cast(id % 4 as int) as g")
        .repartition(2)
        .write
        .format("delta")
        .mode("append")
        .option("delta.checkpointInterval", "3")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
    }
    spark.sql(s"DELETE FROM delta.`$path` WHERE id % 9 = 0").collect()
    path
  }

  /** A copy of the shared table under `dir` (its log and data files: paths are relative). */
  private def copyOfTable(dir: java.io.File): String = {
    val copy = new java.io.File(dir, "t")
    org.apache.commons.io.FileUtils.copyDirectory(new java.io.File(sharedTable), copy)
    copy.getAbsolutePath
  }

  override protected def afterAll(): Unit =
    try org.apache.commons.io.FileUtils.deleteQuietly(tableDir)
    finally super.afterAll()

  test("distributed replay runs in executor JVMs and matches V1") {
    withTempDir { dir =>
      val path = sharedTable

      val replayExecutors = mutable.Set.empty[String]
      val replayJobs = mutable.Set.empty[Int]
      val stageToJob = mutable.Map.empty[Int, Int]
      val listener = new SparkListener {
        override def onJobStart(e: SparkListenerJobStart): Unit = synchronized {
          val group = Option(e.properties).map(_.getProperty("spark.jobGroup.id")).orNull
          if (group != null && group.startsWith("delta-replay-")) {
            replayJobs += e.jobId
            e.stageIds.foreach(s => stageToJob(s) = e.jobId)
          }
        }
        override def onTaskEnd(e: SparkListenerTaskEnd): Unit = synchronized {
          if (stageToJob.contains(e.stageId)) replayExecutors += e.taskInfo.executorId
        }
      }
      spark.sparkContext.addSparkListener(listener)
      try {
        Seq("0", "67108864").foreach { tail =>
          withConf("spark.deltareplay.replay.tailFastPathMaxBytes" -> tail) {
            val m = assertSameAsV1(path, modes = Seq("distributed"))
            assert(m("distributed").replayTasks > 0)
          }
        }
        // the modes whose work runs in the executor JVMs (the driver's local replay: local suites)
        assertSameAsV1(
          path,
          query = _.where("g = 2 AND id > 250"),
          modes = Seq("distributed", "executors")
        )
        // a first filtered read with no index: the checkpoint is read in two passes, the second
        // decoding only the rows of the files the filter keeps
        val wide = dir.getAbsolutePath + "/wide"
        spark.range(0, 600).repartitionByRange(60, col("id")).write.format("delta").save(wide)
        org.apache.spark.sql.delta.DeltaLog.forTable(spark, wide).checkpoint()
        withConf(
          "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
          "spark.deltareplay.replay.stateCache.enabled" -> "false"
        ) {
          val df = ours(wide).where("id = 250")
          assert(sorted(df) === sorted(v1(wide).where("id = 250")))
          val mode = deltaReplayScans(df).head.metrics.replayMode
          assert(mode.contains("checkpoint filtered by the query: 1 of "), mode)
          // a count(*) with no index: counted in the replay's tasks, without the checkpoint files
          // the commits after it removed (their keys broadcast to the executor JVMs)
          spark.sql(s"DELETE FROM delta.`$wide` WHERE id % 7 = 0").collect()
          spark.range(600, 650).write.format("delta").mode("append").save(wide)
          val counted = ours(wide).selectExpr("count(*)")
          assert(counted.collect().toSeq === v1(wide).selectExpr("count(*)").collect().toSeq)
          val how = DeltaReplay.scanMetricsJson(counted)
          assert(how.contains("counted in the replay tasks"), how)
        }
      } finally {
        org.apache.spark.SparkPrivateAccess.waitUntilEmpty(spark.sparkContext)
        spark.sparkContext.removeSparkListener(listener)
      }
      assert(replayJobs.nonEmpty, "no replay job ran")
      assert(
        replayExecutors.nonEmpty && !replayExecutors.contains("driver"),
        s"replay tasks ran on $replayExecutors"
      )
    }
  }

  test("planning on the executors: manifests written and expanded in executor JVMs match V1") {
    val path = sharedTable
    io.deltareplay.internal.index.IndexCache.clear(spark) // the test before kept this table's state
    // Small splits: files span several bins, bins hold several splits, DV files among them.
    withConf(
      "spark.sql.files.maxPartitionBytes" -> "2048",
      "spark.sql.files.openCostInBytes" -> "512"
    ) {
      var skipped = 0L
      Seq[org.apache.spark.sql.DataFrame => org.apache.spark.sql.DataFrame](
        identity,
        _.where("g = 1"),
        _.where("id BETWEEN 120 AND 260")
      ).foreach { query =>
        val runs = assertSameAsV1(path, query = query, modes = Seq("local", "executors"))
        val (m, onDriver) = (runs("executors"), runs("local"))
        assert(m.planning.startsWith("executors"), m)
        // the live files V1 sees, pruned and skipped exactly as planning on the driver does
        assert(m.liveFiles === v1LiveFiles(path, latestVersion(path)).size, m)
        assert(m.filesAfterSkipping === onDriver.filesAfterSkipping, s"$m\n$onDriver")
        assert(m.filesAfterPartitionPruning === onDriver.filesAfterPartitionPruning, m)
        skipped += m.liveFiles - m.filesAfterSkipping
      }
      assert(skipped > 0, "no query skipped a file: the filters test nothing")
    }
    // count(*) from the statistics, folded in the executor JVMs (DVs subtracted).
    withConf("spark.deltareplay.planning.mode" -> "executors") {
      val df = ours(path).selectExpr("count(*)")
      val plan = df.queryExecution.executedPlan.toString
      assert(plan.contains("aggregates from log statistics") && plan.contains("executors"), plan)
      assert(df.collect().head.getLong(0) === v1(path).count())
    }
  }

  test("the snapshot index on the executors, rolled forward by new commits, matches V1") {
    withTempDir { dir =>
      val path = copyOfTable(dir) // this test commits to it
      io.deltareplay.internal.index.IndexCache.clear(spark)
      withConf(
        "spark.deltareplay.replay.mode" -> "auto",
        "spark.deltareplay.planning.mode" -> "executors"
      ) {
        val query = (df: org.apache.spark.sql.DataFrame) => df.where("id > 5")
        assert(sorted(query(ours(path))) === sorted(query(v1(path))))
        spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0").collect() // DVs on DV files
        spark
          .range(1000, 1040)
          .selectExpr("id", "cast(id % 4 as int) as g")
          .write
          .format("delta")
          .mode("append")
          .save(path)
        val again = query(ours(path))
        val m = deltaReplayScans(again).head.metrics
        assert(m.replayMode.startsWith("incremental"), m)
        assert(m.planning.startsWith("executors"), m)
        assert(sorted(again) === sorted(query(v1(path))))
      }
    }
  }
}
