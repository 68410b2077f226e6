package io.deltareplay

import java.io.File

import io.deltareplay.internal.scan.ReadConf
import io.deltareplay.test.DeltaOracle
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.execution.datasources.parquet.RowSplitParquetFormat
import org.apache.spark.sql.functions.{col, struct, to_json}
import org.scalatest.funsuite.AnyFunSuite

/**
 * How checkpoint Parquet files are read: a checkpoint of one row group by several tasks
 * ([[RowSplitParquetFormat]]: each split reads the rows of its byte range, every row once, in every
 * replay path), and partition filters over typed partition values where the footer proves them.
 */
class CheckpointReadSuite extends AnyFunSuite with DeltaOracle {

  /** Row splits on, of about 2 KB, so a checkpoint of a few dozen KB is cut into many. */
  private val smallSplits = Seq(
    "spark.deltareplay.replay.checkpointRowSplits" -> "true",
    "spark.sql.files.maxPartitionBytes" -> "2048",
    "spark.sql.files.openCostInBytes" -> "0"
  )

  /**
   * A partitioned table (files of narrow id ranges) with deletion vectors and removes, checkpointed
   * by delta-spark as one row group of pages of at most 16 rows (so splits end inside pages and
   * span several), then a commit after the checkpoint.
   */
  private lazy val table: String = {
    val path = java.nio.file.Files.createTempDirectory("splits").toFile.getAbsolutePath + "/t"
    (0 until 4).foreach { i =>
      spark
        .range(i * 600, (i + 1) * 600)
        .selectExpr("id", "cast(floor(id / 300) as string) as p")
        .repartitionByRange(20, col("id"))
        .write
        .format("delta")
        .mode("append")
        .partitionBy("p")
        .option("delta.enableDeletionVectors", "true")
        .save(path)
    }
    spark.sql(s"DELETE FROM delta.`$path` WHERE id % 97 = 0").collect()
    withConf("parquet.page.row.count.limit" -> "16", "parquet.page.size" -> "2048") {
      DeltaLog.forTable(spark, path).checkpoint()
    }
    spark
      .range(5000, 5020)
      .selectExpr("id", "'9' as p")
      .write
      .format("delta")
      .mode("append")
      .save(path)
    DeltaLog.clearCache()
    path
  }

  private def checkpointFile(path: String): File =
    new File(path, "_delta_log").listFiles().filter(_.getName.endsWith(".checkpoint.parquet")).head

  /** Each row as JSON text, sorted: the same rows whatever read them, maps and structs included. */
  private def asText(df: DataFrame): Seq[String] =
    df.select(to_json(struct(df.columns.map(col).toIndexedSeq: _*)))
      .collect()
      .map(_.getString(0))
      .toSeq
      .sorted

  test("a checkpoint of one row group: several splits, each row read once, as Spark reads it") {
    val file = checkpointFile(table)
    val fs = new Path(file.getAbsolutePath).getFileSystem(spark.sparkContext.hadoopConfiguration)
    val status = fs.getFileStatus(new Path(file.getAbsolutePath))
    val spark_ = spark.read.parquet(file.getAbsolutePath)
    val expected = asText(spark_)
    withConf(smallSplits: _*) {
      // (a new DataFrame for each setting: a DataFrame keeps the plan it made first)
      def ours = SparkBridge.readFiles(
        spark, {
          val conf = ReadConf(spark, Map.empty)
          new RowSplitParquetFormat(conf.checkpointRowSplits, conf.sparkSettings.sql)
        },
        spark_.schema,
        Seq(status),
        Map.empty
      )
      def rowsPerTask = ours.rdd.mapPartitions(rows => Iterator(rows.size)).collect()
      val perTask = rowsPerTask
      assert(perTask.length > 10, s"${status.getLen} bytes in ${perTask.length} splits")
      assert(perTask.count(_ > 0) > 4, perTask.mkString(","))
      assert(perTask.sum === expected.size)
      assert(asText(ours) === expected)
      // a filter Spark pushes to Parquet: its rows, whatever the split reader returned
      val kept = col("add.size") > 600 || col("remove").isNotNull
      assert(asText(ours.where(kept)) === asText(spark_.where(kept)))
      // rows handed out one at a time (no batches) are the same rows
      withConf("spark.sql.parquet.enableNestedColumnVectorizedReader" -> "false") {
        assert(asText(ours) === expected)
      }
      // row splits off (the default): Spark's rule, the split holding the group's middle reads it all
      withConf("spark.deltareplay.replay.checkpointRowSplits" -> "false") {
        val whole = rowsPerTask
        assert(whole.count(_ > 0) === 1 && whole.sum === expected.size, whole.mkString(","))
      }
    }
  }

