package io.deltareplay

import java.io.File

import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

/** The streaming source against delta-spark's DeltaSource (the oracle). */
class StreamingSuite extends AnyFunSuite with DeltaOracle {

  private def appendCommit(path: String, from: Long, to: Long, files: Int = 1): Unit =
    spark
      .range(from, to)
      .selectExpr("id", "cast(id % 3 as int) as g")
      .repartition(files)
      .write
      .format("delta")
      .mode("append")
      .save(path)

  private def source(path: String, delta: Boolean, options: Map[String, String]): DataFrame = {
    val r = spark.readStream.format("delta").options(options)
    (if (delta) r.option("deltareplay.route", "false") else r).load(path)
  }

  /** Runs to the end with AvailableNow; the sorted ids of each non-empty micro-batch, in order. */
  private def batches(
      path: String,
      delta: Boolean,
      options: Map[String, String]
  ): Seq[Seq[Long]] = if (delta) asOracle(run(path, delta, options)) else run(path, delta, options)

  private def run(path: String, delta: Boolean, options: Map[String, String]): Seq[Seq[Long]] = {
    val seen = new java.util.concurrent.ConcurrentLinkedQueue[(Long, Seq[Long])]()
    val q = source(path, delta, options).writeStream
      .foreachBatch { (df: DataFrame, id: Long) =>
        val ids = df.select("id").collect().map(_.getLong(0)).toSeq.sorted
        if (ids.nonEmpty) seen.add(id -> ids)
        ()
      }
      .trigger(Trigger.AvailableNow())
      .start()
    try {
      q.awaitTermination()
      val desc = q.lastProgress.sources.head.description
      assert(desc.contains("DeltaReplayMicroBatchStream") != delta, s"wrong source: $desc")
      import scala.jdk.CollectionConverters._
      snapshotDescriptions = q.recentProgress.toSeq.flatMap { p =>
        p.sources.flatMap(s => Option(s.metrics).flatMap(m => Option(m.get("snapshot"))))
      }
      seen.asScala.toSeq.sortBy(_._1).map(_._2)
    } finally q.stop()
  }

  /** The `snapshot` metric of each progress of the last [[run]]. */
  private var snapshotDescriptions: Seq[String] = Nil

  private def sinkRows(sink: String): Seq[Seq[Any]] = sorted(spark.read.format("delta").load(sink))

