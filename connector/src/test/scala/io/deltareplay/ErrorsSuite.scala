package io.deltareplay

import java.io.File

import io.deltareplay.internal.log.TableSnapshot
import io.deltareplay.internal.replay.LogJobErrors
import io.deltareplay.test.{DeltaOracle, LogFixtures}
import org.apache.spark.SparkException
import org.apache.spark.memory.SparkOutOfMemoryError
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.delta.DeltaLog
import org.scalatest.funsuite.AnyFunSuite

/** Bad input gets a clear error naming the table and the problem; recoverable logs recover. */
class ErrorsSuite extends AnyFunSuite with DeltaOracle {

  private def write(path: String, commits: Int, checkpointInterval: Option[Int] = None): Unit =
    (0 until commits).foreach { i =>
      val w = spark
        .range(i * 10, (i + 1) * 10)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .coalesce(1)
        .write
        .format("delta")
        .mode("append")
      checkpointInterval
        .filter(_ => i == 0)
        .fold(w)(n => w.option("delta.checkpointInterval", n.toString))
        .save(path)
    }

  private def error(path: String, options: Map[String, String] = Map.empty): String =
    replayModes.map { mode =>
      withReplayMode(mode) {
        val e = intercept[Exception](ours(path, options).collect())
        val msg = causeMessages(e)
        assert(
          msg.contains("[DELTA_REPLAY_") || msg.contains("DELTA_"),
          s"[$mode] unclear error: $msg"
        )
        msg
      }
    }.head

