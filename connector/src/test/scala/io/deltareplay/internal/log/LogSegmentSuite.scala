package io.deltareplay.internal.log

import java.io.File
import java.nio.file.Files

import io.deltareplay.DeltaReplayException
import io.deltareplay.test.{LogFixtures, SharedSparkSession}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.delta.DeltaLog
import org.scalatest.funsuite.AnyFunSuite

/**
 * Log listing and segment choice ([[LogSegment]], [[LogFiles]]): the newest complete checkpoint at
 * or before the version, the commits after it, and failures that name the version. Most logs are
 * made by hand (only names matter to the listing); delta-spark writes the checkpoint shapes it can.
 */
class LogSegmentSuite extends AnyFunSuite with SharedSparkSession {

  private val conf = new Configuration()

  private def name(v: Long) = f"$v%020d"

  /** A table directory whose `_delta_log` holds empty files (and directories) of these names. */
  private def withLog[T](names: String*)(body: String => T): T = withTempDir { dir =>
    val log = LogFixtures.logDir(dir.getAbsolutePath)
    log.mkdirs()
    names.foreach { n =>
      val f = new File(log, n)
      if (n.endsWith("/")) f.mkdirs()
      else {
        f.getParentFile.mkdirs()
        Files.write(f.toPath, Array[Byte](1))
      }
    }
    body(dir.getAbsolutePath)
  }

  private def commits(vs: Iterable[Long]): Seq[String] = vs.map(v => s"${name(v)}.json").toSeq
  private def classic(v: Long) = s"${name(v)}.checkpoint.parquet"
  private def part(v: Long, p: Int, n: Int) = f"${name(v)}.checkpoint.$p%010d.$n%010d.parquet"
  private def v2(v: Long, uuid: String, fmt: String = "json") = s"${name(v)}.checkpoint.$uuid.$fmt"

  private def segment(path: String, version: Option[Long] = None, excluded: Set[Long] = Set.empty) =
    LogSegment.forVersion(LogSegment.list(new Path(path), conf), version, excluded)

  private def names(files: Seq[org.apache.hadoop.fs.FileStatus]) = files.map(_.getPath.getName)

  private def commitVersions(s: LogSegment) =
    s.commits.map(c => LogFiles.commitVersionOf(c.getPath.toString))

  test("file names: commits and the three checkpoint kinds parse; everything else is ignored") {
    import LogFiles._
    assert(parse(s"${name(12)}.json") === Some(Commit(12)))
    assert(parse(classic(12)) === Some(SingleCheckpoint(12)))
    assert(parse(part(12, 2, 3)) === Some(PartCheckpoint(12, 2, 3)))
    assert(parse(v2(12, "80a0-b1")) === Some(V2Checkpoint(12, "80a0-b1", "json")))
    assert(parse(v2(12, "80a0-b1", "parquet")) === Some(V2Checkpoint(12, "80a0-b1", "parquet")))
    Seq(
      s"${name(12)}.crc",
      s"${name(12)}.json.crc",
      s".${name(12)}.json.crc",
      s".${name(12)}.json.6f1c.tmp",
      s"${name(12)}.json.tmp",
      s"${name(3)}.${name(12)}.compacted.json",
      s"${classic(12)}.crc",
      s"${name(12)}.checkpoint.parquet.tmp",
      f"${name(12)}.checkpoint.1.3.parquet", // part numbers are 10 digits
      "12.json",
      s"${name(12)}.JSON",
      "_last_checkpoint",
      "_commits",
      "_sidecars",
      "_staged_commits",
      s"${name(12)}.checkpoint.a.b.json"
    ).foreach(n => assert(parse(n) === None, n))
    assert(commitName(12) === s"${name(12)}.json")
    assert(commitVersionOf(s"file:/t/_delta_log/${name(12)}.json") === 12L)
  }

  test("no checkpoint: every commit from 0; a version in the middle stops there") {
    withLog(commits(0L to 4L): _*) { path =>
      val s = segment(path)
      assert(s.version === 4 && s.checkpointVersion === None && s.checkpointKind === "none")
      assert(s.checkpoint.isEmpty && commitVersions(s) === (0L to 4L))
      assert(s.describe === "no checkpoint + 5 commits")
      assert(commitVersions(segment(path, Some(2))) === (0L to 2L))
      assert(commitVersions(segment(path, Some(0))) === Seq(0L))
    }
  }

