package io.deltareplay

import scala.util.Random

import io.deltareplay.internal.ReplayState
import io.deltareplay.test.{DeltaOracle, LogFixtures}
import org.apache.spark.sql.delta.DeltaLog
import org.scalatest.funsuite.AnyFunSuite

/**
 * The replay state cache: after every commit of a random sequence of writes, rolling the cached
 * state forward gives the live files a full replay gives and V1 sees, and the same rows as V1.
 */
class IncrementalReplaySuite extends AnyFunSuite with DeltaOracle {

  private def modeOf(path: String, version: Option[Long] = None): String = {
    val opts = version.fold(Map.empty[String, String])(v => Map("versionAsOf" -> v.toString))
    deltaReplayScans(ours(path, opts)).head.metrics.replayMode
  }

  private def autoFiles(path: String, version: Long): Set[String] =
    ourLiveFiles(path, version, "auto")

  private def randomHistory(path: String, seed: Long, threshold: String): Unit = {
    ReplayState.clear(spark)
    val rnd = new Random(seed)
    spark
      .range(0, 200)
      .selectExpr("id", "id % 4 AS p")
      .repartition(4)
      .write
      .format("delta")
      .partitionBy("p")
      .option("delta.enableDeletionVectors", "true")
      .option("delta.checkpointInterval", "4")
      .save(path)
    var next = 200L
    var incremental = 0
    val ops = Seq("append", "delete", "update", "optimize", "overwrite", "append", "delete")
    withConf("spark.deltareplay.replay.distributedThresholdBytes" -> threshold) {
      assert(autoFiles(path, 0) === v1LiveFiles(path, 0))
      (1 to 14).foreach { step =>
        val op = ops(rnd.nextInt(ops.size))
        op match {
          case "append" =>
            spark
              .range(next, next + 50)
              .selectExpr("id", "id % 4 AS p")
              .repartition(2)
              .write
              .format("delta")
              .mode("append")
              .save(path)
            next += 50
          case "delete" =>
            spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = ${rnd.nextInt(7)}")
          case "update" =>
            spark.sql(s"UPDATE delta.`$path` SET id = id + 100000 WHERE id % 11 = 3")
          case "optimize" =>
            spark.sql(s"OPTIMIZE delta.`$path`")
          case "overwrite" =>
            spark
              .range(next, next + 80)
              .selectExpr("id", "id % 4 AS p")
              .repartition(3)
              .write
              .format("delta")
              .mode("overwrite")
              .save(path)
            next += 80
        }
        DeltaLog.clearCache()
        val v = latestVersion(path)
        val expected = v1LiveFiles(path, v)
        val mode = modeOf(path)
        if (mode.startsWith("incremental")) incremental += 1
        assert(autoFiles(path, v) === expected, s"step $step ($op): auto ($mode) differs at v$v")
        assert(ourLiveFiles(path, v, "local") === expected, s"step $step ($op): full replay")
        if (step % 5 == 0) assertSameAsV1(path, modes = Seq("auto"))
      }
    }
    // Each step reads the newest version right after one commit: rolled forward, not replayed.
    assert(incremental >= 12, s"only $incremental of 14 reads rolled the cached state forward")
  }

  test("random appends, DV deletes and updates, OPTIMIZE, overwrite, checkpoints: local base") {
    withTempDir(dir =>
      randomHistory(dir.getAbsolutePath + "/t", seed = 7, threshold = "1000000000")
    )
  }

  test("the same with a distributed base replay") {
    withTempDir(dir => randomHistory(dir.getAbsolutePath + "/t", seed = 11, threshold = "0"))
  }

  test("time travel, forced modes, a cold cache and a gap in the log replay in full") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      ReplayState.clear(spark)
      (0 until 6).foreach { i =>
        spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(path)
      }
      assert(modeOf(path) === "local") // cold
      assert(modeOf(path).startsWith("cached (v5)"))
      assert(modeOf(path, Some(2L)) === "local") // older than the cached version
      assert(modeOf(path).startsWith("cached (v5)"), "time travel must not evict the newest state")
      withReplayMode("local")(assert(modeOf(path) === "local")) // forced modes always replay
      spark.range(100, 110).write.format("delta").mode("append").save(path)
      assert(modeOf(path) === "incremental (v5 + 1 commits)")
      assertSameAsV1(path, modes = Seq("auto"))

      // A checkpoint after the cached version, then the commits before it cleaned up: the cached
      // state cannot be rolled forward (commit 7 is gone), so the replay starts at the checkpoint.
      spark.range(110, 120).write.format("delta").mode("append").save(path) // v7
      spark.range(120, 130).write.format("delta").mode("append").save(path) // v8
      DeltaLog.forTable(spark, path).checkpoint()
      assert(LogFixtures.commitFile(path, 7).delete())
      DeltaLog.clearCache()
      assert(modeOf(path) === "local")
      assert(sorted(ours(path)) === sorted(v1(path)))
      assert(ours(path).count() === 90L)

      withConf("spark.deltareplay.replay.stateCache.enabled" -> "false") {
        assert(modeOf(path) === "local")
      }
      ReplayState.clear(spark)
      withConf("spark.deltareplay.replay.stateCache.maxBytes" -> "10") {
        assert(modeOf(path) === "local")
        assert(modeOf(path) === "local", "a state over the budget must not be kept")
      }
      assert(ReplayState.usage(spark)._1 === 0)
    }
  }

  test("a filtered read needs statistics: a state kept without them is not used for it") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      ReplayState.clear(spark)
      spark.range(0, 100, 1, 4).write.format("delta").save(path)
      assert(modeOf(path) === "local") // no filter: replayed without stats
      val filtered = ours(path).where("id = 42")
      assert(deltaReplayScans(filtered).head.metrics.replayMode === "local")
      assert(deltaReplayScans(filtered).head.metrics.filesAfterSkipping === 1)
      // Now the cached state has stats and serves both kinds of read.
      spark.range(100, 200, 1, 2).write.format("delta").mode("append").save(path)
      val again = ours(path).where("id = 142")
      assert(deltaReplayScans(again).head.metrics.replayMode.startsWith("incremental"))
      assert(deltaReplayScans(again).head.metrics.filesAfterSkipping === 1)
      assert(again.collect().map(_.getLong(0)).toSeq === Seq(142L))
    }
  }
}
