package io.deltareplay

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.util.UUID

import io.deltareplay.test.{SharedSparkSession, SparkDefaults}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/**
 * A 200K-file table (data files are hard links spread over four small Parquet files) plans its
 * initial snapshot and serves its first micro-batches in a driver JVM limited to 1 GB of heap
 * (build.sbt forks `*SmallHeapSuite` with -Xmx1g). delta-spark's Kernel-based source refuses
 * initial snapshots of this size by default. It runs with Spark's defaults (code generation,
 * adaptive execution, [[io.deltareplay.test.SparkDefaults]]): the path users run at this size;
 * interpreted expressions over 200K entries were slower here (103-135 s -> 152 s in the test run).
 */
class StreamingSmallHeapSuite extends AnyFunSuite with SharedSparkSession with SparkDefaults {

  private val files = 200000

  private def synthesize(path: String): Unit = {
    val log = new File(path, "_delta_log")
    log.mkdirs()
    val sources = (0 until (files + 59999) / 60000).map { k => // ext4: ~65,000 links a file
      val dir = new File(path, s"_src$k").getAbsolutePath
      spark.range(k * 10, k * 10 + 10).coalesce(1).write.parquet(dir)
      new File(dir).listFiles().find(_.getName.endsWith(".parquet")).get.toPath
    }
    val schema =
      """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"""
        .replace("\"", "\\\"")
    val now = System.currentTimeMillis()
    val header = Seq(
      s"""{"commitInfo":{"timestamp":$now,"operation":"WRITE"}}""",
      """{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}""",
      s"""{"metaData":{"id":"${UUID
          .randomUUID()}","format":{"provider":"parquet","options":{}},""" +
        s""""schemaString":"$schema","partitionColumns":[],"configuration":{},"createdTime":$now}}"""
    )
    val perCommit = 20000
    (0 until files / perCommit).foreach { c =>
      val adds = (c * perCommit until (c + 1) * perCommit).map { i =>
        val name = f"part-$i%08d.parquet"
        Files.createLink(Paths.get(path, name), sources(i % sources.size))
        s"""{"add":{"path":"$name","partitionValues":{},"size":500,"modificationTime":${now + i},"dataChange":true}}"""
      }
      val lines = (if (c == 0) header else Seq(header.head)) ++ adds
      Files.write(
        new File(log, f"$c%020d.json").toPath,
        lines.mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8)
      )
    }
  }

  test(
    "a 200K-file initial snapshot serves its first three micro-batches with a 1 GB heap: " +
      "index on the driver, and on the executors in slices"
  ) {
    assert(Runtime.getRuntime.maxMemory() <= 1100L * 1024 * 1024, "this suite must run with -Xmx1g")
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      synthesize(path)
      spark.conf.set("spark.deltareplay.replay.mode", "distributed")
      Seq(
        "driver" -> "200000 files, ordered on the driver",
        "executors" -> "200000 files, read in slices of 50000"
      ).foreach { case (planning, described) =>
        spark.conf.set("spark.deltareplay.planning.mode", planning)
        val q = spark.readStream
          .format("delta-replay")
          .option("maxFilesPerTrigger", "1000")
          .load(path)
          .writeStream
          .format("noop")
          .trigger(Trigger.ProcessingTime(0))
          .start()
        try {
          val deadline = System.currentTimeMillis() + 600000
          while (
            q.recentProgress.count(_.numInputRows > 0) < 3 && q.exception.isEmpty &&
            System.currentTimeMillis() < deadline
          ) Thread.sleep(200)
          assert(q.exception.isEmpty, q.exception)
          val batches = q.recentProgress.filter(_.numInputRows > 0).take(3)
          assert(batches.length === 3)
          batches.foreach(p => assert(p.numInputRows === 10000))
          val snapshot = batches.head.sources.head.metrics.get("snapshot")
          assert(snapshot.contains(described), s"planning.mode=$planning: $snapshot")
        } finally q.stop()
      }
    }
  }
}
