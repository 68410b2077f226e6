package io.deltareplay

import java.io.File

import io.deltareplay.test.{DeltaOracle, LocalClusterSparkSession}
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Streams over tables that change (issue 43's probes 5, 7 and 10), each run twice on the same
 * table: through delta-spark's DeltaSource and through this connector, from checkpoints of their
 * own. Both must deliver the same batches (columns and rows), or stop with the same Delta error
 * condition.
 */
class StreamingChangesSuite extends StreamingChangesTests

/** The same streams on `local-cluster`, their batches read in executor JVMs. */
class StreamingChangesClusterSuite extends StreamingChangesTests with LocalClusterSparkSession

abstract class StreamingChangesTests extends AnyFunSuite with DeltaOracle {

  private def sql(s: String): Unit = spark.sql(s).collect()

  /** The Delta error condition of `e` or its causes; else the exception, for the failure text. */
  private def condition(e: Throwable): String =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst {
        case s: SparkThrowable if Option(s.getCondition).exists(_.startsWith("DELTA")) =>
          s.getCondition
      }
      .getOrElse(s"no Delta condition: ${causeMessages(e)}")

  /**
   * Runs a stream over `path` to the end (AvailableNow) from checkpoint `ckpt`; "batches: ..." with
   * each non-empty batch's columns and sorted ids, or "stopped: CONDITION".
   */
  private def outcome(path: String, delta: Boolean, opts: Map[String, String], ckpt: String) = {
    val reader = spark.readStream.format("delta").options(opts)
    val df = (if (delta) reader.option("deltareplay.route", "false") else reader).load(path)
    val seen = new java.util.concurrent.ConcurrentLinkedQueue[(Long, String)]()
    def run(): String =
      try {
        val q = df.writeStream
          .option("checkpointLocation", ckpt)
          .foreachBatch { (d: DataFrame, id: Long) =>
            val ids = d.select("id").collect().map(_.getLong(0)).sorted
            if (ids.nonEmpty) seen.add(id -> s"${d.columns.mkString(",")}=${ids.mkString(",")}")
            ()
          }
          .trigger(Trigger.AvailableNow())
          .start()
        q.awaitTermination()
        val desc = q.lastProgress.sources.head.description
        assert(desc.contains("DeltaReplayMicroBatchStream") != delta, s"wrong source: $desc")
        import scala.jdk.CollectionConverters._
        "batches: " + seen.asScala.toSeq.sortBy(_._1).map(_._2).mkString(" | ")
      } catch {
        case e: Exception if !e.isInstanceOf[org.scalatest.exceptions.TestFailedException] =>
          s"stopped: ${condition(e)}"
      }
    if (delta) asOracle(run()) else run()
  }

  /** DeltaSource and this connector, each from its own checkpoint under `dir`, agree. */
  private def agree(
      dir: File,
      name: String,
      path: String,
      opts: Map[String, String] = Map.empty
  ): String = {
    val theirs = outcome(path, delta = true, opts, new File(dir, s"$name-v1").getAbsolutePath)
    val ours = outcome(path, delta = false, opts, new File(dir, s"$name-ours").getAbsolutePath)
    assert(ours === theirs, s"$name ($opts)")
    theirs
  }

  private def cmTable(path: String): Unit = {
    sql(
      s"CREATE TABLE delta.`$path` (id BIGINT, b INT) USING delta " +
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    sql(s"INSERT INTO delta.`$path` VALUES (1, 2), (2, 3)")
  }

  test("probe 5: a restart across a column rename or drop stops as DeltaSource stops") {
    withTempDir { dir =>
      Seq("RENAME COLUMN b TO c" -> "c", "DROP COLUMN b" -> "").foreach { case (change, col) =>
        val path = new File(dir, s"t-${col.nonEmpty}").getAbsolutePath
        cmTable(path)
        val name = s"restart-${col.nonEmpty}"
        assert(agree(dir, name, path).startsWith("batches: id,b=1,2"))
        sql(s"ALTER TABLE delta.`$path` $change")
        val values = if (col.isEmpty) "(3)" else "(3, 4)"
        sql(s"INSERT INTO delta.`$path` VALUES $values")
        // the restart would emit the new schema's rows after the old one's
        assert(agree(dir, name, path).startsWith("stopped: DELTA_STREAMING_INCOMPATIBLE"))
        // a stream from a version before the change, and a new stream from the start
        assert(agree(dir, s"$name-v0", path, Map("startingVersion" -> "0")).startsWith("stopped"))
        assert(agree(dir, s"$name-new", path).startsWith("batches"))
      }
    }
  }

  test("probe 5: additive changes: a restart reads on with the new columns, as DeltaSource") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      cmTable(path)
      agree(dir, "add", path)
      sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (e STRING)")
      sql(s"INSERT INTO delta.`$path` VALUES (3, 4, 'x')")
      assert(agree(dir, "add", path).contains("id,b,e=3"))
      assert(agree(dir, "add-v1", path, Map("startingVersion" -> "1")).startsWith("batches"))
    }
  }

  test("probe 5: a change while the stream runs stops it with DeltaSource's condition") {
    withTempDir { dir =>
      Seq(
        "RENAME COLUMN b TO c" -> "(3, 4)",
        "ADD COLUMNS (e STRING)" -> "(3, 4, 'x')"
      ).zipWithIndex.foreach { case ((change, values), i) =>
        val path = new File(dir, s"t$i").getAbsolutePath
        cmTable(path)
        def start(delta: Boolean): StreamingQuery = {
          val r = spark.readStream.format("delta")
          (if (delta) r.option("deltareplay.route", "false") else r)
            .load(path)
            .writeStream
            .format("noop")
            .option("checkpointLocation", new File(dir, s"run$i-$delta").getAbsolutePath)
            .trigger(Trigger.ProcessingTime(50))
            .start()
        }
        val queries = Seq(asOracle(start(delta = true)), start(delta = false))
        try {
          queries.foreach(_.processAllAvailable())
          sql(s"ALTER TABLE delta.`$path` $change")
          sql(s"INSERT INTO delta.`$path` VALUES $values")
          val conditions = queries.map { q =>
            val e = intercept[Exception](q.awaitTermination(120000))
            condition(e)
          }
          assert(conditions(1) === conditions(0), change)
          assert(conditions(0).startsWith("DELTA_"), conditions(0))
        } finally queries.foreach(_.stop())
      }
    }
  }

  test("probe 7: a startingTimestamp after the newest commit fails as DeltaSource's does") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      cmTable(path)
      val future = Map("startingTimestamp" -> "2099-01-01")
      assert(agree(dir, "future", path, future) === "stopped: DELTA_TIMESTAMP_GREATER_THAN_COMMIT")
      assert(agree(dir, "past", path, Map("startingTimestamp" -> "2000-01-01")).contains("1,2"))
    }
  }

  test("probe 10: change commits stop the stream with DeltaSource's conditions") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark
        .range(0, 10)
        .selectExpr("id", "id % 3 AS g")
        .repartition(2)
        .write
        .format("delta")
        .save(path)
      sql(s"DELETE FROM delta.`$path` WHERE g = 0") // v1: rewrites files (no DV): adds too
      spark
        .range(20, 25)
        .selectExpr("id", "id % 3 AS g")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      sql(s"DELETE FROM delta.`$path` WHERE id >= 20") // v3: removes a whole file
      val cases = Seq(
        Map("startingVersion" -> "1"),
        Map("startingVersion" -> "1", "ignoreDeletes" -> "true"),
        Map("startingVersion" -> "2"),
        Map("startingVersion" -> "2", "ignoreDeletes" -> "true"),
        Map("startingVersion" -> "1", "ignoreChanges" -> "true"),
        Map("startingVersion" -> "1", "skipChangeCommits" -> "true")
      )
      val outcomes = cases.zipWithIndex.map { case (o, i) => agree(dir, s"c$i", path, o) }
      assert(outcomes(0) === "stopped: DELTA_SOURCE_TABLE_IGNORE_CHANGES")
      assert(outcomes(2) === "stopped: DELTA_SOURCE_IGNORE_DELETE")
      assert(outcomes(3).startsWith("batches"))
    }
  }
}
