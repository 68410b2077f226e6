package io.deltareplay

import java.util.concurrent.{CompletableFuture, CountDownLatch, TimeUnit}

import io.deltareplay.internal.index.IndexBuilds
import io.deltareplay.test.{BuildHolds, DeltaOracle}
import org.apache.spark.SparkPrivateAccess
import org.apache.spark.scheduler.{SparkListener, SparkListenerJobStart}
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.functions.col
import org.scalatest.funsuite.AnyFunSuite

/**
 * The index a first filtered read leaves to a background build: no query waits for it, its jobs
 * yield to queries, and it does not start while a query's rows are still on their way to PySpark.
 */
class BackgroundBuildSuite extends AnyFunSuite with DeltaOracle {

  /** A partitioned table with a commit after its first version (and a checkpoint before it). */
  private def writeTable(path: String, rows: Int, checkpoint: Boolean = true): Unit = {
    spark
      .range(0, rows)
      .selectExpr("id", "id % 3 AS p")
      .repartitionByRange(12, col("id"))
      .write
      .format("delta")
      .partitionBy("p")
      .save(path)
    if (checkpoint) DeltaLog.forTable(spark, path).checkpoint()
    spark
      .range(rows, rows + 20)
      .selectExpr("id", "id % 3 AS p")
      .write
      .format("delta")
      .mode("append")
      .save(path)
  }

  /**
   * A job in the background builds' tag and pool, as a build's job runs, of two tasks that run
   * until they are killed (`untilKilled`, at most a minute) or at once: its failure message, if it
   * failed.
   */
  private def backgroundJob(
      untilKilled: Boolean
  ): CompletableFuture[Option[String]] = {
    val sc = spark.sparkContext
    val done = new CompletableFuture[Option[String]]()
    val thread = new Thread("a stand-in background build") {
      override def run(): Unit = {
        sc.setLocalProperty("spark.scheduler.pool", IndexBuilds.BackgroundTag)
        sc.addJobTag(IndexBuilds.BackgroundTag)
        val wait = untilKilled
        try {
          sc.parallelize(0 until 2, 2).foreach { _ =>
            val task = org.apache.spark.TaskContext.get()
            val end = System.nanoTime() + 60L * 1000000000L
            while (wait && !task.isInterrupted() && System.nanoTime() < end) Thread.sleep(10)
          }
          done.complete(None)
        } catch { case e: Exception => done.complete(Some(String.valueOf(e.getMessage))) }
      }
    }
    thread.setDaemon(true)
    thread.start()
    done
  }

