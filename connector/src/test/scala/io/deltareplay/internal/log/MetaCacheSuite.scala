package io.deltareplay.internal.log

import java.io.File
import java.net.URI

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.session.SessionState
import io.deltareplay.test.DeltaOracle
import org.apache.commons.io.FileUtils
import org.apache.hadoop.fs.{FSDataInputStream, Path, RawLocalFileSystem}
import org.apache.spark.sql.delta.DeltaLog
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[MetaCache]]: loading a newer version reads only the commits after the cached load, and the
 * protocol and metadata it gives are those of a load without the cache and of V1, through schema
 * changes, time travel and a table recreated at the same path.
 */
class MetaCacheSuite extends AnyFunSuite with DeltaOracle {

  /** Log files (names) this suite's loads opened while `body` ran, and its result. */
  private def reading[T](body: => T): (T, Seq[String]) = {
    OpenCountingFileSystem.opened.clear()
    val result = body
    (result, OpenCountingFileSystem.opened.asScala.toSeq.sorted)
  }

  /** Loads through `countfs:`, the local file system counting the files it opens. */
  private def load(path: String, version: Option[Long] = None): TableSnapshot = {
    spark.sparkContext.hadoopConfiguration
      .set("fs.countfs.impl", classOf[OpenCountingFileSystem].getName)
    TableSnapshot.load(spark, s"countfs://$path", version, None, sessionConf.log)
  }

  private def uncached(path: String, version: Long): TableMeta =
    withConf("spark.deltareplay.replay.stateCache.enabled" -> "false")(
      load(path, Some(version)).meta
    )

  private def append(path: String, from: Long): Unit =
    spark.range(from, from + 5).write.format("delta").mode("append").save(path)

  /** A table of appends at `dir`/t: versions 0 to `lastVersion`, a checkpoint at v3. */
  private def checkpointedAt3(dir: File, lastVersion: Int): String = {
    val path = new File(dir, "t").getAbsolutePath
    spark.range(0, 5).write.format("delta").save(path)
    (1 to 3).foreach(i => append(path, i * 10L))
    DeltaLog.forTable(spark, path).checkpoint()
    (4 to lastVersion).foreach(i => append(path, i * 10L))
    path
  }

  private def assertAsV1(path: String, s: TableSnapshot): Unit = {
    val v1 = DeltaLog.forTable(spark, path).getSnapshotAt(s.version).metadata
    assert(s.meta.tableId == v1.id, s"table id at v${s.version}")
    assert(s.schema.fieldNames.toSeq == v1.schema.fieldNames.toSeq, s"schema at v${s.version}")
    assert(s.meta == uncached(path, s.version), s"protocol and metadata at v${s.version}")
  }