  test("the newest complete checkpoint at or before the version, then the commits after it") {
    withLog(commits(0L to 12L) ++ Seq(classic(3), classic(6), classic(10)): _*) { path =>
      val expected = Map(
        0L -> None,
        2L -> None,
        3L -> Some(3L),
        5L -> Some(3L),
        6L -> Some(6L),
        9L -> Some(6L),
        10L -> Some(10L),
        12L -> Some(10L)
      )
      expected.foreach { case (v, ckpt) =>
        val s = segment(path, Some(v))
        assert(s.version === v && s.checkpointVersion === ckpt, v)
        assert(commitVersions(s) === (ckpt.fold(0L)(_ + 1) to v), v)
        assert(names(s.checkpoint) === ckpt.map(classic).toSeq, v)
        assert(s.checkpointKind === (if (ckpt.isDefined) "classic" else "none"), v)
      }
      assert(segment(path).checkpointVersion === Some(10L))
      // a checkpoint found unreadable is passed over for the next older one
      val older = segment(path, None, excluded = Set(10L))
      assert(older.checkpointVersion === Some(6L) && commitVersions(older) === (7L to 12L))
      assert(segment(path, None, excluded = Set(3L, 6L, 10L)).checkpointVersion === None)
    }
  }

  test("multi-part: all parts, in part order; a set with a part missing is passed over") {
    val complete = Seq(part(4, 3, 3), part(4, 1, 3), part(4, 2, 3))
    val incomplete = Seq(part(8, 1, 3), part(8, 3, 3)) // part 2 of 3 is missing
    withLog(commits(0L to 9L) ++ complete ++ incomplete: _*) { path =>
      val listing = LogSegment.list(new Path(path), conf)
      assert(listing.checkpoints.keySet === Set(4L))
      val s = segment(path)
      assert(s.checkpointVersion === Some(4L) && s.checkpointKind === "multi-part")
      assert(names(s.checkpoint) === Seq(part(4, 1, 3), part(4, 2, 3), part(4, 3, 3)))
      assert(commitVersions(s) === (5L to 9L))
      assert(s.describe === "multi-part checkpoint 4 + 5 commits")
    }
    // two sets at one version (two writers with different part counts): the complete one
    withLog(
      commits(0L to 5L) ++ Seq(part(5, 1, 2), part(5, 1, 3), part(5, 2, 3), part(5, 3, 3)): _*
    ) { path =>
      val s = segment(path)
      assert(s.checkpointVersion === Some(5L) && s.commits.isEmpty)
      assert(names(s.checkpoint) === Seq(part(5, 1, 3), part(5, 2, 3), part(5, 3, 3)))
    }
  }

  test("one version with several checkpoints: V2 over classic over multi-part") {
    val uuids = Seq("b-second", "a-first")
    withLog(
      commits(0L to 7L) ++ Seq(classic(7), part(7, 1, 1)) ++ uuids.map(u => v2(7, u)) ++
        Seq(classic(5), part(5, 1, 2), part(5, 2, 2), part(3, 1, 1)): _*
    ) { path =>
      val s = segment(path)
      assert(s.checkpointKind === "v2" && names(s.checkpoint) === Seq(v2(7, "a-first")))
      assert(segment(path, Some(6)).checkpointKind === "classic")
      assert(segment(path, Some(4)).checkpointKind === "multi-part")
      assert(names(segment(path, Some(4)).checkpoint) === Seq(part(3, 1, 1)))
    }
  }

  test(
    "a checkpoint with a commit missing after it: an older checkpoint whose commits are all there"
  ) {
    // commit 8 is missing: checkpoint 9 serves 9..11; for 8 nothing serves; for 7, checkpoint 4
    withLog(commits((0L to 11L).filterNot(_ == 8L)) ++ Seq(classic(4), classic(9)): _*) { path =>
      assert(segment(path).checkpointVersion === Some(9L))
      assert(commitVersions(segment(path)) === (10L to 11L))
      assert(segment(path, Some(7)).checkpointVersion === Some(4L))
      val e = intercept[DeltaReplayException.CorruptLog](segment(path, Some(8)))
      assert(e.getMessage.contains(s"${name(8)}.json") && e.getMessage.contains("version 8"), e)
      assert(e.getMessage.contains("versions 5..8"), e.getMessage)
      assert(e.getMessage.contains(path), e.getMessage)
    }
  }