  test("replay of a checkpoint cut into small splits answers as V1 in every mode") {
    withConf(smallSplits: _*) {
      assertSameAsV1(table)
      // a point query narrows the checkpoint read (two passes, the rows of each split)
      assertSameAsV1(table, query = _.where("id = 1234"), matching = true)
      assertSameAsV1(table, query = _.where("p = '7' AND id > 2200"), matching = true)
      val version = latestVersion(table)
      driverReplayModes.foreach { mode =>
        assert(ourLiveFiles(table, version, mode) === v1LiveFiles(table, version), mode)
      }
    }
    // a first filtered read: two passes over the checkpoint's splits (each a few dozen rows), every
    // row read once by the first, a handful decoded whole by the second
    val rows = spark.read.parquet(checkpointFile(table).getAbsolutePath).count()
    val Decoded = """.*filtered by the query: ([\d,]+) of ([\d,]+) rows decoded whole.*""".r
    withConf(
      "spark.deltareplay.replay.checkpointRowSplits" -> "true",
      "spark.sql.files.maxPartitionBytes" -> "8192",
      "spark.sql.files.openCostInBytes" -> "0"
    ) {
      Seq("id = 1234", "p = '4' AND id BETWEEN 1230 AND 1232").foreach { q =>
        val m = firstFilteredRead(table, q)
        val (kept, seen) = m.replayMode match {
          case Decoded(k, t) => (k.replace(",", "").toLong, t.replace(",", "").toLong)
          case other => fail(s"$q: not narrowed in two passes: $other")
        }
        assert(seen === rows, s"$q: ${m.replayMode}")
        assert(kept > 0 && kept * 10 < seen, s"$q: ${m.replayMode}")
        assert(m.replayTasks > 2, s"$q: $m")
      }
    }
  }

  test("a partition filter reads typed partition values where every add has one, else the map") {
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      def append(from: Long, s: String): Unit =
        spark
          .range(from, from + 120)
          .selectExpr("id", s"$s as s", "cast(id % 3 as int) as n")
          .repartition(6)
          .write
          .format("delta")
          .mode("append")
          .partitionBy("s", "n")
          .save(path)
      // the partition fields every add of the newest checkpoint has a value in, by its footer
      def proven(): Set[String] = {
        val segment =
          internal.log.TableSnapshot.load(spark, path, None, None, sessionConf.log).segment
        val log = new internal.log.LogReader(spark, segment, sessionConf.log)
        val facts = log.footerFacts(segment.checkpoint.head)
        val layout = internal.log.CheckpointLayout.forFile(facts, needStats = true)
        assert(
          layout.partitionParsed
            .map(_.fieldNames.toSet)
            .getOrElse(Set.empty) === facts.partitionParsedInEveryAdd.fieldNames.toSet
        )
        facts.partitionParsedInEveryAdd.fieldNames.toSet
      }
      val queries = Seq("s = '3'", "n = 1 AND s = '5' AND id > 50", "s IS NULL", "n = 2")
      def check(): Unit = queries.foreach { q =>
        val m = firstFilteredRead(path, q)
        assert(m.replayMode.contains("rows decoded whole"), s"$q: ${m.replayMode}")
      }
      append(0, "cast(id % 7 as string)")
      DeltaLog.forTable(spark, path).checkpoint()
      assert(proven() === Set("s", "n"))
      check()
      // a null partition value: `s` is read from the map again, `n` stays typed
      append(500, "cast(null as string)")
      DeltaLog.forTable(spark, path).checkpoint()
      assert(proven() === Set("n"))
      check()
    }
  }
}