  test("a path that is not a Delta table") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/plain"
      spark.range(3).write.parquet(path)
      val msg = error(path)
      assert(msg.contains("is not a Delta table") && msg.contains(path))
    }
  }

  /**
   * `e` is of the Spark type, condition and SQLSTATE given, with a one-line message naming `path`.
   */
  private def assertSparkError(e: Throwable, sparkType: Class[_], condition: String, state: String)(
      path: String
  ): Unit = {
    assert(sparkType.isInstance(e), s"${e.getClass}: ${e.getMessage}")
    val d = e.asInstanceOf[DeltaReplayException]
    assert(d.getCondition === condition && d.getSqlState === state, e.getMessage)
    assert(e.getMessage.startsWith(s"[$condition] "), e.getMessage)
    assert(e.getMessage.endsWith(s" SQLSTATE: $state"), e.getMessage)
    assert(!e.getMessage.contains("\n") && !e.getMessage.contains("Source: REDACTED"), e.getMessage)
    assert(e.getMessage.contains(path), e.getMessage)
    assert(d.getMessageParameters.get("message") === d.detail)
    assert(!d.isInternalError)
  }

  test("errors are Spark's types: AnalysisException for what was asked, runtime for the log") {
    // private[spark] in Scala, but the class PySpark and Spark Connect map by name
    val sparkRuntime = Class.forName("org.apache.spark.SparkRuntimeException")
    withTempDir { dir =>
      val plain = dir.getAbsolutePath + "/plain"
      spark.range(3).write.parquet(plain)
      assertSparkError(
        intercept[DeltaReplayException.NotADeltaTable](ours(plain).collect()),
        classOf[AnalysisException],
        "DELTA_REPLAY_NOT_A_DELTA_TABLE",
        "42P01"
      )(plain)
      val path = dir.getAbsolutePath + "/t"
      write(path, 3)
      assertSparkError(
        intercept[AnalysisException](ours(path, Map("versionAsOf" -> "7")).collect()),
        classOf[DeltaReplayException.VersionNotFound],
        "DELTA_REPLAY_VERSION_NOT_FOUND",
        "22023"
      )(path)
      val bad = intercept[AnalysisException](
        ours(path, Map("versionAsOf" -> "1", "timestampAsOf" -> "2020-01-01")).collect()
      )
      assertSparkError(
        bad,
        classOf[DeltaReplayException.BadOption],
        "DELTA_REPLAY_BAD_OPTION",
        "42616"
      )(
        path
      )
      // a commit cut in the middle of a JSON object: the parser's words, not its internals
      LogFixtures.truncate(LogFixtures.commitFile(path, 2), 0.6)
      withReplayMode("local") {
        val e = intercept[DeltaReplayException.CorruptLog](ours(path).collect())
        assertSparkError(
          e,
          sparkRuntime,
          "DELTA_REPLAY_CORRUPT_LOG",
          "XX001"
        )(path)
        assert(e.getMessage.contains("00000000000000000002.json"), e.getMessage)
      }
    }
  }

  test("every condition is in delta-replay-error-conditions.json and docs/troubleshooting.md") {
    import scala.jdk.CollectionConverters._
    val all: Seq[DeltaReplayException] = Seq(
      new DeltaReplayException.UnsupportedTable("m"),
      new DeltaReplayException.NotADeltaTable("m"),
      new DeltaReplayException.VersionNotFound("m"),
      new DeltaReplayException.BadOption("m"),
      new DeltaReplayException.SchemaChanged("m"),
      new DeltaReplayException.CorruptLog("m", null, null),
      new DeltaReplayException.ReplayFailed("m", null),
      new DeltaReplayException.MissingFile("m", null),
      new DeltaReplayException.StoreAccess("m", null),
      new DeltaReplayException.StreamStopped("m")
    )
    val in = this.getClass.getClassLoader.getResourceAsStream("delta-replay-error-conditions.json")
    val json =
      try new com.fasterxml.jackson.databind.ObjectMapper().readTree(in)
      finally in.close()
    assert(json.fieldNames().asScala.toSet === all.map(_.getCondition).toSet)
    val doc = new String(
      java.nio.file.Files.readAllBytes(
        java.nio.file.Paths
          .get(sys.props.getOrElse("deltareplay.test.root", "."), "docs", "troubleshooting.md")
      ),
      "UTF-8"
    )
    all.foreach { e =>
      val entry = json.get(e.getCondition)
      assert(entry.get("sqlState").asText === e.getSqlState, e.getCondition)
      val sparkType = Class.forName(entry.get("sparkType").asText)
      assert(sparkType.isInstance(e), e.getCondition)
      val python =
        if (e.isInstanceOf[AnalysisException]) "AnalysisException" else "SparkRuntimeException"
      assert(
        doc.contains(
          s"| `${e.getCondition}` | `${e.getSqlState}` | `${e.getClass.getSimpleName}` | " +
            s"`${sparkType.getSimpleName}` | `pyspark.errors.$python`"
        ),
        s"docs/troubleshooting.md has no row for ${e.getCondition}"
      )
      assert(e.getMessage === s"[${e.getCondition}] m SQLSTATE: ${e.getSqlState}")
    }
  }

  test("a parser's error is quoted without its internals") {
    val e = intercept[com.fasterxml.jackson.core.JsonProcessingException](
      new com.fasterxml.jackson.databind.ObjectMapper().readTree("""{"add":{"path":"a""")
    )
    assert(e.getMessage.contains("Source: REDACTED"), e.getMessage) // what Jackson says
    val detail = Errors.causeDetail(e)
    assert(!detail.contains("Source:") && !detail.contains("\n"), detail)
    assert(detail.contains("line 1, column"), detail)
    // as Spark's JSON reader words it: the source is the line itself, with brackets in it
    val quoted = new RuntimeException(
      "Unexpected end-of-input: expected close marker for Object (start marker at " +
        "[Source: (byte[])\"{\"add\":{\"path\":\"p[1]\"; line: 1, column: 8])\n at [Source: " +
        "(byte[])\"{\"add\":{\"path\":\"p[1]\"; line: 1, column: 35]"
    )
    assert(
      Errors.causeDetail(quoted) === "Unexpected end-of-input: expected close marker for " +
        "Object (start marker at line: 1, column: 8) at line: 1, column: 35"
    )
    val msg = Errors.corruptLogFile("/t", "/t/_delta_log/x.json", e).getMessage
    assert(msg.startsWith("[DELTA_REPLAY_CORRUPT_LOG] Cannot read /t/_delta_log/x.json"), msg)
    assert(!msg.contains("Source:"), msg)
  }

  test("a missing commit file in the segment names the version") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 5)
      assert(LogFixtures.commitFile(path, 2).delete())
      val msg = error(path)
      assert(msg.contains("no commit file for version 2"), msg)
      assert(msg.contains(path), msg)
    }
  }

  test("a truncated commit names the file") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 3)
      val last = LogFixtures.commitFile(path, 2)
      LogFixtures.truncate(last, 0.6)
      withReplayMode("local") {
        val e = intercept[Exception](ours(path).collect())
        assert(
          e.getMessage.contains("00000000000000000002.json") && e.getMessage.contains("corrupt"),
          e.getMessage
        )
      }
      withConf("spark.deltareplay.replay.mode" -> "distributed") {
        val e = intercept[Exception](ours(path).collect())
        assert(
          e.getMessage.contains("[DELTA_REPLAY_CORRUPT_LOG]") && e.getMessage.contains("corrupt"),
          e.getMessage
        )
      }
    }
  }

  test(
    "a replay job that failed for memory, was cancelled, could not link a class or failed " +
      "after the files read is not called a corrupt log"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 2)
      val segment = TableSnapshot.load(spark, path, None, None, sessionConf.log).segment
      def through(e: Exception): Throwable =
        intercept[Throwable](LogJobErrors.forLog(segment)(throw e))
      val memory = Seq(
        new SparkException(
          "task failed",
          new SparkOutOfMemoryError(
            "UNABLE_TO_ACQUIRE_MEMORY",
            java.util.Map.of("requestedBytes", "64", "receivedBytes", "0")
          )
        ),
        new SparkException(
          "task failed",
          new java.io.IOException(
            new SparkException("_LEGACY_ERROR_TEMP_2105", Map.empty[String, String], null)
          )
        )
      )
      memory.foreach(e => assert(through(e) eq e))
      // a class of the connector's jar that cannot reach a class of Spark's (as a split reader
      // implementing Spark's package-private interface once failed): the jars, not the log
      val linkage = new SparkException(
        "task failed",
        new IllegalAccessError("failed to access class of another class loader")
      )
      assert(through(linkage) eq linkage)
      // a real job, cancelled while it runs
      val sc = spark.sparkContext
      val started = new java.util.concurrent.CountDownLatch(1)
      val listener = new org.apache.spark.scheduler.SparkListener {
        override def onTaskStart(t: org.apache.spark.scheduler.SparkListenerTaskStart): Unit =
          started.countDown()
      }
      sc.addSparkListener(listener)
      val group = "errors-suite-cancelled"
      val cancelled = new java.util.concurrent.atomic.AtomicReference[Throwable]()
      val job = new Thread(() => {
        sc.setJobGroup(group, "a job to cancel", interruptOnCancel = true)
        val thrown = scala.util.Try(LogJobErrors.forLog(segment) {
          sc.parallelize(1 to 2, 2).map { i => Thread.sleep(60000); i }.collect()
        })
        thrown.failed.foreach(cancelled.set)
      })
      job.start()
      try assert(started.await(60, java.util.concurrent.TimeUnit.SECONDS))
      finally sc.removeSparkListener(listener)
      sc.cancelJobGroup(group)
      job.join(60000)
      val e = Option(cancelled.get).getOrElse(fail("the cancelled job did not fail"))
      assert(!e.isInstanceOf[DeltaReplayException.CorruptLog], e.getMessage)
      assert(e.getMessage.contains("cancelled"), e.getMessage)
      // a log file that does not parse still is one
      val corrupt = new SparkException(
        "task failed",
        new com.fasterxml.jackson.core.JsonParseException(null, "Unexpected end-of-input")
      )
      assert(through(corrupt).isInstanceOf[DeltaReplayException.CorruptLog])
      // a failure of the code that turns what was read into entries (a real task's) is not the
      // log's: it names the table and the part of the log, and says how to read it meanwhile
      val failed = intercept[DeltaReplayException.ReplayFailed](LogJobErrors.forLog(segment) {
        sc.parallelize(Seq[String]("x", null), 2).map(_.length).collect()
      })
      val runtime = Class.forName("org.apache.spark.SparkRuntimeException")
      assertSparkError(failed, runtime, "DELTA_REPLAY_REPLAY_FAILED", "XX000")(path)
      assert(failed.getMessage.contains("commits up to 1"), failed.getMessage)
      assert(failed.getMessage.contains("NullPointerException"), failed.getMessage)
      assert(failed.getMessage.contains("spark.deltareplay.enabled=false"), failed.getMessage)
      assert(Errors.causes(failed).exists(_.isInstanceOf[NullPointerException]))
      // ... while a Parquet decoder's or an I/O error is the log's
      Seq[Throwable](
        new org.apache.parquet.io.ParquetDecodingException("can not read value at 0 in block 0"),
        new java.io.EOFException("reached the end of the stream")
      ).foreach { cause =>
        val e = through(new SparkException("task failed", cause))
        assert(e.isInstanceOf[DeltaReplayException.CorruptLog], e)
      }
    }
  }

  test("a corrupt checkpoint with nothing older to fall back to names the checkpoint") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 6, checkpointInterval = Some(3))
      val checkpoint = new File(LogFixtures.logDir(path), f"${3L}%020d.checkpoint.parquet")
      assert(checkpoint.exists())
      (0 to 3).foreach(v => LogFixtures.commitFile(path, v).delete())
      java.nio.file.Files.write(checkpoint.toPath, "not parquet at all".getBytes)
      val msg = error(path)
      assert(msg.contains("00000000000000000003.checkpoint.parquet"), msg)
    }
  }

  test("recovery: a corrupt checkpoint with commit 0 still present falls back to the commits") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 6, checkpointInterval = Some(3))
      val checkpoint = new File(LogFixtures.logDir(path), f"${3L}%020d.checkpoint.parquet")
      java.nio.file.Files.write(checkpoint.toPath, "not parquet at all".getBytes)
      replayModes.foreach { mode =>
        withReplayMode(mode)(assert(ours(path).count() === 60))
      }
    }
  }

  test("log reads never skip a log file under ignoreCorruptFiles / ignoreMissingFiles") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 3)
      LogFixtures.truncate(LogFixtures.commitFile(path, 2), 0.6)
      withConf(
        "spark.sql.files.ignoreCorruptFiles" -> "true",
        "spark.sql.files.ignoreMissingFiles" -> "true"
      ) {
        // every mode fails on the truncated commit instead of answering from versions 0-1
        val msg = error(path)
        assert(msg.contains("corrupt") || msg.contains("00000000000000000002.json"), msg)
        assert(LogFixtures.commitFile(path, 1).delete())
        assert(error(path).contains("no commit file for version 1"))
      }
    }
  }

  test("a table whose commits a commit coordinator owns is refused by type, naming it") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 1)
      val meta = LogFixtures
        .readLines(LogFixtures.commitFile(path, 0))
        .find(_.startsWith("{\"metaData\""))
        .get
      val key = "\"delta.coordinatedCommits.commitCoordinator-preview\":\"in-memory\""
      val coordinated =
        if (meta.contains("\"configuration\":{}"))
          meta.replace("\"configuration\":{}", s"\"configuration\":{$key}")
        else meta.replace("\"configuration\":{", s"\"configuration\":{$key,")
      assert(coordinated != meta)
      LogFixtures.writeCommit(path, 1, Seq(LogFixtures.commitInfo, coordinated))
      replayModes.foreach { mode =>
        withReplayMode(mode) {
          val e = intercept[DeltaReplayException.UnsupportedTable](ours(path).collect())
          assert(e.getMessage.contains("commit coordinator (in-memory)"), e.getMessage)
          assert(e.getMessage.contains(path), e.getMessage)
        }
      }
      // the version before the coordinator was set is still ours to read
      assert(ours(path, Map("versionAsOf" -> "0")).count() === 10)
    }
  }

  test("an unknown reader feature is named") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 1)
      LogFixtures.writeCommit(
        path,
        1,
        Seq(
          LogFixtures.commitInfo,
          """{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["fancyNewFeature"],"writerFeatures":["fancyNewFeature"]}}"""
        )
      )
      val e = intercept[Exception](ours(path).collect())
      assert(e.getMessage.contains("fancyNewFeature") && e.getMessage.contains(path), e.getMessage)
    }
  }

  test("versions and timestamps out of range") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 3)
      val tooNew = error(path, Map("versionAsOf" -> "7"))
      assert(tooNew.contains("version 7") && tooNew.contains("newest version is 2"), tooNew)
      val negative = intercept[Exception](ours(path, Map("versionAsOf" -> "-1")).collect())
      assert(negative.getMessage.contains("-1"))
      val future =
        intercept[Exception](ours(path, Map("timestampAsOf" -> "2999-01-01 00:00:00")).collect())
      assert(future.getMessage.contains("2999-01-01"), future.getMessage)
      val both = intercept[Exception](
        ours(path, Map("versionAsOf" -> "1", "timestampAsOf" -> "2020-01-01")).collect()
      )
      assert(both.getMessage.contains("not both"))
    }
  }

  test("recovery: _last_checkpoint names a checkpoint that is missing") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 7, checkpointInterval = Some(3))
      new File(LogFixtures.logDir(path), f"${6L}%020d.checkpoint.parquet").delete()
      assert(
        LogFixtures
          .readLines(new File(LogFixtures.logDir(path), "_last_checkpoint"))
          .head
          .contains("\"version\":6")
      )
      DeltaLog.clearCache()
      val m = assertSameAsV1(path)
      assert(m("local").logSegment.startsWith("classic checkpoint 3"), m("local").logSegment)
    }
  }

  test("recovery: an incomplete multi-part checkpoint next to a complete older one") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      withConf("spark.databricks.delta.checkpoint.partSize" -> "1") {
        write(path, 3)
        DeltaLog.forTable(spark, path).checkpoint()
        write(path, 3)
        DeltaLog.forTable(spark, path).checkpoint()
      }
      val parts =
        LogFixtures.logDir(path).listFiles().filter(_.getName.startsWith(f"${5L}%020d.checkpoint."))
      assert(parts.length > 1)
      parts.head.delete()
      DeltaLog.clearCache()
      val m = assertSameAsV1(path)
      assert(m("local").logSegment.startsWith("multi-part checkpoint 2"), m("local").logSegment)
    }
  }

  test(
    "VACUUM: time travel to vacuumed data names a missing file; cleaned-up log names the earliest version"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 2)
      spark
        .range(100, 110)
        .selectExpr("id", "cast(id % 3 as int) as g")
        .write
        .format("delta")
        .mode("overwrite")
        .save(path)
      withConf("spark.databricks.delta.retentionDurationCheck.enabled" -> "false") {
        spark.sql(s"VACUUM delta.`$path` RETAIN 0 HOURS").collect()
      }
      replayModes.foreach { mode =>
        withReplayMode(mode) {
          val e = intercept[Exception](ours(path, Map("versionAsOf" -> "1")).collect())
          assert(
            e.getMessage.contains("does not exist") && e.getMessage.contains(".parquet"),
            e.getMessage
          )
        }
      }
      assert(ours(path).count() === 10)
    }
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      write(path, 8, checkpointInterval = Some(4))
      (0 to 3).foreach(v => LogFixtures.commitFile(path, v).delete())
      val msg = error(path, Map("versionAsOf" -> "2"))
      assert(msg.contains("earliest readable version is 4"), msg)
      assert(ours(path, Map("versionAsOf" -> "5")).count() === 60)
    }
  }
}
