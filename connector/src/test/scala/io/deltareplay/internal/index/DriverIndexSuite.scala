package io.deltareplay.internal.index

import io.deltareplay.internal.log.{
  FileAction,
  FileEntry,
  LiveFile,
  Reconciler,
  TableMeta,
  TablePaths
}
import io.deltareplay.test.SharedSparkSession
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The driver index rolled forward commit by commit and compacted: the live files are always the
 * replay's, and compaction merges only the small chunks roll-forwards appended unless many rows are
 * removed.
 */
class DriverIndexSuite extends AnyFunSuite with SharedSparkSession {

  private val meta = TableMeta(
    TableMeta.Protocol(1, 2, Set.empty, Set.empty, """{"protocol":{}}"""),
    TableMeta.Metadata(
      "id-1",
      new org.apache.spark.sql.types.StructType().add("id", "long"),
      Nil,
      Map.empty,
      """{"metaData":{}}"""
    )
  )
  private val paths =
    TablePaths(new Path("file:/data/t"), FileSystem.getDefaultUri(new Configuration()))

  private def file(i: Int) =
    LiveFile(f"part-$i%07d.parquet", Map.empty, 100L + i, 1000L + i, null, None)

  private def action(version: Long, add: Boolean, i: Int) =
    FileAction.Action(
      version,
      add,
      f"part-$i%07d.parquet",
      Map.empty,
      100L + i,
      1000L + i,
      true,
      null,
      None
    )

  private def livePaths(index: DriverIndex): Set[String] = {
    val out = Set.newBuilder[String]
    index.foreachLive((r, _) => out += r.getUTF8String(index.entry.Ord.Path).toString)
    out.result()
  }

  test("roll-forwards, then a compaction that merges only the appended chunks; then a full one") {
    val entry = FileEntry(meta, "UTC")
    val n = 70000 // two chunks of ChunkRows and 4,464: both big for this index
    var index = DriverIndex.of(entry, paths, "id-1", 0, withStats = false, (0 until n).map(file))
    var expected = (0 until n).map(i => f"part-$i%07d.parquet").toSet
    assert(index.chunks.size === 2)
    var compactions = 0
    (1 to 12).foreach { v =>
      val tail = new Reconciler(paths)
      // each commit removes a file of the big chunks and one appended before, adds two
      val removed = Seq(v * 97, n + 2 * (v - 1)).filter(i => v > 1 || i < n)
      tail.applyCommit(
        removed.map(action(v, add = false, _)) ++ Seq(n + 2 * v, n + 2 * v + 1)
          .map(action(v, add = true, _))
      )
      expected = expected -- removed.map(i => f"part-$i%07d.parquet") ++
        Seq(n + 2 * v, n + 2 * v + 1).map(i => f"part-$i%07d.parquet")
      val rolled = index.rolledForward(tail, v, entry.projector())
      index = if (rolled.wantsCompaction) {
        compactions += 1
        val c = rolled.compacted
        assert(c.chunks.take(2) === rolled.chunks.take(2), "the big chunks must stay shared")
        assert(c.chunks.size === 3, s"v$v: ${c.describe}")
        c
      } else rolled
      assert(index.size === expected.size.toLong, s"v$v")
      assert(livePaths(index) === expected, s"v$v")
    }
    assert(compactions === 1)
    // removing more than a quarter of the rows: every live row rewritten
    val tail = new Reconciler(paths)
    val gone = (0 until n by 2).filter(i => expected.contains(f"part-$i%07d.parquet"))
    tail.applyCommit(gone.map(action(13, add = false, _)))
    val rolled = index.rolledForward(tail, 13, entry.projector())
    assert(rolled.wantsCompaction)
    val full = rolled.compacted
    expected = expected -- gone.map(i => f"part-$i%07d.parquet")
    assert(full.size === expected.size.toLong && livePaths(full) === expected)
    assert(full.chunks.map(_.numRows).sum === expected.size, "no removed row may stay")
    // and the compacted index still finds rows by key for the next roll-forward
    val next = new Reconciler(paths)
    next.applyCommit(Seq(action(14, add = false, 1)))
    assert(
      livePaths(
        full.rolledForward(next, 14, entry.projector())
      ) === expected - "part-0000001.parquet"
    )
  }
}