  test("a listing from a checkpoint on gives the newest segment a whole listing gives") {
    val files = commits(0L to 23L) ++ Seq(classic(10), s"${name(10)}.crc", part(20, 1, 2)) ++
      Seq(part(20, 2, 2), s"${name(23)}.crc", "_last_checkpoint", "_sidecars/", "_commits/")
    withLog(files: _*) { path =>
      val whole = segment(path)
      Seq(0L, 5L, 10L, 20L).foreach { from =>
        val listed = LogSegment.listFrom(new Path(path), from, conf)
        assert(listed.commits.keySet === (from to 23L).toSet, from)
        val s = LogSegment.forVersion(listed, None)
        assert(s === whole, from)
        assert(
          s.checkpointVersion === Some(20L) && names(s.checksum.toSeq) === Seq(s"${name(23)}.crc")
        )
      }
    }
    // from a checkpoint whose commits after it are not all there: the newest version cannot be
    // loaded from that listing (the caller then lists the whole log and fails as it does)
    withLog(commits((0L to 14L).filterNot(_ == 12L)) ++ Seq(classic(10)): _*) { path =>
      val listed = LogSegment.listFrom(new Path(path), 10L, conf)
      intercept[DeltaReplayException.CorruptLog](LogSegment.forVersion(listed, None))
    }
  }

  test("a gap in commits fails naming the missing version, also when no checkpoint serves") {
    withLog(commits((0L to 6L).filterNot(_ == 3L)): _*) { path =>
      assert(commitVersions(segment(path, Some(2))) === (0L to 2L))
      Seq(3L, 5L, 6L).foreach { v =>
        val e = intercept[DeltaReplayException.CorruptLog](segment(path, Some(v)))
        assert(e.getMessage.contains(s"no commit file for version 3"), e.getMessage)
        assert(e.getMessage.contains(s"versions 0..$v"), e.getMessage)
      }
      // LogSegment.load passes the typed error on (not wrapped)
      intercept[DeltaReplayException.CorruptLog](LogSegment.load(new Path(path), None, conf))
    }
    // the commit right after the newest checkpoint is missing
    withLog(commits((0L to 6L).filterNot(_ == 5L)) ++ Seq(classic(4)): _*) { path =>
      val e = intercept[DeltaReplayException.CorruptLog](segment(path))
      assert(e.getMessage.contains("no commit file for version 5"), e.getMessage)
    }
  }

  test("versions beyond the newest, negative, and cleaned up fail with VersionNotFound") {
    withLog(commits(5L to 9L) ++ Seq(classic(5)): _*) { path =>
      val listing = LogSegment.list(new Path(path), conf)
      assert(listing.latestVersion === 9L && listing.earliestReadable === Some(5L))
      val tooNew = intercept[DeltaReplayException.VersionNotFound](segment(path, Some(10)))
      assert(
        tooNew.getMessage.contains("version 10") && tooNew.getMessage.contains(
          "newest version is 9"
        )
      )
      val old = intercept[DeltaReplayException.VersionNotFound](segment(path, Some(4)))
      assert(
        old.getMessage.contains("version 4") && old.getMessage.contains(
          "earliest readable version is 5"
        )
      )
      intercept[DeltaReplayException.VersionNotFound](segment(path, Some(-1)))
      assert(segment(path, Some(5)).commits.isEmpty)
    }
    // a checkpoint newer than every commit file (its commit cleaned up or not listed yet)
    withLog(commits(0L to 2L) ++ Seq(classic(3)): _*) { path =>
      val s = segment(path)
      assert(s.version === 3 && s.checkpointVersion === Some(3L) && s.commits.isEmpty)
    }
    // nothing from 0 and no checkpoint: no version can be reconstructed
    withLog(commits(3L to 4L): _*) { path =>
      val e = intercept[DeltaReplayException.VersionNotFound](segment(path, Some(4)))
      assert(e.getMessage.contains("No version of this table can be reconstructed"), e.getMessage)
    }
  }

