package io.deltareplay

import java.io.File

import io.deltareplay.test.{DeltaOracle, LiveParquetReaders}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Deletion vectors and the data path under them, read by this connector and by V1 at the same
 * version: DVs from DELETE, UPDATE and MERGE, rows filtered across Parquet batches in each reader
 * shape (batches, rows of batches, Spark's row reader), and the Parquet readers of a task released
 * file by file.
 */
class DeletionVectorReadSuite extends AnyFunSuite with DeltaOracle {

  private def table(dir: File, name: String = "t"): String = new File(dir, name).getAbsolutePath

  private def sql(s: String): Unit = spark.sql(s).collect()

  /** Ids 0 until `rows` with `columns`, written as a Delta table of `files` files. */
  private def write(path: String, rows: Long, files: Int, dvs: Boolean = true)(
      columns: String*
  ): Unit = {
    val writer = spark.range(0, rows).selectExpr(columns: _*).repartition(files).write
    val options =
      if (dvs) Map("delta.enableDeletionVectors" -> "true") else Map.empty[String, String]
    writer.format("delta").options(options).save(path)
  }

  test("deletion vectors from DELETE, UPDATE and MERGE, then OPTIMIZE and REORG PURGE") {
    withTempDir { dir =>
      val path = table(dir)
      write(path, 400, 2)("id", "cast(id % 5 as int) as g", "cast(id as string) as s")
      sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3")
      val afterDelete = latestVersion(path)
      sql(s"UPDATE delta.`$path` SET s = 'updated' WHERE id % 10 = 4")
      spark
        .range(390, 420)
        .selectExpr("id", "cast(7 as int) as g", "'merged' as s")
        .createOrReplaceTempView("src")
      sql(
        s"MERGE INTO delta.`$path` t USING src ON t.id = src.id " +
          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
      )
      val log = new File(path, "_delta_log").listFiles().filter(_.getName.endsWith(".json"))
      assert(log.exists(f => scala.io.Source.fromFile(f).mkString.contains("deletionVector")))
      assertSameAsV1(path)
      assertSameAsV1(path, version = Some(afterDelete))
      assertLiveFilesMatch(path, latestVersion(path))
      sql(s"OPTIMIZE delta.`$path`")
      assertSameAsV1(path)
      sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 5")
      sql(s"REORG TABLE delta.`$path` APPLY (PURGE)")
      assertSameAsV1(path)
      assertLiveFilesMatch(path, latestVersion(path))
      // every line of these commits decoded by the streaming decoder as the tree decodes it
      io.deltareplay.internal.log.ActionLineSuite.assertDecodedAsTree(
        (0L to latestVersion(path)).flatMap { v =>
          io.deltareplay.test.LogFixtures
            .readLines(io.deltareplay.test.LogFixtures.commitFile(path, v))
        }
      )
    }
  }

  test("deletion vectors over many Parquet batches, nested types, vectorized reader on and off") {
    // batches of 512 rows, not 4,096: the same boundaries crossed with an eighth of the rows
    withTempDir(d => withConf("spark.sql.parquet.columnarReaderBatchSize" -> "512")(dvs(table(d))))
  }

  private def dvs(path: String): Unit = {
    write(path, 4000, 2)(
      "id",
      "cast(id % 5 as int) as g",
      "concat('s-', id) as s",
      "id * 0.5 as d",
      "if(id % 11 = 0, null, named_struct('a', id, 'b', concat('b-', id), " +
        "'c', named_struct('x', id % 3))) as st",
      "if(id % 13 = 0, null, array(id, id + 1)) as arr",
      "map(concat('k', id % 4), id) as m",
      "cast(id as decimal(20, 2)) as dec",
      "cast(concat('x', id) as binary) as bin",
      "timestamp_micros(id * 1000) as ts"
    )
    // scattered rows, and a run that crosses the reader's batch boundaries (each file holds
    // about every other id in order, so whole batches of 512 rows are deleted)
    sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 3 OR id BETWEEN 500 AND 2600")
    // Spark's default code generation: a generated columnar-to-row loop reads our vectors
    withSparkDefaults {
      val df = ours(path)
      val scan = deltaReplayScans(df).head
      val factory =
        scan.toBatch.createReaderFactory().asInstanceOf[internal.read.DeltaReaderFactory]
      assert(factory.rowIndexOrdinal >= 0, "the scan should filter rows by deletion vector")
      assert(factory.columnar, "DV reads should stay columnar")
      val plan = df.queryExecution.executedPlan.toString
      assert(plan.contains("ColumnarToRow"), s"the scan is not read as batches:\n$plan")
      assertSameAsV1(path)
      assertSameAsV1(path, query = _.where("g = 2").select("s", "id", "st", "arr", "m"))
      assertSameAsV1(path, query = _.selectExpr("st.c.x", "st.b", "dec", "bin", "ts", "m['k1']"))
      assertSameAsV1(path, query = _.where("st is null or arr is null").select("id", "g"))
      // `_metadata` is joined to rows: rows decoded by the vectorized reader
      val withMeta = ours(path).select("id", "_metadata.file_name")
      val metaFactory = deltaReplayScans(withMeta).head.toBatch.createReaderFactory()
      assert(metaFactory.asInstanceOf[internal.read.DeltaReaderFactory].vectorizedRows)
      assert(withMeta.count() === v1(path).count())
      // wider than `spark.sql.codegen.maxFields`: Spark takes rows, not batches, from the scan,
      // still decoded by the vectorized reader (not Spark's row reader: a projection per file)
      withConf("spark.sql.codegen.maxFields" -> "4") {
        val wide = deltaReplayScans(ours(path)).head.toBatch.createReaderFactory()
        val rows = wide.asInstanceOf[internal.read.DeltaReaderFactory]
        assert(!rows.columnar && rows.vectorizedRows && rows.rowIndexOrdinal >= 0)
        assertSameAsV1(path)
        assertSameAsV1(path, query = _.where("g = 2").select("s", "id", "st", "arr", "m"))
      }
      withConf("spark.sql.parquet.enableVectorizedReader" -> "false") {
        val plain = deltaReplayScans(ours(path)).head.toBatch.createReaderFactory()
        val rows = plain.asInstanceOf[internal.read.DeltaReaderFactory]
        assert(!rows.vectorizedRows && !rows.columnar)
        assertSameAsV1(path, modes = Seq("local"))
      }
    }
  }

  test("a task's Parquet readers are released file by file, not kept until the task ends") {
    withTempDir { dir =>
      val path = table(dir)
      write(path, 24000, 24, dvs = false)("id", "concat('s-', id) as s", "id * 0.5 as d")
      // all 24 files in one task (Spark's packing rule with no open cost and one partition wanted)
      withConf(
        "spark.sql.files.maxPartitionBytes" -> "1g",
        "spark.sql.files.openCostInBytes" -> "0",
        "spark.sql.files.minPartitionNum" -> "1"
      ) {
        // batches (code generation on, Spark's default) and rows of batches (over `maxFields`)
        Seq("100", "1").foreach { maxFields =>
          withSparkDefaults(withConf("spark.sql.codegen.maxFields" -> maxFields) {
            val df = ours(path)
            val factory = deltaReplayScans(df).head.toBatch.createReaderFactory()
            val reads = factory.asInstanceOf[internal.read.DeltaReaderFactory]
            assert(if (maxFields == "1") reads.vectorizedRows else reads.columnar, maxFields)
            val rdd = df.queryExecution.toRdd
            assert(rdd.getNumPartitions === 1)
            // the file readers alive after every 6,000 rows (a quarter of the files): Spark's own
            // factory keeps every reader a task opened until the task ends
            val live = rdd.mapPartitions(LiveParquetReaders.sampled(_, every = 6000)).collect()
            assert(live.length === 1 && live.head.length === 4, live.toSeq.map(_.toSeq))
            assert(live.head.max <= 2, s"maxFields $maxFields: ${live.head.toSeq} readers alive")
            assertSameAsV1(path, modes = Seq("local"))
          })
        }
      }
    }
  }
}
