package io.deltareplay

import java.io.File

import io.deltareplay.internal.index.IndexCache
import io.deltareplay.internal.planning.{ManifestPartition, Scratch}
import io.deltareplay.internal.scan.DeltaReplayScan
import io.deltareplay.test.DeltaOracle
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/**
 * Executor-side planning (`planning.mode = executors`): the file list stays on the executors as
 * manifest Parquet files and input partitions name bins of them. Rows must equal V1's, and pruning,
 * skipping and statistics must equal driver-side planning's on the same table and query.
 */
class ExecutorPlanningSuite extends AnyFunSuite with DeltaOracle {

  /**
   * A partitioned table with DVs, nulls and special characters in partition values, checkpoints.
   */
  private def writeTable(path: String): Unit = {
    def append(from: Int, to: Int): Unit =
      spark
        .range(from, to)
        .selectExpr(
          "id",
          "case when id % 5 = 0 then null when id % 5 = 1 then 'a b' " +
            "when id % 5 = 2 then 'x=y/%' else concat('p', id % 3) end as p",
          "date_add(date'2026-01-01', cast(id % 4 as int)) as d",
          "concat('v-', id) as v"
        )
        .repartition(4)
        .write
        .format("delta")
        .mode("append")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .option("delta.checkpointInterval", "3")
        .save(path)
    (0 until 5).foreach(i => append(i * 100, (i + 1) * 100))
    spark.sql(s"DELETE FROM delta.`$path` WHERE id % 13 = 0").collect()
    append(500, 560)
  }

  private def scanOf(df: DataFrame): DeltaReplayScan = deltaReplayScans(df).head

  private val queries: Seq[(String, DataFrame => DataFrame)] = Seq(
    "all" -> identity,
    "partition equality" -> (_.where("p = 'a b'")),
    "null partition" -> (_.where("p IS NULL AND id < 300")),
    "special characters" -> (_.where("p = 'x=y/%'").select("v", "p")),
    "data skipping" -> (_.where("id >= 420 AND id < 470")),
    "date column" -> (_.where("d = date'2026-01-03'").select("id", "d")),
    "skips everything" -> (_.where("id > 100000"))
  )