  test(
    "same rows and same batches as DeltaSource under maxFilesPerTrigger, with and without an initial snapshot"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 12).foreach(i => appendCommit(path, i * 10, (i + 1) * 10))
      Seq(
        Map("maxFilesPerTrigger" -> "5"),
        Map("maxFilesPerTrigger" -> "3", "startingVersion" -> "4"),
        Map("maxFilesPerTrigger" -> "1000")
      ).foreach { opts =>
        val theirs = batches(path, delta = true, opts) // DeltaSource's, whatever our mode
        Seq("local", "distributed").foreach { mode =>
          withReplayMode(mode) {
            val ours = batches(path, delta = false, opts)
            assert(ours.map(_.size) === theirs.map(_.size), s"$opts $mode")
            assert(ours.flatten.sorted === theirs.flatten.sorted, s"$opts $mode")
          }
        }
      }
    }
  }

  test(
    "restart from the checkpoint after a kill mid-stream: no duplicate, no missing row (Delta sink)"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 8).foreach(i => appendCommit(path, i * 100, (i + 1) * 100, files = 2))
      val sink = new File(dir, "sink").getAbsolutePath
      val ckpt = new File(dir, "ckpt").getAbsolutePath
      def start(trigger: Trigger): StreamingQuery =
        source(path, delta = false, Map("maxFilesPerTrigger" -> "1")).writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .trigger(trigger)
          .start(sink)
      val q = start(Trigger.ProcessingTime(0))
      val deadline = System.currentTimeMillis() + 120000
      while (Option(q.lastProgress).forall(_.batchId < 2) && System.currentTimeMillis() < deadline)
        Thread.sleep(50)
      q.stop() // may interrupt a running batch
      // killed mid-stream: after its third batch, before the last
      assert(Option(q.lastProgress).exists(_.batchId >= 2), s"stopped too early: ${q.lastProgress}")
      val beforeKill = spark.read.format("delta").load(sink).count()
      assert(beforeKill > 0 && beforeKill < 800, s"$beforeKill rows in the sink at the kill")
      appendCommit(path, 5000, 5100)
      // Restart after every batch: one batch per run until the source is drained.
      val afterRuns = (0 until 3).map { _ =>
        val once = source(path, delta = false, Map("maxFilesPerTrigger" -> "4")).writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .trigger(Trigger.Once())
          .start(sink)
        once.awaitTermination()
        spark.read.format("delta").load(sink).count()
      }
      // the restarts go on where the stream stopped (the first may only redo the killed batch)
      assert(afterRuns.last > beforeKill, s"$beforeKill rows before the restarts, then $afterRuns")
      assert(afterRuns === afterRuns.sorted, afterRuns)
      val rest = start(Trigger.AvailableNow())
      rest.awaitTermination()
      assert(sinkRows(sink) === sorted(v1(path)))
    }
  }

  test("concurrent appends and OPTIMIZE while the stream runs") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 4).foreach(i => appendCommit(path, i * 10, (i + 1) * 10, files = 2))
      val sink = new File(dir, "sink").getAbsolutePath
      val q = source(path, delta = false, Map("maxFilesPerTrigger" -> "2")).writeStream
        .format("delta")
        .option("checkpointLocation", new File(dir, "ckpt").getAbsolutePath)
        .trigger(Trigger.ProcessingTime(100))
        .start(sink)
      try {
        (4 until 9).foreach(i => appendCommit(path, i * 10, (i + 1) * 10, files = 2))
        spark.sql(s"OPTIMIZE delta.`$path`").collect()
        appendCommit(path, 900, 910)
        q.processAllAvailable()
      } finally q.stop()
      assert(sinkRows(sink) === sorted(v1(path)))
    }
  }

  test("options: startingVersion latest, startingTimestamp, maxBytesPerTrigger, Trigger.Once") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 4).foreach(i => appendCommit(path, i * 10, (i + 1) * 10))
      val latest = Map("startingVersion" -> "latest")
      assert(batches(path, delta = false, latest) === batches(path, delta = true, latest))
      val ts =
        spark.sql(s"DESCRIBE HISTORY delta.`$path`").where("version = 2").head().getTimestamp(0 + 1)
      val fromTs =
        batches(path, delta = false, Map("startingTimestamp" -> ts.toString)).flatten.sorted
      assert(
        fromTs === batches(
          path,
          delta = true,
          Map("startingTimestamp" -> ts.toString)
        ).flatten.sorted
      )
      assert(fromTs.nonEmpty)
      val bytes = Map("maxBytesPerTrigger" -> "1")
      assert(batches(path, delta = false, bytes) === batches(path, delta = true, bytes))
      val name = s"once_${System.nanoTime()}"
      // format("delta-replay") directly, without routing
      val direct =
        spark.readStream.format("delta-replay").option("maxFilesPerTrigger", "1").load(path)
      val q = direct.writeStream
        .format("memory")
        .queryName(name)
        .trigger(Trigger.Once())
        .start()
      q.awaitTermination()
      assert(sorted(spark.table(name)) === sorted(v1(path).select("id", "g")))
    }
  }

  test(
    "change commits fail with DeltaSource's errors naming the version; the options skip or ignore them"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 3).foreach(i => appendCommit(path, i * 10, (i + 1) * 10))
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 10").collect() // v3: removes a whole file
      appendCommit(path, 100, 110) // v4
      spark.sql(s"UPDATE delta.`$path` SET g = 9 WHERE id = 15").collect() // v5: rewrite
      // DeltaSource's errors (StreamingChangesSuite compares their conditions case by case)
      val e = intercept[Exception](batches(path, delta = false, Map("startingVersion" -> "1")))
      val msg =
        causeMessages(e)
      assert(msg.contains("DELTA_SOURCE_IGNORE_DELETE") && msg.contains("version 3"), msg)
      val skipped =
        batches(path, delta = false, Map("startingVersion" -> "1", "skipChangeCommits" -> "true"))
      assert(
        skipped.flatten.sorted === batches(
          path,
          delta = true,
          Map("startingVersion" -> "1", "skipChangeCommits" -> "true")
        ).flatten.sorted
      )
      val ignored =
        batches(path, delta = false, Map("startingVersion" -> "1", "ignoreChanges" -> "true"))
      assert(
        ignored.flatten.sorted === batches(
          path,
          delta = true,
          Map("startingVersion" -> "1", "ignoreChanges" -> "true")
        ).flatten.sorted
      )
      val e2 = intercept[Exception](
        batches(path, delta = false, Map("startingVersion" -> "1", "ignoreDeletes" -> "true"))
      )
      assert(causeMessages(e2).contains("DELTA_SOURCE_TABLE_IGNORE_CHANGES"), causeMessages(e2))
      assert(causeMessages(e2).contains("version 5"), causeMessages(e2))
      // OPTIMIZE (dataChange = false) passes silently.
      val opt = new File(dir, "o").getAbsolutePath
      (0 until 3).foreach(i => appendCommit(opt, i * 10, (i + 1) * 10))
      spark.sql(s"OPTIMIZE delta.`$opt`").collect()
      appendCommit(opt, 50, 60)
      val fromStart = Map("startingVersion" -> "0")
      assert(batches(opt, delta = false, fromStart) === batches(opt, delta = true, fromStart))
    }
  }

  test("deletion vectors: deleted rows of snapshot files are not emitted") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark
        .range(0, 50)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .repartition(2)
        .write
        .format("delta")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 5 = 0").collect()
      val ours = batches(path, delta = false, Map.empty)
      assert(ours === batches(path, delta = true, Map.empty))
      assert(ours.flatten.size === asOracle(v1(path).count()))
      // wider than `spark.sql.codegen.maxFields` (id, g and the row index): rows, not batches
      withConf("spark.sql.codegen.maxFields" -> "2") {
        assert(batches(path, delta = false, Map.empty) === ours)
      }
    }
  }

  test("a schema change stops the query with DeltaSource's error; a restart reads the new schema") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      appendCommit(path, 0, 10)
      val sink = new File(dir, "sink").getAbsolutePath
      val ckpt = new File(dir, "ckpt").getAbsolutePath
      def start(trigger: Trigger): StreamingQuery =
        source(path, delta = false, Map.empty).writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .option("mergeSchema", "true")
          .trigger(trigger)
          .start(sink)
      val q = start(Trigger.ProcessingTime(100))
      q.processAllAvailable()
      spark.sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (extra STRING)").collect()
      spark
        .range(10, 20)
        .selectExpr("id", "cast(id % 3 as int) as g", "'x' as extra")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      val e = intercept[Exception](q.awaitTermination(120000))
      q.stop()
      val msg =
        causeMessages(e)
      assert(msg.contains("DELTA_SCHEMA_CHANGED_WITH_VERSION") && msg.contains("restarting"), msg)
      start(Trigger.AvailableNow()).awaitTermination()
      assert(sinkRows(sink) === sorted(v1(path)))
    }
  }

  test(
    "offsets: checkpoints move between DeltaSource and this source; another table's checkpoint fails"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 3).foreach(i => appendCommit(path, i * 10, (i + 1) * 10))
      val sink = new File(dir, "sink").getAbsolutePath
      val ckpt = new File(dir, "ckpt").getAbsolutePath
      def run(delta: Boolean, p: String = path): StreamingQuery =
        source(p, delta, Map("maxFilesPerTrigger" -> "1")).writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .trigger(Trigger.AvailableNow())
          .start(sink)
      run(delta = true).awaitTermination() // DeltaSource writes the checkpoint
      appendCommit(path, 30, 40)
      val ours = run(delta = false)
      ours.awaitTermination()
      assert(ours.lastProgress.sources.head.description.contains("DeltaReplay"))
      appendCommit(path, 40, 50)
      run(delta = true).awaitTermination() // and back to DeltaSource
      assert(sinkRows(sink) === sorted(v1(path)))
      val other = new File(dir, "other").getAbsolutePath
      appendCommit(other, 0, 5)
      val e = intercept[Exception](run(delta = false, other).awaitTermination())
      val msg =
        causeMessages(e)
      assert(msg.contains("another Delta table"), msg)
    }
  }

  test("progress reports custom metrics") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 3).foreach(i => appendCommit(path, i * 10, (i + 1) * 10))
      val name = s"m_${System.nanoTime()}"
      // format("delta-replay") directly, without routing
      val direct =
        spark.readStream.format("delta-replay").option("maxFilesPerTrigger", "1").load(path)
      val q = direct.writeStream
        .format("memory")
        .queryName(name)
        .trigger(Trigger.AvailableNow())
        .start()
      q.awaitTermination()
      val metrics = q.recentProgress.head.sources.head.metrics
      assert(metrics.get("filesAdmitted") === "1", metrics)
      assert(
        metrics.containsKey("backlogSnapshotFiles") && metrics.containsKey("snapshotPhase"),
        metrics
      )
      assert(q.recentProgress.map(_.numInputRows).sum === asOracle(v1(path).count()))
    }
  }

  test("finding 9: maxBytesPerTrigger admits the file that crosses the limit, as DeltaSource") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      // 8 one-file commits of growing size (a run took 73 s with 12)
      (0 until 8).foreach(i => appendCommit(path, i * 1000L, i * 1000L + 500L * (i + 1)))
      Seq(
        Map("maxBytesPerTrigger" -> "40k"),
        Map("maxBytesPerTrigger" -> "40k", "maxFilesPerTrigger" -> "4"),
        Map("maxBytesPerTrigger" -> "1")
      ).foreach { opts =>
        val theirs = batches(path, delta = true, opts) // DeltaSource's, whatever our mode
        // the limits do cut: more than one batch, and the one-byte limit one file per batch
        assert(theirs.size > 1 && (opts("maxBytesPerTrigger") != "1" || theirs.size == 8), theirs)
        Seq("local", "distributed").foreach { mode =>
          withReplayMode(mode) {
            val ours = batches(path, delta = false, opts)
            assert(ours.map(_.size) === theirs.map(_.size), s"$opts $mode")
            assert(ours === theirs, s"$opts $mode")
          }
        }
      }
    }
  }

  test("finding 8: a column comment change does not stop the stream (DeltaSource goes on)") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      appendCommit(path, 0, 10)
      val sink = new File(dir, "sink").getAbsolutePath
      val q = source(path, delta = false, Map.empty).writeStream
        .format("delta")
        .option("checkpointLocation", new File(dir, "ckpt").getAbsolutePath)
        .trigger(Trigger.ProcessingTime(100))
        .start(sink)
      try {
        q.processAllAvailable()
        spark.sql(s"ALTER TABLE delta.`$path` ALTER COLUMN id COMMENT 'the id'").collect()
        spark.sql(s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('x' = 'y')").collect()
        appendCommit(path, 10, 20)
        q.processAllAvailable()
        assert(q.exception.isEmpty, q.exception)
        assert(q.isActive)
      } finally q.stop()
      assert(sinkRows(sink) === sorted(v1(path)))
    }
  }

  /** Settings that put the snapshot index on the driver, or on the executors read in slices. */
  private val snapshotHomes = Seq(
    "driver index" -> Seq("spark.deltareplay.planning.mode" -> "driver"),
    "executor index, slices of 4" -> Seq(
      "spark.deltareplay.planning.mode" -> "executors",
      "spark.deltareplay.streaming.snapshotSliceFiles" -> "4"
    )
  )

  test(
    "the initial snapshot batch by batch as DeltaSource: equal modification times, DVs, " +
      "partitions; index on the driver and on the executors in slices"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      // many files per commit (equal or close modification times: ties break on the path)
      spark
        .range(0, 300)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .repartition(15)
        .write
        .format("delta")
        .partitionBy("g")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      appendCommit(path, 300, 330, files = 4)
      spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0").collect()
      appendCommit(path, 400, 420, files = 3)
      // 7 files a batch over slices of 4: batches cross slice edges
      val opts = Map("maxFilesPerTrigger" -> "7")
      val theirs = batches(path, delta = true, opts)
      snapshotHomes.foreach { case (home, settings) =>
        withConf(settings: _*) {
          Seq("local", "distributed").foreach { mode =>
            withReplayMode(mode) {
              // the same files per batch, so the same rows per batch (deleted rows dropped by both)
              assert(batches(path, delta = false, opts) === theirs, s"$home $mode")
            }
          }
        }
      }
      // batches by files and by bytes
      val plain = new File(dir, "plain").getAbsolutePath
      spark
        .range(0, 200)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .repartition(10)
        .write
        .format("delta")
        .partitionBy("g")
        .save(plain)
      appendCommit(plain, 300, 330, files = 4)
      Seq(Map("maxFilesPerTrigger" -> "7"), Map("maxBytesPerTrigger" -> "3k")).foreach { o =>
        val expected = batches(plain, delta = true, o)
        snapshotHomes.foreach { case (home, settings) =>
          withConf(settings: _*) {
            assert(batches(plain, delta = false, o) === expected, s"$home $o")
          }
        }
      }
    }
  }

  test(
    "first micro-batch from one pass over the checkpoint (no index), batch by batch as " +
      "DeltaSource; a tail that removed the oldest files builds the index instead"
  ) {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark
        .range(0, 240)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .repartition(6)
        .write
        .format("delta")
        .partitionBy("g")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
      appendCommit(path, 300, 330, files = 2)
      org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).checkpoint() // at v1
      // the tail: a DV delete (touches two of the oldest files) and an append
      spark.sql(s"DELETE FROM delta.`$path` WHERE id IN (5, 77)").collect()
      appendCommit(path, 400, 420, files = 2)
      val opts = Map("maxFilesPerTrigger" -> "5")
      // the commits after the checkpoint reconciled on the driver (index there), or windowed
      // (index on the executors: its slices go on from the first files)
      val ways = Seq(
        "distributed" -> Seq.empty[(String, String)],
        "executors" -> Seq(
          "spark.deltareplay.replay.tailFastPathMaxBytes" -> "0",
          "spark.deltareplay.streaming.snapshotSliceFiles" -> "6"
        ),
        // the checkpoint's one row group cut into splits of a few rows each
        "distributed" -> Seq(
          "spark.deltareplay.replay.checkpointRowSplits" -> "true",
          "spark.sql.files.maxPartitionBytes" -> "1024",
          "spark.sql.files.openCostInBytes" -> "0"
        )
      )
      def check(found: Boolean): Unit = {
        val theirs = batches(path, delta = true, opts)
        ways.foreach { case (mode, settings) =>
          withConf(settings: _*) {
            withReplayMode(mode) {
              assert(batches(path, delta = false, opts) === theirs, mode)
            }
            val onePass = snapshotDescriptions.exists(_.contains("one pass over the checkpoint"))
            assert(onePass === found, snapshotDescriptions.mkString("\n"))
            // the second batch goes on from the first files, with no numbering of every file
            assert(!snapshotDescriptions.exists(_.contains("numbered by a range sort")))
          }
        }
      }
      check(found = true)
      // the tail now removes every file the checkpoint has: found by the index instead
      spark.sql(s"OPTIMIZE delta.`$path`").collect()
      appendCommit(path, 500, 530, files = 3)
      check(found = false)
    }
  }

  test("restarts in the middle of an initial snapshot on the executors lose and repeat nothing") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark
        .range(0, 400)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .repartition(25)
        .write
        .format("delta")
        .save(path)
      val sink = new File(dir, "sink").getAbsolutePath
      val ckpt = new File(dir, "ckpt").getAbsolutePath
      withConf(snapshotHomes.last._2: _*) {
        // one batch per run: every restart resumes at another place of the snapshot
        (0 until 4).foreach { _ =>
          source(path, delta = false, Map("maxFilesPerTrigger" -> "3")).writeStream
            .format("delta")
            .option("checkpointLocation", ckpt)
            .trigger(Trigger.Once())
            .start(sink)
            .awaitTermination()
        }
        appendCommit(path, 1000, 1010)
        source(path, delta = false, Map("maxFilesPerTrigger" -> "5")).writeStream
          .format("delta")
          .option("checkpointLocation", ckpt)
          .trigger(Trigger.AvailableNow())
          .start(sink)
          .awaitTermination()
      }
      assert(sinkRows(sink) === sorted(v1(path)))
    }
  }
}
