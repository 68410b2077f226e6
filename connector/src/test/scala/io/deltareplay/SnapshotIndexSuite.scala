package io.deltareplay

import scala.util.Random

import io.deltareplay.internal.index.IndexCache
import io.deltareplay.internal.log.{LogReader, TableSnapshot}
import io.deltareplay.internal.replay.{LocalReplay, TailPrefetch}
import io.deltareplay.test.{DeltaOracle, LogFixtures}
import org.apache.spark.sql.delta.DeltaLog
import org.scalatest.funsuite.AnyFunSuite

/**
 * The snapshot index and its cache, in both homes: after every commit of a random sequence of
 * writes, the index rolled forward holds the live files a full replay gives and V1 sees, and
 * skipping on it gives V1's rows for generated predicates.
 */
class SnapshotIndexSuite extends AnyFunSuite with DeltaOracle {

  private def modeOf(path: String, version: Option[Long] = None): String = {
    val opts = version.fold(Map.empty[String, String])(v => Map("versionAsOf" -> v.toString))
    deltaReplayScans(ours(path, opts)).head.metrics.replayMode
  }

  private def autoFiles(path: String, version: Long): Set[String] =
    ourLiveFiles(path, version, "auto")

  /** The homes an index may live in: the settings that put it there. */
  private val homes = Map(
    "driver" -> Seq("spark.deltareplay.planning.mode" -> "driver"),
    "executors" -> Seq("spark.deltareplay.planning.mode" -> "executors")
  )