  test("not a Delta table: no log, an empty log, or a log of other files only") {
    withTempDir { dir =>
      intercept[DeltaReplayException.NotADeltaTable](
        LogSegment.list(new Path(dir.getAbsolutePath), conf)
      )
    }
    withLog("_last_checkpoint", s"${name(0)}.crc", "_commits/") { path =>
      val e = intercept[DeltaReplayException.NotADeltaTable](LogSegment.list(new Path(path), conf))
      assert(e.getMessage.contains(new Path(path).toString), e.getMessage)
    }
  }

  test("compacted logs, checksums, temp files, _commits/ and _sidecars/ take no part") {
    val noise = Seq(
      s"${name(0)}.crc",
      s"${name(7)}.crc",
      s".${name(7)}.json.crc",
      s".${name(8)}.json.4c1e.tmp", // a commit being written: not a commit yet
      s"${name(8)}.json.tmp",
      s"${name(2)}.${name(6)}.compacted.json",
      s"_commits/${name(8)}.6b2f.json", // an unbackfilled commit of a coordinated table
      "_commits/",
      s"_sidecars/${name(4)}.parquet",
      s"${classic(8)}.crc",
      "_last_checkpoint"
    )
    withLog(commits(0L to 7L) ++ Seq(classic(4)) ++ noise: _*) { path =>
      val listing = LogSegment.list(new Path(path), conf)
      assert(listing.commits.keySet === (0L to 7L).toSet && listing.checkpoints.keySet === Set(4L))
      assert(listing.latestVersion === 7L)
      val s = segment(path)
      assert(names(s.checkpoint) === Seq(classic(4)) && commitVersions(s) === (5L to 7L))
      intercept[DeltaReplayException.VersionNotFound](segment(path, Some(8)))
    }
  }

  test(
    "delta-spark's checkpoints: classic with _last_checkpoint missing its file, multi-part, V2"
  ) {
    def append(path: String, n: Int): Unit =
      spark.range(n).selectExpr("id").write.format("delta").mode("append").save(path)
    withTempDir { dir =>
      val path = new File(dir, "t").getAbsolutePath
      (0 until 3).foreach(_ => append(path, 3))
      val log = DeltaLog.forTable(spark, path)
      log.checkpoint(log.update())
      new File(LogFixtures.logDir(path), classic(2)).delete()
      val last = LogFixtures.readLines(new File(LogFixtures.logDir(path), "_last_checkpoint"))
      assert(last.head.contains("\"version\":2"), last) // still names the deleted checkpoint
      spark.conf.set("spark.databricks.delta.checkpoint.partSize", "1")
      try {
        append(path, 3)
        DeltaLog.clearCache()
        val l = DeltaLog.forTable(spark, path)
        l.checkpoint(l.update())
      } finally spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
      val s = segment(path)
      assert(s.checkpointKind === "multi-part" && s.checkpointVersion === Some(3L), s.describe)
      assert(s.checkpoint.size > 1 && s.commits.isEmpty, s.describe)
      assert(segment(path, Some(2)).checkpointVersion === None) // the deleted classic one
      assert(commitVersions(segment(path, Some(2))) === (0L to 2L))
    }
    withTempDir { dir =>
      val path = new File(dir, "v2").getAbsolutePath
      append(path, 3)
      spark.sql(s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')")
      spark.conf.set("spark.databricks.delta.checkpoint.partSize", "1")
      try {
        append(path, 3)
        append(path, 3)
        val l = DeltaLog.forTable(spark, path)
        l.checkpoint(l.update())
      } finally spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
      append(path, 3)
      val sidecars = new File(LogFixtures.logDir(path), "_sidecars").list()
      assert(sidecars != null && sidecars.length > 1, "delta-spark wrote no sidecars")
      val s = segment(path)
      assert(s.checkpointKind === "v2" && s.checkpointVersion === Some(3L), s.describe)
      // the top-level file only: sidecars are found when it is read
      assert(s.checkpoint.size === 1 && !names(s.checkpoint).head.contains("sidecar"), s.describe)
      assert(LogFiles.parse(names(s.checkpoint).head).exists(_.isInstanceOf[LogFiles.V2Checkpoint]))
      assert(commitVersions(s) === Seq(4L))
    }
  }
}
