package io.deltareplay.internal.log

import java.io.File

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.index.IndexCache
import io.deltareplay.internal.session.SessionState
import io.deltareplay.test.DeltaOracle
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[CommitTexts]]: one query reads each commit once, though the snapshot load and the replay or
 * index roll-forward both need it; with the caches off, every reader reads it again. Files are
 * counted through `countfs:` ([[OpenCountingFileSystem]]).
 */
class CommitTextsSuite extends AnyFunSuite with DeltaOracle {

  test("a query after one commit reads that commit once: the snapshot load and the roll-forward") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark.range(0, 20).selectExpr("id", "id % 3 AS p").write.format("delta").save(path)
      spark
        .range(20, 40)
        .selectExpr("id", "id % 3 AS p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      IndexCache.clear(spark)
      spark.sparkContext.hadoopConfiguration
        .set("fs.countfs.impl", classOf[OpenCountingFileSystem].getName)
      val counted = s"countfs://$path"
      def logReads(body: => Unit): Seq[String] = {
        OpenCountingFileSystem.opened.clear()
        body
        OpenCountingFileSystem.opened.asScala.toSeq.filter(_.endsWith(".json")).sorted
      }
      val first =
        logReads(assert(sorted(ours(counted).where("p = 1")) === sorted(v1(path).where("p = 1"))))
      // the load and the replay of a cold read share the commits too
      assert(first == Seq(f"${0L}%020d.json", f"${1L}%020d.json"), first)

      spark
        .range(40, 50)
        .selectExpr("id", "id % 3 AS p")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      // the DataFrame's load reads the new commit; its planning finds it in memory
      var df: org.apache.spark.sql.DataFrame = null
      val replan = logReads {
        df = ours(counted).where("p = 1")
        assert(sorted(df) === sorted(v1(path).where("p = 1")))
      }
      assert(replan == Seq(f"${2L}%020d.json"), replan)
      assert(deltaReplayScans(df).head.metrics.replayMode.startsWith("incremental"))

      // With the caches off every load and replay reads its commits (the load reads them for
      // the protocol and metadata when it does not take those from the version checksum file).
      withConf(
        "spark.deltareplay.replay.stateCache.enabled" -> "false",
        "spark.deltareplay.replay.useChecksum" -> "false"
      ) {
        val uncached = logReads(assert(sorted(ours(counted)) === sorted(v1(path))))
        assert(uncached.count(_ == f"${2L}%020d.json") >= 2, uncached)
      }
    }
  }

  test("a table's commits are dropped once an index of their version is cached, not another's") {
    withTempDir { dir =>
      def table(name: String): String = {
        val path = new File(dir, name).getAbsolutePath
        spark.range(0, 20).selectExpr("id", "id % 3 AS p").write.format("delta").save(path)
        spark
          .range(20, 30)
          .selectExpr("id", "id % 3 AS p")
          .write
          .mode("append")
          .format("delta")
          .save(path)
        path
      }
      val (a, b) = (table("a"), table("b"))
      IndexCache.clear(spark)
      def kept(path: String): Seq[String] =
        CommitTexts.keptPaths(spark).filter(_.contains(s"${new File(path).getName}/_delta_log/"))
      withConf("spark.deltareplay.replay.useChecksum" -> "false") {
        // b's load reads its commits (protocol and metadata); no index of b is built
        val notRead = ours(b)
        assert(kept(b).size == 2, CommitTexts.keptPaths(spark))
        // a read of a whole version caches its index (with statistics, which the filter needs):
        // a's commits go, b's stay
        assert(sorted(ours(a).where("p = 1")) === sorted(v1(a).where("p = 1")))
        assert(IndexCache.usage(spark)._1 == 1)
        assert(kept(a).isEmpty && kept(b).size == 2, CommitTexts.keptPaths(spark))
        // a commit later, the roll-forward reads it (once: the suite's first test) and drops it
        spark
          .range(30, 35)
          .selectExpr("id", "id % 3 AS p")
          .write
          .mode("append")
          .format("delta")
          .save(a)
        val df = ours(a).where("p = 1")
        assert(sorted(df) === sorted(v1(a).where("p = 1")))
        assert(deltaReplayScans(df).head.metrics.replayMode.startsWith("incremental"))
        assert(kept(a).isEmpty && kept(b).size == 2, CommitTexts.keptPaths(spark))
        assert(sorted(notRead) === sorted(v1(b)))
        assert(kept(b).isEmpty, CommitTexts.keptPaths(spark))
      }
    }
  }

  /** Waits (up to 30 s) until `t` is blocked waiting, not running. */
  private def awaitBlocked(t: Thread): Unit = {
    import Thread.State._
    val deadline = System.nanoTime() + 30L * 1000000000L
    while (
      !Set(WAITING, TIMED_WAITING, BLOCKED).contains(t.getState) && System.nanoTime() < deadline
    )
      Thread.onSpinWait()
    assert(
      Set(WAITING, TIMED_WAITING, BLOCKED).contains(t.getState),
      s"${t.getName}: ${t.getState}"
    )
  }

  test("a file another thread is reading is read once: the second reader waits for its bytes") {
    withTempDir { dir =>
      val file = new File(dir, f"${5L}%020d.json")
      java.nio.file.Files.write(file.toPath, "{\"commitInfo\":{}}\n".getBytes("UTF-8"))
      val status = new org.apache.hadoop.fs.Path(file.getAbsolutePath)
        .getFileSystem(spark.sessionState.newHadoopConf())
        .getFileStatus(new org.apache.hadoop.fs.Path(file.getAbsolutePath))
      val reads = new java.util.concurrent.atomic.AtomicInteger()
      val started = new java.util.concurrent.CountDownLatch(1)
      val release = new java.util.concurrent.CountDownLatch(1)
      def slowRead(): Array[Byte] = {
        reads.incrementAndGet()
        started.countDown()
        release.await()
        java.nio.file.Files.readAllBytes(file.toPath)
      }
      val first = new Thread(() => {
        CommitTexts.bytes(spark, status, sessionConf.log)(slowRead()); ()
      })
      first.start()
      started.await()
      val second =
        new java.util.concurrent.FutureTask(() =>
          CommitTexts.bytes(spark, status, sessionConf.log)(slowRead())
        )
      val secondThread = new Thread(second)
      secondThread.start()
      awaitBlocked(secondThread) // the second reader is waiting, not reading
      assert(reads.get() == 1 && !second.isDone)
      release.countDown()
      assert(new String(second.get(), "UTF-8").contains("commitInfo"))
      first.join()
      assert(reads.get() == 1)

      // a first read that fails is not the waiting reader's failure: it reads the file itself
      SessionState.clear(spark)
      val failing = new java.util.concurrent.CountDownLatch(1)
      val reading = new java.util.concurrent.CountDownLatch(1)
      val doomed = new Thread(() =>
        try {
          CommitTexts.bytes(spark, status, sessionConf.log) {
            reading.countDown(); failing.await(); throw new java.io.IOException("gone")
          }; ()
        } catch { case _: java.io.IOException => () }
      )
      doomed.start()
      reading.await()
      val waiter = new java.util.concurrent.FutureTask(() =>
        CommitTexts.bytes(spark, status, sessionConf.log)(
          java.nio.file.Files.readAllBytes(file.toPath)
        )
      )
      val waiterThread = new Thread(waiter)
      waiterThread.start()
      awaitBlocked(waiterThread)
      failing.countDown()
      assert(new String(waiter.get(), "UTF-8").contains("commitInfo"))
      doomed.join()
    }
  }
}