  test(
    "a newer version reads only its new commits; schema changes, time travel and a recreated table as V1"
  ) {
    withTempDir { dir =>
      val path = checkpointedAt3(dir, lastVersion = 6) // the tail holds no protocol/metaData
      SessionState.clear(spark)

      val (v6, firstRead) = withConf("spark.deltareplay.replay.useChecksum" -> "false") {
        reading(load(path))
      }
      assert(v6.version == 6)
      // the three commits after the checkpoint, newest first, then the checkpoint
      assert(firstRead.count(_.endsWith(".json")) == 3, firstRead)
      assert(firstRead.exists(_.endsWith(".checkpoint.parquet")), firstRead)
      assertAsV1(path, v6)

      // The same version again: no log file is read (the listing alone tells it is the same).
      val (again, againRead) = reading(load(path))
      assert(again.meta == v6.meta)
      assert(againRead.isEmpty, "the same version loaded again read log files")

      // One more commit: that commit is the one file read.
      append(path, 70)
      val (v7, read7) = reading(load(path))
      assert(v7.version == 7)
      assert(read7 == Seq(f"${7L}%020d.json"), read7)
      assertAsV1(path, v7)

      // A schema change and a table property in new commits replace the cached metadata.
      spark.sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (extra STRING)")
      spark.sql(s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
      val v9 = load(path)
      assert(v9.schema.fieldNames.contains("extra"))
      assert(v9.meta.configuration.get("delta.appendOnly").contains("true"))
      assertAsV1(path, v9)

      // Time travel to an older version, then the newest again.
      assertAsV1(path, load(path, Some(5)))
      assertAsV1(path, load(path, Some(1)))
      assertAsV1(path, load(path))

      // The table deleted and written again at the same path, with a checkpoint at the same
      // version and as many commits: the same file names, other files.
      FileUtils.deleteDirectory(new File(path))
      DeltaLog.clearCache()
      spark.range(0, 3).selectExpr("id", "'x' AS s").write.format("delta").save(path)
      (1 to 3).foreach(i => append(path, i * 10L))
      DeltaLog.forTable(spark, path).checkpoint()
      (4 to 9).foreach(i => append(path, i * 10L))
      val recreated = load(path)
      assert(recreated.version == 9 && recreated.segment.checkpointVersion.contains(3L))
      assert(recreated.meta.tableId != v9.meta.tableId)
      assert(recreated.schema.fieldNames.toSeq == Seq("id", "s"))
      assertAsV1(path, recreated)
    }
  }

  test(
    "protocol and metadata from the version checksum file; a corrupt, partial or missing one: the log"
  ) {
    withTempDir { dir =>
      val path = checkpointedAt3(dir, lastVersion = 5)
      spark.sql(s"ALTER TABLE delta.`$path` ADD COLUMNS (extra STRING)")
      spark.sql(s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
      append(path, 80)
      val log = new File(path, "_delta_log")
      def crc(v: Long) = new File(log, f"$v%020d.crc")
      assert((0L to 8L).forall(crc(_).isFile), "delta-spark wrote no version checksum files")
      def fromLog(version: Long): TableMeta =
        withConf("spark.deltareplay.replay.useChecksum" -> "false") {
          SessionState.clear(spark)
          load(path, Some(version)).meta
        }

      // The newest version: its checksum file and the checkpoint's footer (checked before any
      // replay); no commit is read. The same protocol and metadata as from the log, and as V1's.
      SessionState.clear(spark)
      val (v8, read8) = reading(load(path))
      assert(v8.version == 8)
      assert(read8 == Seq(f"${3L}%020d.checkpoint.parquet", f"${8L}%020d.crc"), read8)
      assert(v8.meta == fromLog(8))
      assert(v8.schema.fieldNames.contains("extra"))
      assert(v8.meta.configuration.get("delta.appendOnly").contains("true"))
      assertAsV1(path, v8)
      // time travel takes the checksum of the version it reads
      SessionState.clear(spark)
      val (v5, read5) = reading(load(path, Some(5)))
      assert(read5.contains(f"${5L}%020d.crc") && !read5.exists(_.endsWith(".json")), read5)
      assert(v5.meta == fromLog(5) && !v5.schema.fieldNames.contains("extra"))

      // Not JSON, then without metadata: passed over, the log gives them.
      java.nio.file.Files.write(crc(8).toPath, "{not json".getBytes("UTF-8"))
      SessionState.clear(spark)
      SessionState.clear(spark) // the commits are read again, not found in memory
      val (corrupt, readCorrupt) = reading(load(path))
      assert(readCorrupt.count(_.endsWith(".json")) >= 1, readCorrupt)
      assert(corrupt.meta == fromLog(8))
      java.nio.file.Files.write(crc(8).toPath, "{\"numFiles\":1}".getBytes("UTF-8"))
      SessionState.clear(spark)
      assert(load(path).meta == fromLog(8))
      // Missing: the log.
      assert(crc(8).delete())
      SessionState.clear(spark)
      val (missing, readMissing) = reading(load(path))
      assert(!readMissing.exists(_.endsWith(".crc")) && readMissing.exists(_.endsWith(".json")))
      assert(missing.meta == fromLog(8))
      assertAsV1(path, missing)
    }
  }
}

/** The local file system under the scheme `countfs`, noting the name of every file it opens. */
class OpenCountingFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("countfs:///")
  override def getScheme: String = "countfs"

  /** Counts files opened (an attempt on a missing file, such as a probe, opens nothing). */
  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    val in = super.open(f, bufferSize)
    OpenCountingFileSystem.opened.add(f.getName)
    in
  }
}

object OpenCountingFileSystem {
  val opened: java.util.concurrent.ConcurrentLinkedQueue[String] =
    new java.util.concurrent.ConcurrentLinkedQueue[String]()
}