  private def randomHistory(
      path: String,
      seed: Long,
      threshold: String,
      home: String = "driver",
      commits: Int = 8
  ): Unit = withConf(homes(home): _*) {
    IndexCache.clear(spark)
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
    val ops = Seq(
      "append",
      "delete",
      "update",
      "optimize",
      "overwrite",
      "append",
      "delete",
      "merge",
      "addColumn"
    )
    var columns = Seq("id", "id % 4 AS p")
    withConf("spark.deltareplay.replay.distributedThresholdBytes" -> threshold) {
      assert(autoFiles(path, 0) === v1LiveFiles(path, 0))
      // every kind of commit once (in a seeded order), then one drawn at random
      val steps = (rnd.shuffle(ops.distinct) :+ ops(rnd.nextInt(ops.size))).take(commits)
      steps.zipWithIndex.foreach { case (op, i) =>
        val step = i + 1
        op match {
          case "append" =>
            spark
              .range(next, next + 50)
              .selectExpr(columns: _*)
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
              .selectExpr(columns: _*)
              .repartition(3)
              .write
              .format("delta")
              .mode("overwrite")
              .save(path)
            next += 80
          case "merge" =>
            spark.range(next - 30, next + 20).selectExpr(columns: _*).createOrReplaceTempView("src")
            spark.sql(
              s"MERGE INTO delta.`$path` t USING src ON t.id = src.id " +
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
            next += 20
          case "addColumn" if columns.size == 2 =>
            spark.sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (extra STRING)")
            columns = columns :+ "concat('x', id) AS extra"
          case "addColumn" => spark.sql(s"DELETE FROM delta.`$path` WHERE id % 13 = 0")
        }
        DeltaLog.clearCache()
        val v = latestVersion(path)
        val expected = v1LiveFiles(path, v)
        val mode = modeOf(path)
        if (mode.startsWith("incremental")) incremental += 1
        assert(autoFiles(path, v) === expected, s"step $step ($op): auto ($mode) differs at v$v")
        assert(ourLiveFiles(path, v, "local") === expected, s"step $step ($op): full replay")
        if (step % 4 == 0) {
          if (home == "driver") assertSameAsV1(path, modes = Seq("auto"))
          else assert(sorted(ours(path)) === sorted(v1(path)), s"step $step ($op)")
        }
        // skipping on the rolled-forward index: generated predicates give V1's rows
        val id = rnd.nextInt(next.toInt)
        Seq(s"id = $id", s"id < $id AND p = ${id % 4}", s"id >= $id OR p IS NULL").foreach { q =>
          assert(
            sorted(ours(path).where(q)) === sorted(v1(path).where(q)),
            s"step $step ($op): $q ($mode, $home)"
          )
        }
        assert(modeOf(path).startsWith("cached"), s"step $step: the index was not kept ($home)")
      }
      // Each step reads the newest version right after one commit: rolled forward, not
      // replayed (an overwrite and a new column may rebuild it).
      assert(
        incremental >= steps.size - 2,
        s"only $incremental of ${steps.size} reads rolled the cached state forward"
      )
    }
  }

  test(
    "random appends, DV deletes and updates, MERGE, OPTIMIZE, overwrite, new columns, " +
      "checkpoints: index on the driver, built locally"
  ) {
    withTempDir(dir =>
      randomHistory(dir.getAbsolutePath + "/t", seed = 7, threshold = "1000000000")
    )
  }

  test("the same, index on the driver built by a distributed replay") {
    // what differs from the test above is how the index is built: five commits of the history
    withTempDir { dir =>
      randomHistory(dir.getAbsolutePath + "/t", seed = 11, threshold = "0", commits = 5)
    }
  }

  test("the same, index on the executors") {
    withTempDir { dir =>
      randomHistory(dir.getAbsolutePath + "/t", seed = 13, threshold = "0", home = "executors")
    }
  }

  test("time travel, forced modes, a cold cache and a gap in the log replay in full") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
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
      IndexCache.clear(spark)
      withConf("spark.deltareplay.replay.stateCache.maxBytes" -> "10") {
        assert(modeOf(path) === "local")
        assert(modeOf(path) === "local", "a state over the budget must not be kept")
      }
      assert(IndexCache.usage(spark)._1 === 0)
    }
  }

  test("auto: a log without a checkpoint is replayed on the driver up to tailFastPathMaxBytes") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      (0 until 3).foreach { i =>
        spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(path)
      }
      val threshold = "spark.deltareplay.replay.distributedThresholdBytes" -> "0"
      val tail = "spark.deltareplay.replay.tailFastPathMaxBytes"
      def fresh(): String = { IndexCache.clear(spark); modeOf(path) }
      withConf(threshold) {
        assert(fresh() === "local", "commits only, within the fast path's bound")
        assertSameAsV1(path, modes = Seq("auto"))
        withConf(tail -> "0")(assert(fresh().startsWith("distributed")))
        DeltaLog.forTable(spark, path).checkpoint()
        spark.range(30, 40).write.format("delta").mode("append").save(path)
        DeltaLog.clearCache()
        assert(fresh().startsWith("distributed"), "a checkpoint and its tail: the fast path")
      }
      withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "1000000000") {
        assert(fresh() === "local")
      }
    }
  }

  test("the commits after a checkpoint are parsed ahead of need when a DataFrame is created") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark.range(0, 40, 1, 4).write.format("delta").save(path)
      DeltaLog.forTable(spark, path).checkpoint()
      spark.range(40, 60, 1, 2).write.format("delta").mode("append").save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0")
      IndexCache.clear(spark)
      def fresh(withStats: Boolean) = {
        val segment = TableSnapshot.load(spark, path, None, None, sessionConf.log).segment
        (
          segment,
          LocalReplay.reconcile(
            new LogReader(spark, segment, sessionConf.log),
            segment.paths,
            withStats
          )
        )
      }
      val (segment, expected) = fresh(withStats = true)
      assert(expected.count > 0 && !expected.winners.isEmpty)

      // format("delta").load starts it; the replay's take gets the same reconciled commits, once
      spark.read.format("delta").load(path)
      val taken = TailPrefetch.take(spark, segment, withStats = true)
      assert(taken.map(_.winners) === Some(expected.winners))
      assert(taken.map(_.count) === Some(expected.count))
      assert(TailPrefetch.take(spark, segment, withStats = true).isEmpty)

      // a reader that needs no statistics gets them left out; one that needs them never gets a
      // parse made without them
      spark.read.format("delta").load(path)
      val withoutStats = TailPrefetch.take(spark, segment, withStats = false)
      assert(withoutStats.map(_.winners) === Some(fresh(withStats = false)._2.winners))
      spark.readStream.format("delta").load(path)
      assert(TailPrefetch.take(spark, segment, withStats = true).isEmpty)

      // a commit after the DataFrame's creation: the next version parses its own commits
      spark.read.format("delta").load(path)
      spark.range(60, 70, 1, 1).write.format("delta").mode("append").save(path)
      assert(TailPrefetch.take(spark, fresh(withStats = true)._1, withStats = true).isEmpty)

      // and reads through it answer as V1, with the prefetch on and off
      IndexCache.clear(spark)
      assertSameAsV1(path, query = _.where("id > 30"), modes = Seq("auto"))
      withConf("spark.deltareplay.replay.prefetchTail" -> "false") {
        IndexCache.clear(spark)
        spark.read.format("delta").load(path)
        assert(TailPrefetch.take(spark, fresh(withStats = true)._1, withStats = true).isEmpty)
      }
    }
  }

  test("a filtered read needs statistics: a state kept without them is not used for it") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
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

  test("a table recreated at the same path or replaced never reuses a stale index; sessions") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
      (0 until 3).foreach(i =>
        spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(path)
      )
      assert(ours(path).count() === 30 && modeOf(path).startsWith("cached (v2)"))
      // deleted and written again: a new table id, and a newer version than the cached one
      org.apache.commons.io.FileUtils.deleteDirectory(new java.io.File(path))
      DeltaLog.clearCache()
      (0 until 4).foreach(i =>
        spark.range(500 + i, 501 + i).write.format("delta").mode("append").save(path)
      )
      assert(modeOf(path) === "local", "another table id must not roll forward the old index")
      assert(sorted(ours(path)) === sorted(v1(path)))
      // replaced in place (overwrite with a new schema): rolled forward, the old files gone
      spark
        .range(0, 7)
        .selectExpr("id", "'x' AS s")
        .write
        .format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .save(path)
      assert(sorted(ours(path)) === sorted(v1(path)))
      assert(ours(path).count() === 7)
      // two sessions: each query reads the newest version; a pinned read keeps its version
      val other = spark.newSession()
      def count(s: org.apache.spark.sql.SparkSession, opts: Map[String, String] = Map.empty) =
        s.read.format("delta-replay").options(opts).load(path).count()
      assert(count(other) === 7 && count(spark) === 7)
      spark.range(7, 9).selectExpr("id", "'y' AS s").write.format("delta").mode("append").save(path)
      assert(count(other) === 9 && count(spark) === 9)
      assert(count(other, Map("versionAsOf" -> "4")) === 7)
      assert(count(spark) === 9)
    }
  }
}
