package io.deltareplay.internal

import java.io.File

import scala.jdk.CollectionConverters._

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

      // With the caches off every load and replay reads its commits.
      withConf("spark.deltareplay.replay.stateCache.enabled" -> "false") {
        val uncached = logReads(assert(sorted(ours(counted)) === sorted(v1(path))))
        assert(uncached.count(_ == f"${2L}%020d.json") >= 2, uncached)
      }
    }
  }
}