  test("rows equal V1; pruning, skipping and statistics equal driver planning") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      queries.foreach { case (name, query) =>
        withClue(s"[$name] ") {
          assertSameAsV1(path, query = query, modes = Seq("executors"))
          val driver = withReplayMode("distributed")(scanOf(query(ours(path))))
          val executors = withReplayMode("executors")(scanOf(query(ours(path))))
          val (d, e) = (driver.metrics, executors.metrics)
          assert(e.planning.startsWith("executors"), e)
          assert(e.liveFiles === d.liveFiles)
          assert(e.filesAfterPartitionPruning === d.filesAfterPartitionPruning)
          assert(e.filesAfterSkipping === d.filesAfterSkipping)
          assert(e.actionsReplayed === d.actionsReplayed)
          val (ds, es) = (driver.estimateStatistics(), executors.estimateStatistics())
          assert(es.sizeInBytes() === ds.sizeInBytes())
          assert(es.numRows() === ds.numRows())
          assert(executors.description().contains("planned on the executors ("))
          assert(e.toJson.contains(""""planning":"executors ("""), e.toJson)
          val parts = executors.toBatch.planInputPartitions()
          assert(parts.forall(_.isInstanceOf[ManifestPartition]))
          assert(parts.map(_.asInstanceOf[ManifestPartition].files).sum === e.filesAfterSkipping)
        }
      }
      // A skipping query skipped something, the partition queries pruned something.
      val m = withReplayMode("executors")(scanOf(queries(4)._2(ours(path))).metrics)
      assert(m.filesAfterSkipping < m.filesAfterPartitionPruning, m)
    }
  }

  test("files split across bins by maxPartitionBytes; a planned DataFrame runs twice") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      withConf(
        "spark.sql.files.maxPartitionBytes" -> "1024",
        "spark.sql.files.openCostInBytes" -> "256"
      ) {
        val expected = sorted(v1(path))
        withReplayMode("executors") {
          val df = ours(path).where("id % 2 = 0")
          val first = sorted(df)
          val second = sorted(df) // same physical plan, same manifests
          val expectedEven = sorted(v1(path).where("id % 2 = 0"))
          assert(first === expectedEven)
          assert(second === expectedEven)
          val all = ours(path)
          assert(sorted(all) === expected)
          val parts =
            scanOf(all).toBatch.planInputPartitions().map(_.asInstanceOf[ManifestPartition])
          val files = scanOf(all).metrics.filesAfterSkipping
          // Files bigger than 1 KB are split: more splits than files, so more bins than files.
          assert(parts.length > files, s"${parts.length} bins for $files files")
          assert(parts.map(_.manifest).distinct.length < parts.length)
        }
      }
    }
  }

  test("auto planning: executors above executorsMinFiles, driver below or with a cached state") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      def planning(pairs: (String, String)*): String =
        withConf(
          (Seq(
            "spark.deltareplay.planning.mode" -> "auto",
            "spark.deltareplay.replay.mode" -> "auto",
            "spark.deltareplay.replay.distributedThresholdBytes" -> "0"
          ) ++ pairs): _*
        )(scanOf(ours(path)).metrics.planning)
      IndexCache.clear(spark)
      assert(planning("spark.deltareplay.replay.stateCache.enabled" -> "false") === "driver")
      val few = "spark.deltareplay.planning.executorsMinFiles" -> "10"
      assert(
        planning(few, "spark.deltareplay.replay.stateCache.enabled" -> "false")
          .startsWith("executors")
      )
      // A forced local replay always plans on the driver.
      assert(planning(few, "spark.deltareplay.replay.mode" -> "local") === "driver")
      // Once a driver-side replay of the table is cached, auto rolls it forward on the driver.
      withConf("spark.deltareplay.planning.mode" -> "driver")(ours(path).collect())
      assert(planning(few) === "driver")
      IndexCache.clear(spark)
      assert(planning(few).startsWith("executors"))
      assert(sorted(withConf(few)(ours(path))) === sorted(v1(path)))
    }
  }

  test("manifests go under planning.scratchDir, and a directory goes with its owner") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      val scratch = new File(dir, "scratch")
      val appDir = new File(scratch, spark.sparkContext.applicationId)
      def planDirs: Set[File] = Option(appDir.listFiles()).toSet.flatMap((a: Array[File]) => a)
      def gone(dirs: Set[File]): Boolean = {
        val deadline = System.nanoTime() + 60L * 1000000000L
        while (dirs.exists(_.exists()) && System.nanoTime() < deadline) {
          System.gc()
          Thread.sleep(200)
        }
        !dirs.exists(_.exists())
      }
      var df: DataFrame = null
      withConf("spark.deltareplay.planning.scratchDir" -> scratch.getAbsolutePath) {
        withReplayMode("executors") {
          df = ours(path).where("id % 3 = 0")
          assert(sorted(df) === sorted(v1(path).where("id % 3 = 0")))
        }
      }
      // While the DataFrame (and so its scan) lives, its manifests stay.
      val dirs = planDirs
      assert(dirs.exists(_.getName.startsWith("manifests-")), dirs)
      assert(
        dirs
          .flatMap(d => Option(d.listFiles()).toSeq.flatten)
          .exists(_.getName.endsWith(".parquet"))
      )
      assert(df.count() === v1(path).where("id % 3 = 0").count())
      // Once it is unreachable, the Cleaner deletes them.
      df = null
      assert(gone(dirs), s"manifest directories not deleted after their scan was collected: $dirs")

      // The cleanup alone, with an explicit owner.
      var owner: AnyRef = new Object
      val owned = Scratch.newDir(spark, scratch.getAbsolutePath, owner)
      val local = new File(owned.toUri)
      assert(local.mkdirs())
      owner = null
      assert(gone(Set(local)), s"$local was not deleted after its owner was collected")
    }
  }

  test("a manifest deleted under a planned scan fails with an error naming it") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      val scratch = new File(dir, "scratch")
      withConf("spark.deltareplay.planning.scratchDir" -> scratch.getAbsolutePath) {
        withReplayMode("executors") {
          val df = ours(path)
          val parts =
            scanOf(df).toBatch.planInputPartitions().map(_.asInstanceOf[ManifestPartition])
          assert(parts.nonEmpty)
          parts.map(_.manifest).distinct.foreach { m =>
            assert(new File(new Path(m).toUri).delete(), m)
          }
          val e = intercept[Exception](df.collect())
          val msg = causeMessages(e)
          assert(msg.contains("[DELTA_REPLAY_MISSING_FILE] The planning manifest"), msg)
          assert(msg.contains(path) && msg.contains("planning.scratchDir"), msg)
        }
      }
    }
  }

  test("an unwritable scratch directory fails naming it, not the log") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      writeTable(path)
      val blocker = new File(dir, "a-file")
      assert(blocker.createNewFile())
      val scratch = new File(blocker, "scratch").getAbsolutePath // a directory under a file
      withConf("spark.deltareplay.planning.scratchDir" -> scratch) {
        withReplayMode("executors") {
          val e = intercept[Exception](ours(path).collect())
          val msg = causeMessages(e)
          assert(
            msg.contains("[DELTA_REPLAY_MISSING_FILE] Executor-side planning could not write"),
            msg
          )
          assert(msg.contains(scratch) && msg.contains("planning.scratchDir"), msg)
          assert(!msg.contains("truncated or corrupt"), msg)
        }
      }
    }
  }

  test("a bad planning.mode is refused naming the key") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark.range(3).write.format("delta").save(path)
      val e = intercept[Exception](
        withConf("spark.deltareplay.planning.mode" -> "cluster")(ours(path).collect())
      )
      assert(e.getMessage.contains("spark.deltareplay.planning.mode"), e.getMessage)
      assert(e.getMessage.contains("auto, driver or executors"), e.getMessage)
    }
  }
}