  test("queries while a background index build of their version runs never wait for it") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      writeTable(path, 300)
      val hold = new CountDownLatch(1)
      // the build waits before it starts (held while the queries below run)
      IndexBuilds.observer = BuildHolds.beforeStart(hold)
      try
        withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "0") {
          val first = ours(path).where("id = 17")
          assert(sorted(first) === sorted(v1(path).where("id = 17")))
          val s = deltaReplayScans(first).head.snapshot
          def building =
            IndexBuilds.isRunning(spark, s.segment.paths.root, s.meta.tableId, s.version)
          assert(building, "the first read started no build")
          // a build's running job yields as soon as a read of any table begins (its snapshot
          // loads, before its query is planned or executes), and a job the build starts right
          // after is cancelled as it starts; both stand in for the held build's jobs
          Thread.sleep(2500) // past the moments after a read in which a build's job yields at once
          val running = backgroundJob(untilKilled = true)
          val started = System.nanoTime() + 60L * 1000000000L
          while (spark.sparkContext.statusTracker.getActiveStageIds.isEmpty) {
            assert(System.nanoTime() < started, "the background job did not start")
            Thread.sleep(20)
          }
          ours(path) // only its snapshot loads: no query runs
          val yielded = running.get(30, TimeUnit.SECONDS)
          assert(yielded.exists(_.contains("the index build yields")), yielded)
          ours(path)
          val late =
            backgroundJob(untilKilled = false).get(30, TimeUnit.SECONDS)
          assert(late.exists(_.contains("the index build yields")), late)
          // with the build held, queries of the version answer: the same filters from what the
          // first read kept, others from their own narrowed read; none waits for the build
          Seq("id = 17", "id > 290 AND p = 1", "p = 2").foreach { q =>
            val answered = CompletableFuture.supplyAsync { () =>
              val df = ours(path).where(q)
              (sorted(df), deltaReplayScans(df).head.metrics.replayMode)
            }
            val (rows, mode) = answered.get(120, TimeUnit.SECONDS)
            assert(rows === sorted(v1(path).where(q)), q)
            assert(!mode.startsWith("cached"), s"$q: $mode")
            assert(building, s"$q: the build ended while held")
          }
          // an aggregate of some partitions is answered from the statistics of the files its
          // filter may match (a narrowed read), not from a whole index built in the foreground;
          // a scan with the same filter then reuses what that read kept
          val aggregates = Seq("count(*)", "min(id)", "max(id)")
          val counted = CompletableFuture.supplyAsync { () =>
            val df = ours(path).where("p = 1").selectExpr(aggregates: _*)
            (sorted(df), statsAggregateScans(df).map(_.description()))
          }
          val (counts, described) = counted.get(120, TimeUnit.SECONDS)
          assert(counts === sorted(v1(path).where("p = 1").selectExpr(aggregates: _*)))
          assert(described.size == 1 && described.head.contains("filtered by the query"), described)
          val rows = ours(path).where("p = 1")
          assert(sorted(rows) === sorted(v1(path).where("p = 1")))
          val reused = deltaReplayScans(rows).head.metrics
          assert(reused.replayMode.startsWith("reused"), reused)
          // ... and it held only the files of p = 1, not every file of the version
          val tableFiles = DeltaLog.forTable(spark, path).update().allFiles.count()
          assert(reused.liveFiles < tableFiles * 2 / 3, s"$reused, $tableFiles files")
          assert(building, "the build ended while held")
          hold.countDown()
          val deadline = System.nanoTime() + 120L * 1000000000L
          while (building && System.nanoTime() < deadline) Thread.sleep(50)
          assert(!building)
          val after = ours(path).where("id = 5")
          assert(deltaReplayScans(after).head.metrics.replayMode === s"cached (v${s.version})")
          assert(sorted(after) === sorted(v1(path).where("id = 5")))
        }
      finally {
        hold.countDown()
        IndexBuilds.observer = IndexBuilds.Observer.Nothing
      }
    }
  }

  test(
    "a background build does not start while a query's rows are still being sent to PySpark, " +
      "and starts once they are"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      writeTable(path, 300)
      val sc = spark.sparkContext
      val buildJobs = new java.util.concurrent.ConcurrentLinkedQueue[Long]()
      val listener = new SparkListener {
        override def onJobStart(e: SparkListenerJobStart): Unit = {
          val tags = Option(e.properties).flatMap(p => Option(p.getProperty("spark.job.tags")))
          if (tags.exists(_.split(",").contains(IndexBuilds.BackgroundTag))) {
            buildJobs.add(System.nanoTime())
          }
        }
      }
      sc.addSparkListener(listener)
      try
        withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "0") {
          // what PySpark's DataFrame.collect() calls: the query runs, then Spark serves its rows
          // from a thread of its own until Python has connected and read them; it returns the
          // port, the secret to connect with, and the server
          val first = ours(path).where("p = 1")
          val served = first.getClass.getMethod("collectToPython").invoke(first) match {
            case a: Array[_] => a
            case other => fail(s"collectToPython returned $other")
          }
          val (port, secret) = (served(0).asInstanceOf[Int], served(1).toString)
          val s = deltaReplayScans(first).head.snapshot
          def building =
            IndexBuilds.isRunning(spark, s.segment.paths.root, s.meta.tableId, s.version)
          assert(building, "the first read started no build")
          Thread.sleep(3000) // past the idle time after a query and the hold after a read
          SparkPrivateAccess.waitUntilEmpty(sc)
          assert(buildJobs.isEmpty, "a build's job started while the rows were being served")
          assert(building)
          // read the rows as PySpark does: the secret, Spark's "ok", then the pickled batches
          val socket = new java.net.Socket("127.0.0.1", port)
          val bytes =
            try {
              val out = new java.io.DataOutputStream(socket.getOutputStream)
              val key = secret.getBytes("UTF-8")
              out.writeInt(key.length)
              out.write(key)
              out.flush()
              val in = new java.io.DataInputStream(socket.getInputStream)
              val reply = new Array[Byte](in.readInt())
              in.readFully(reply)
              assert(new String(reply, "UTF-8") === "ok")
              in.readAllBytes().length
            } finally socket.close()
          assert(bytes > 0)
          val sent = System.nanoTime()
          val deadline = sent + 120L * 1000000000L
          while (building && System.nanoTime() < deadline) Thread.sleep(50)
          assert(!building, "the build did not finish")
          SparkPrivateAccess.waitUntilEmpty(sc)
          assert(!buildJobs.isEmpty && buildJobs.peek() > sent, "the build ran no job after")
          // (an index without statistics: the first read's filter was on the partition column)
          val after = ours(path).where("p = 2")
          assert(deltaReplayScans(after).head.metrics.replayMode === s"cached (v${s.version})")
          assert(sorted(after) === sorted(v1(path).where("p = 2")))
        }
      finally sc.removeSparkListener(listener)
    }
  }

  test(
    "a background build on the driver (a log of commits only: no job to cancel) stops for a read " +
      "that begins, and builds again once the application is idle"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      writeTable(path, 300, checkpoint = false)
      val inside = (new CountDownLatch(1), new CountDownLatch(1))
      // held inside its work on the driver
      IndexBuilds.observer = BuildHolds.atFirstYieldPoint(inside._1, inside._2)
      val yielded = IndexBuilds.yieldedOnDriver.get
      try
        withConf("spark.deltareplay.replay.distributedThresholdBytes" -> "0") {
          val first = ours(path).where("id = 17")
          assert(sorted(first) === sorted(v1(path).where("id = 17")))
          val scan = deltaReplayScans(first).head
          assert(scan.metrics.replayMode.startsWith("local (filtered by the query"), scan.metrics)
          // the build reconciles the commits on the driver; held there, a read begins
          assert(inside._1.await(60, TimeUnit.SECONDS), "the build did not start on the driver")
          val df = ours(path).where("p = 1") // its snapshot loads: the read begins
          IndexBuilds.observer = IndexBuilds.Observer.Nothing
          inside._2.countDown()
          val deadline = System.nanoTime() + 60L * 1000000000L
          while (IndexBuilds.yieldedOnDriver.get == yielded && System.nanoTime() < deadline)
            Thread.sleep(10)
          assert(IndexBuilds.yieldedOnDriver.get === yielded + 1, "the build did not yield")
          assert(sorted(df) === sorted(v1(path).where("p = 1")))
          // idle again: the build runs to its end and the next read finds its index
          awaitIndexBuild(scan.snapshot)
          val again = ours(path).where("id = 301")
          val v = scan.snapshot.version
          assert(deltaReplayScans(again).head.metrics.replayMode === s"cached (v$v)")
          assert(sorted(again) === sorted(v1(path).where("id = 301")))
        }
      finally {
        IndexBuilds.observer = IndexBuilds.Observer.Nothing
        inside._2.countDown()
      }
    }
  }
}
