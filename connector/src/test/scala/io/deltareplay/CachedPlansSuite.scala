package io.deltareplay

import java.io.File

import org.apache.commons.io.FileUtils
import org.apache.spark.sql.DataFrame
import org.apache.spark.storage.StorageLevel
import org.scalatest.funsuite.AnyFunSuite

import io.deltareplay.internal.scan.DeltaReplayTable
import io.deltareplay.test.DeltaOracle

/**
 * Cached plans and the DataFrame APIs that look at a plan's files, with the extension installed:
 * what a user sees after each commit is what delta-spark V1 shows (the same steps with routing off
 * are the oracle), on copies of one table written by delta-spark.
 */
class CachedPlansSuite extends AnyFunSuite with DeltaOracle {

  private val EnabledKey = "spark.deltareplay.enabled"

  /** Runs `steps` on a fresh table with routing off and on: both must see the same. */
  private def sameAsV1(name: String)(steps: (String, File) => Seq[Any]): Seq[Any] = {
    def run(on: Boolean) = withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      spark.range(20).selectExpr("id", "id % 2 AS k").write.format("delta").save(path)
      withConf(EnabledKey -> on.toString) {
        try steps(path, dir)
        finally spark.catalog.clearCache()
      }
    }
    val v1 = run(on = false)
    val ours = run(on = true)
    assert(ours === v1, s"$name: with routing on (left) and off (right)")
    v1
  }

  private def routed(df: DataFrame): Boolean =
    df.queryExecution.analyzed.exists {
      case r: org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation =>
        r.table.isInstanceOf[DeltaReplayTable]
      case _ => false
    } || df.queryExecution.normalized.exists {
      case r: org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation =>
        r.table.isInstanceOf[DeltaReplayTable]
      case _ => false
    }

  /**
   * A commit made elsewhere (another process would make it the same way): the copy of the table in
   * `dir` gets an append, and its new commit and data files are copied into `path`.
   */
  private def commitFromElsewhere(path: String, dir: File): Unit = {
    val elsewhere = new File(dir, "elsewhere")
    FileUtils.deleteQuietly(elsewhere)
    FileUtils.copyDirectory(new File(path), elsewhere)
    val before = elsewhere.list().toSet
    withConf(EnabledKey -> "false") {
      spark
        .range(500, 502)
        .selectExpr("id", "0L AS k")
        .write
        .format("delta")
        .mode("append")
        .save(elsewhere.getAbsolutePath)
    }
    elsewhere.list().filterNot(before).filter(_.endsWith(".parquet")).foreach { f =>
      FileUtils.copyFile(new File(elsewhere, f), new File(path, f))
    }
    val log = new File(elsewhere, "_delta_log")
    val newest = log.list().filter(_.endsWith(".json")).max
    FileUtils.copyFile(new File(log, newest), new File(new File(path, "_delta_log"), newest))
  }

  test("a cached DataFrame and CACHE TABLE see delta-spark's commits as V1's do (issue 60)") {
    val seen = sameAsV1("counts after each step") { (path, dir) =>
      val df = spark.read.format("delta").load(path).where("k = 0")
      df.cache()
      assert(routed(df) == spark.conf.get(EnabledKey).toBoolean)
      val out = Seq.newBuilder[Any]
      out += df.count()
      spark.sql(s"INSERT INTO delta.`$path` VALUES (100, 0)")
      out += df.count()
      spark.sql(s"DELETE FROM delta.`$path` WHERE id < 6")
      out += df.count()
      spark
        .range(200, 210)
        .selectExpr("id", "id % 2 AS k")
        .write
        .format("delta")
        .mode("append")
        .save(path)
      out += df.count()
      spark.catalog.refreshByPath(path)
      out += df.count()
      spark.sql(s"CREATE TABLE cached_plans_t USING delta LOCATION '$path'")
      try {
        spark.sql("CACHE TABLE cached_plans_t")
        val t = spark.table("cached_plans_t")
        out += t.where("k = 0").count()
        spark.sql("INSERT INTO cached_plans_t VALUES (300, 0)")
        out += t.where("k = 0").count()
        spark.sql("UPDATE cached_plans_t SET k = 5 WHERE id = 300")
        out += t.where("k = 5").count()
        out += df.count()
        // a commit from elsewhere: cached plans keep what they cached until refreshed
        commitFromElsewhere(path, dir)
        out += df.count()
        out += t.where("k = 0").count()
        spark.catalog.refreshByPath(path)
        out += df.count()
        spark.sql("REFRESH TABLE cached_plans_t")
        out += t.where("k = 0").count()
        out += spark.catalog.isCached("cached_plans_t")
        spark.sql("UNCACHE TABLE cached_plans_t")
        out += spark.catalog.isCached("cached_plans_t")
        out += df.storageLevel
        df.unpersist(blocking = true)
        out += df.storageLevel
      } finally spark.sql("DROP TABLE IF EXISTS cached_plans_t")
      out.result()
    }
    // the table of issue 60 (V1's column), then the steps after it
    assert(seen.take(8) === Seq(10, 11, 8, 13, 13, 13, 14, 1))
    // then: the df's count after the UPDATE, a commit from elsewhere unseen until refreshed, the
    // table's cache; UNCACHE TABLE drops the df's cache too (it reads the same table)
    assert(
      seen.drop(8) === Seq(13, 13, 13, 15, 15, true, false, StorageLevel.NONE, StorageLevel.NONE)
    )
  }

  test("cached reads across schema changes and catalog commands, as V1's") {
    sameAsV1("counts and columns after each step") { (path, _) =>
      spark.sql(s"CREATE TABLE cached_plans_s USING delta LOCATION '$path'")
      try {
        val out = Seq.newBuilder[Any]
        val old = spark.table("cached_plans_s").where("k = 1")
        old.cache()
        out += old.count()
        spark.sql("CACHE TABLE cached_plans_s")
        spark.sql("ALTER TABLE cached_plans_s ADD COLUMNS (w INT)")
        out += spark.catalog.isCached("cached_plans_s")
        spark.sql("INSERT INTO cached_plans_s VALUES (401, 1, 7)")
        out += old.count()
        out += spark.table("cached_plans_s").where("w = 7").count()
        spark.catalog.refreshTable("cached_plans_s")
        out += old.count()
        // a MERGE with schema evolution under a cached DataFrame of the old schema
        withConf("spark.databricks.delta.schema.autoMerge.enabled" -> "true") {
          spark
            .range(1, 4)
            .selectExpr("id", "1L AS k", "8 AS w", "'x' AS extra")
            .createOrReplaceTempView("cached_plans_src")
          spark.sql(
            s"MERGE INTO delta.`$path` t USING cached_plans_src s ON t.id = s.id " +
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
          )
        }
        out += old.count()
        out += spark.read.format("delta").load(path).columns.toSeq
        out += spark.read.format("delta").load(path).where("extra = 'x'").count()
        out.result()
      } finally spark.sql("DROP TABLE IF EXISTS cached_plans_s")
    }
  }

  test("inputFiles, sameSemantics, semanticHash, explain and storageLevel of a routed read") {
    sameAsV1("the APIs' answers") { (path, dir) =>
      val other = new File(dir, "other").getAbsolutePath
      spark.range(3).write.format("delta").save(other)
      val a = spark.read.format("delta").load(path)
      val b = spark.read.format("delta").load(path)
      val c = spark.read.format("delta").load(other)
      val sqlRead = spark.sql(s"SELECT * FROM delta.`$path`")
      val files = new File(path).list().filter(_.endsWith(".parquet")).toSeq.sorted
      val listed =
        a.where("k = 0").inputFiles.map(f => new File(new java.net.URI(f).getPath).getName)
      assert(listed.toSeq.sorted === files, "inputFiles lists the table's live files")
      Seq("simple", "extended", "codegen", "cost", "formatted").foreach { mode =>
        assert(
          a.queryExecution
            .explainString(org.apache.spark.sql.execution.ExplainMode.fromString(mode))
            .nonEmpty
        )
      }
      Seq(
        sqlRead.inputFiles.length,
        a.sameSemantics(b),
        a.sameSemantics(c),
        a.where("k = 0").sameSemantics(b.where("k = 0")),
        a.semanticHash() == b.semanticHash(),
        a.storageLevel,
        { a.persist(StorageLevel.DISK_ONLY); b.storageLevel },
        { a.unpersist(blocking = true); b.storageLevel }
      )
    }
  }
}
