package io.deltareplay

import io.deltareplay.internal.index.{IndexBuilds, IndexCache}
import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite

/**
 * The first filtered read of a table with no index: it reads only the checkpoint rows its filters
 * may keep (typed or JSON-only statistics, in one or two passes), answers as V1, and leaves the
 * whole index to a background build that no later query waits for.
 */
class FirstReadSuite extends AnyFunSuite with DeltaOracle {

  test(
    "a first read with filters and no index reads only the checkpoint adds they may match; the " +
      "index follows in the background; later versions roll the narrowed files forward; an index " +
      "over the cache budget is not built again"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
      spark
        .range(0, 400)
        .selectExpr("id", "id % 4 AS p")
        .repartitionByRange(16, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3") // DVs, in the checkpoint
      DeltaLog.forTable(spark, path).checkpoint()
      // after the checkpoint: a DV update of checkpoint files, an append, a remove
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 7")
      spark
        .range(400, 450)
        .selectExpr("id", "id % 4 AS p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 25")
      val live = v1LiveFiles(path, latestVersion(path)).size
      val queries = Seq("id = 142", "id > 380 AND p = 1", "id < 30 OR id = 420", "p = 2")
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.index.buildInBackground" -> "false"
      ) {
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === sorted(v1(path).where(q)), q)
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.contains("checkpoint filtered by the query"), s"$q: $m")
          assert(m.index.startsWith("narrowed"), s"$q: $m")
          assert(m.liveFiles < live, s"$q: $m") // only what the filters may match
          // the checkpoint's adds through stats_parsed, the tail's from their JSON statistics
          // (TailFilter): as narrow as skipping on the entries
          assert(m.liveFiles === m.filesAfterSkipping, s"$q: $m")
        }
        assert(IndexCache.usage(spark)._1 === 0) // no index of the whole version kept
        // The same query again plans from the files its first read narrowed to; another query
        // of the same version reads the checkpoint again.
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === sorted(v1(path).where(q)), s"again: $q")
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.startsWith("reused: v4 read before with the same filters"), m)
          assert(m.replayTasks === 0 && m.liveFiles < live, s"again: $q: $m")
        }
        val other = ours(path).where("id = 143")
        assert(sorted(other) === sorted(v1(path).where("id = 143")))
        assert(deltaReplayScans(other).head.metrics.replayMode.startsWith("distributed"))
        // no filter: the whole index, kept, without statistics: the filtered reads still plan
        // from what they narrowed to
        assert(sorted(ours(path)) === sorted(v1(path)))
        assert(deltaReplayScans(ours(path)).head.metrics.replayMode === "cached (v4)")
        val filtered = ours(path).where(queries.head)
        assert(sorted(filtered) === sorted(v1(path).where(queries.head)))
        assert(deltaReplayScans(filtered).head.metrics.replayMode.startsWith("reused: v4"))
      }
      // with the background build: the next reads find the index
      IndexCache.clear(spark)
      withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "0") {
        val df = ours(path).where("id = 142")
        assert(sorted(df) === sorted(v1(path).where("id = 142")))
        val scan = deltaReplayScans(df).head
        assert(scan.metrics.replayMode.contains("checkpoint filtered by the query"))
        awaitIndexBuild(scan.snapshot)
        val again = ours(path).where("id = 143")
        assert(deltaReplayScans(again).head.metrics.replayMode === "cached (v4)")
        assert(sorted(again) === sorted(v1(path).where("id = 143")))
      }
      // off: every read replays in full
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.replay.stateCache.enabled" -> "false",
        "spark.deltareplay.replay.filterCheckpoint" -> "false"
      ) {
        val df = ours(path).where("id = 142")
        assert(deltaReplayScans(df).head.metrics.replayMode === "distributed (map-side filter)")
        assert(deltaReplayScans(df).head.metrics.liveFiles === live)
      }
      // After commits, a read with the same filters rolls the narrowed index forward by them
      // instead of reading the checkpoint again; after a change of metadata it reads it again.
      IndexCache.clear(spark)
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.index.buildInBackground" -> "false"
      ) {
        queries.foreach(q => sorted(ours(path).where(q))) // narrowed at v4, kept
        // DVs on files the filters kept (v5), and new files some of them match (v6)
        spark.sql(s"DELETE FROM delta.`$path` WHERE id IN (142, 381, 421)").collect()
        spark
          .range(140, 145)
          .selectExpr("id", "id % 4 AS p")
          .write
          .format("delta")
          .mode("append")
          .save(path)
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === sorted(v1(path).where(q)), s"after two commits: $q")
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.startsWith("incremental (narrowed index of v4,"), s"$q: $m")
          assert(m.replayTasks === 0 && m.index.startsWith("narrowed"), s"$q: $m")
        }
        spark.sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (extra STRING)").collect()
        val df = ours(path).where(queries(1))
        assert(sorted(df) === sorted(v1(path).where(queries(1))))
        val m = deltaReplayScans(df).head.metrics
        assert(m.replayMode.contains("checkpoint filtered by the query"), m)
      }
      // An index bigger than the cache budget is built once in the background, stopped as it
      // passes the budget, and not kept; later versions do not build it again under that budget (a
      // bigger one does).
      IndexCache.clear(spark)
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.replay.stateCache.maxBytes" -> "1"
      ) {
        def read() = {
          val df = ours(path).where(queries(1))
          assert(sorted(df) === sorted(v1(path).where(queries(1))))
          deltaReplayScans(df).head
        }
        val stopped = IndexBuilds.stoppedOverBudget.get
        val s = read().snapshot
        def running(v: Long) = IndexBuilds.isRunning(spark, s.segment.paths.root, s.meta.tableId, v)
        val deadline = System.nanoTime() + 120L * 1000000000L
        while (running(s.version) && System.nanoTime() < deadline) Thread.sleep(50)
        assert(!running(s.version) && IndexCache.usage(spark)._1 === 0)
        // the build stopped once its chunks on the driver passed the budget, not at its end
        assert(IndexBuilds.stoppedOverBudget.get === stopped + 1)
        val hold = new java.util.concurrent.CountDownLatch(1)
        IndexBuilds.observer = io.deltareplay.test.BuildHolds.beforeStart(hold)
        try {
          spark
            .range(450, 460)
            .selectExpr("id", "id % 4 AS p")
            .write
            .format("delta")
            .mode("append")
            .save(path)
          val m = read().metrics
          assert(m.replayMode.startsWith(s"incremental (narrowed index of v${s.version},"), m)
          assert(!running(s.version + 1), "a build over the budget started again")
          withConf("spark.deltareplay.replay.stateCache.maxBytes" -> (1L << 30).toString) {
            read()
            assert(running(s.version + 1), "a bigger budget did not build the index")
          }
        } finally {
          IndexBuilds.observer = IndexBuilds.Observer.Nothing
          hold.countDown()
        }
      }
    }
  }

  test(
    "a first filtered read decodes in full only the checkpoint rows its filters may keep (row " +
      "groups, pages, strings, nulls, timestamps, partitions, deletion vectors)"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 600)
        .selectExpr(
          "id",
          "cast(id % 3 as string) AS p",
          "IF(id % 7 = 0, NULL, concat('s', id)) AS s",
          "timestamp_micros(1700000000000000 + id * 1000003) AS ts"
        )
        .repartitionByRange(60, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 50 = 1").collect() // DVs in the checkpoint
      // a checkpoint of many small row groups and pages, so that rows are picked inside pages
      withConf(
        "parquet.block.size" -> "4096",
        "parquet.page.size" -> "512",
        "parquet.page.row.count.limit" -> "16"
      )(org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).checkpoint())
      val checkpoint = new java.io.File(path, "_delta_log")
        .listFiles()
        .find(_.getName.endsWith(".checkpoint.parquet"))
        .get
      val in = org.apache.parquet.hadoop.util.HadoopInputFile
        .fromPath(
          new org.apache.hadoop.fs.Path(checkpoint.getPath),
          spark.sessionState.newHadoopConf()
        )
      val reader = org.apache.parquet.hadoop.ParquetFileReader.open(in)
      val (rowGroups, rows) =
        try (reader.getRowGroups.size, reader.getRecordCount)
        finally reader.close()
      assert(rowGroups > 1, s"$rowGroups row groups")
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 30").collect() // after the checkpoint
      spark
        .range(600, 640)
        .selectExpr("id", "'1' AS p", "concat('s', id) AS s", "timestamp_micros(0) AS ts")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val selective = Seq(
        "id = 142",
        "id BETWEEN 300 AND 305 AND p = '1'",
        "s = 's77'",
        "s IS NULL AND id BETWEEN 50 AND 59",
        "ts > timestamp_micros(1700000000000000 + 590 * 1000003)"
      )
      val broad = "id < 400 OR p = '2'" // most rows: the file is read whole
      val Decoded = """.*checkpoint filtered by the query: ([\d,]+) of ([\d,]+) rows decoded.*""".r
      def read(q: String, twoPass: Boolean) =
        withConf(
          "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
          "spark.deltareplay.replay.stateCache.enabled" -> "false",
          "spark.deltareplay.replay.filterCheckpoint.twoPass" -> twoPass.toString,
          // splits of a few row groups each: positions count from each split's first row
          "spark.sql.files.maxPartitionBytes" -> (if (twoPass) "2048" else "134217728")
        ) {
          val df = ours(path).where(q)
          (sorted(df), deltaReplayScans(df).head.metrics)
        }
      (selective :+ broad).foreach { q =>
        val expected = sorted(v1(path).where(q))
        val (twoPass, m) = read(q, twoPass = true)
        assert(twoPass === expected, q)
        val (decoded, seen) = m.replayMode match {
          case Decoded(d, r) => (d.replace(",", "").toLong, r.replace(",", "").toLong)
          case other => fail(s"$q: $other")
        }
        assert(seen === rows && m.replayTasks > rowGroups, s"$q: $m") // split by 2 KB
        if (q == broad) assert(decoded === rows, s"$q: $m")
        else assert(decoded > 0 && decoded * 10 < rows, s"$q: $m")
        // one pass: the same rows, and the same files narrowed to and skipped
        val (onePass, m1) = read(q, twoPass = false)
        assert(onePass === expected, q)
        assert(m1.replayMode.endsWith("checkpoint filtered by the query)"), m1)
        assert((m.liveFiles, m.filesAfterSkipping) === ((m1.liveFiles, m1.filesAfterSkipping)), q)
      }
    }
  }

  test(
    "a first filtered read of a log of commits only, replayed on the driver, builds entries only " +
      "for the files its filters may match; a small log is indexed whole"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      IndexCache.clear(spark)
      spark
        .range(0, 400)
        .selectExpr("id", "id % 4 AS p", "concat('s', id) AS s")
        .repartitionByRange(16, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .option("delta.checkpointInterval", "1000")
        .save(path)
      // no checkpoint: DVs, an append, removes, rewritten files (RESTORE would write one)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3")
      spark
        .range(400, 450)
        .selectExpr("id", "id % 4 AS p", "concat('s', id) AS s")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 25")
      spark.sql(s"UPDATE delta.`$path` SET s = 'u' WHERE id BETWEEN 200 AND 210")
      val logFiles = new java.io.File(path, "_delta_log").list().toSeq.sorted
      assert(!logFiles.exists(_.contains("checkpoint")), logFiles)
      val live = v1LiveFiles(path, latestVersion(path)).size
      val queries = Seq("id > 380 AND p = 1", "id < 30 OR id = 142", "s = 's7'")
      def v1Answers() = queries.map(q => q -> sorted(v1(path).where(q))).toMap
      val before = v1Answers()
      var after = before
      // a log of commits only over replay.distributedThresholdBytes (0 here): replayed on the
      // driver (within replay.tailFastPathMaxBytes), narrowed there
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.index.buildInBackground" -> "false"
      ) {
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === before(q), q)
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.startsWith("local (filtered by the query: entries for"), s"$q: $m")
          assert(m.replayTasks === 0 && m.index.startsWith("narrowed"), s"$q: $m")
          assert(m.liveFiles < live && m.liveFiles === m.filesAfterSkipping, s"$q: $m")
        }
        assert(IndexCache.usage(spark)._1 === 0) // no index of the whole version kept
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === before(q), s"again: $q")
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.startsWith("reused: v"), s"again: $q: $m")
        }
        // after a commit: the narrowed files rolled forward by it
        spark.sql(s"DELETE FROM delta.`$path` WHERE id IN (142, 381, 421)").collect()
        after = v1Answers()
        queries.foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === after(q), s"after a commit: $q")
          val m = deltaReplayScans(df).head.metrics
          assert(m.replayMode.startsWith("incremental (narrowed index of v"), s"$q: $m")
        }
        // without a filter: the whole index, replayed on the driver
        assert(sorted(ours(path)) === sorted(v1(path)))
        assert(deltaReplayScans(ours(path)).head.metrics.replayMode.startsWith("cached"))
      }
      // a small log (under the threshold): the whole index, as before (the background build
      // of a narrowed read: BackgroundBuildSuite)
      IndexCache.clear(spark)
      withConf("spark.deltareplay.index.buildInBackground" -> "false") {
        val df = ours(path).where(queries.head)
        assert(sorted(df) === after(queries.head))
        val m = deltaReplayScans(df).head.metrics
        assert(m.narrowedReason === "a small log, replayed on the driver", m)
        assert(m.liveFiles === v1LiveFiles(path, latestVersion(path)).size, m)
      }
    }
  }

  test("a first filtered read narrows on a checkpoint whose statistics are JSON only") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 600)
        .selectExpr("id", "cast(id % 3 as string) AS p", "concat('s', id) AS s")
        .repartitionByRange(60, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.checkpoint.writeStatsAsStruct", "false")
        .option("delta.checkpoint.writeStatsAsJson", "true")
        .save(path)
      DeltaLog.forTable(spark, path).checkpoint()
      spark
        .range(600, 620)
        .selectExpr("id", "'1' AS p", "concat('s', id) AS s")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val Decoded = """.*checkpoint filtered by the query: ([\d,]+) of ([\d,]+) rows decoded.*""".r
      Seq("id = 142", "id BETWEEN 300 AND 305 AND p = '1'", "s = 's77'").foreach { q =>
        val m = firstFilteredRead(path, q)
        assert(m.checkpointLayout.contains("statistics as JSON only"), m.checkpointLayout)
        m.replayMode match {
          case Decoded(kept, total) =>
            val (k, t) = (kept.replace(",", "").toLong, total.replace(",", "").toLong)
            // the statistics the filter compares read from the JSON: a handful decoded whole
            assert(k * 10 < t, s"$q: ${m.replayMode}")
          case other => fail(s"$q: not narrowed: $other")
        }
        assert(m.liveFiles < 20, s"$q: $m")
      }
    }
  }

  test("a first filtered read of a V2 checkpoint with sidecars selects their rows in two passes") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark.sql(
        s"CREATE TABLE delta.`$path` USING delta PARTITIONED BY (p) " +
          "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2') AS SELECT id, id % 3 AS p FROM range(240)"
      )
      withConf(
        "spark.databricks.delta.checkpointV2.topLevelFileFormat" -> "json",
        "spark.databricks.delta.checkpoint.partSize" -> "4"
      )(DeltaLog.forTable(spark, path).checkpoint())
      spark.sql(s"INSERT INTO delta.`$path` SELECT id, id % 3 FROM range(240, 250)")
      assert(new java.io.File(path, "_delta_log/_sidecars").list().length > 1, "no sidecars")
      // the top-level JSON file holds no add or remove (a replay leaves it out); one with an add
      // line would count
      val segment =
        internal.log.TableSnapshot.load(spark, path, None, None, sessionConf.log).segment
      val log = new internal.log.LogReader(spark, segment, sessionConf.log)
      val Seq(top) = segment.checkpoint
      assert(top.getPath.getName.endsWith(".json") && !log.jsonCheckpointHoldsFileActions(top))
      val withAdd = new java.io.File(dir, "with-add.json").toPath
      val text = java.nio.file.Files.readString(java.nio.file.Paths.get(top.getPath.toUri))
      java.nio.file.Files.writeString(withAdd, text + "{\"add\":{\"path\":\"x.parquet\"}}\n")
      val fs = top.getPath.getFileSystem(spark.sessionState.newHadoopConf())
      assert(
        log.jsonCheckpointHoldsFileActions(
          fs.getFileStatus(new org.apache.hadoop.fs.Path(withAdd.toUri))
        )
      )
      Seq("id = 142", "p = 2").foreach { q =>
        val m = firstFilteredRead(path, q)
        assert(m.checkpointLayout.contains("sidecars"), m.checkpointLayout)
        // the top-level JSON file holds no add: the sidecars alone are read, in two passes
        assert(m.replayMode.contains("rows decoded whole"), s"$q: ${m.replayMode}")
        assert(m.liveFiles < 20, s"$q: $m")
      }
    }
  }

  test(
    "JSON-only statistics: a read without filters while a build with statistics is pending " +
      "caches an index the filtered reads after the next commit roll forward"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      spark
        .range(0, 400)
        .selectExpr("id", "id % 4 AS p")
        .repartitionByRange(40, col("id"))
        .write
        .format("delta")
        .partitionBy("p")
        .option("delta.checkpoint.writeStatsAsStruct", "false")
        .option("delta.checkpoint.writeStatsAsJson", "true")
        .save(path)
      DeltaLog.forTable(spark, path).checkpoint()
      spark
        .range(400, 410)
        .selectExpr("id", "id % 4 AS p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      IndexCache.clear(spark)
      val hold = new java.util.concurrent.CountDownLatch(1)
      IndexBuilds.observer = io.deltareplay.test.BuildHolds.beforeStart(hold)
      try
        withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "0") {
          // a filtered read narrows and asks for a build with statistics (held here) ...
          val first = ours(path).where("id = 17")
          assert(sorted(first) === sorted(v1(path).where("id = 17")))
          assert(deltaReplayScans(first).head.metrics.replayMode.contains("filtered by the query"))
          // ... a read of the whole table builds the index the cache keeps ...
          assert(sorted(ours(path)) === sorted(v1(path)))
          spark
            .range(410, 420)
            .selectExpr("id", "id % 4 AS p")
            .write
            .format("delta")
            .mode("append")
            .save(path)
          // ... and filtered reads of the next version roll it forward and skip on it
          Seq("id = 415", "id < 30 AND p = 1").foreach { q =>
            val df = ours(path).where(q)
            assert(sorted(df) === sorted(v1(path).where(q)), q)
            val m = deltaReplayScans(df).head.metrics
            // the first rolls the index forward, the next finds the rolled one cached
            val rolled = if (q == "id = 415") "incremental" else "cached"
            assert(m.replayMode.startsWith(rolled), s"$q: ${m.replayMode}")
            assert(m.filesAfterSkipping < m.liveFiles / 4, s"$q: $m")
          }
        }
      finally {
        hold.countDown()
        IndexBuilds.observer = IndexBuilds.Observer.Nothing
      }
    }
  }

  test(
    "fuzz seed 431929393: a first filtered read on a statistic the typed checkpoint statistics " +
      "lack (dataSkippingNumIndexedCols lowered) answers as V1"
  ) {
    val session = spark
    import session.implicits._
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      Seq((1L, Some(true), 5), (2L, Some(false), -1), (3L, None, 7))
        .toDF("id", "c1", "c2")
        .repartition(3)
        .write
        .format("delta")
        .save(path)
      Seq((4L, None: Option[Boolean], 1))
        .toDF("id", "c1", "c2")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      // typed statistics in every add, of `id` only: the others are in the JSON statistics alone,
      // which the first pass of the checkpoint read leaves out
      spark.sql(
        s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '1')"
      )
      DeltaLog.forTable(spark, path).checkpoint()
      Seq((5L, Some(false), 2))
        .toDF("id", "c1", "c2")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      withConf(
        "spark.deltareplay.replay.distributedThresholdBytes" -> "0",
        "spark.deltareplay.replay.stateCache.enabled" -> "false",
        "spark.deltareplay.planning.mode" -> "driver"
      ) {
        Seq("c1 IS NOT NULL", "c1 = false", "c2 = -1 OR c1 IS NULL").foreach { q =>
          val df = ours(path).where(q)
          assert(sorted(df) === sorted(v1(path).where(q)), q)
          val mode = deltaReplayScans(df).head.metrics.replayMode
          assert(mode.contains("filtered by the query"), s"$q: $mode")
        }
      }
    }
  }
}
