package io.deltareplay

import io.deltareplay.test.{DeltaOracle, LogFixtures}
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.delta.actions.DeletionVectorDescriptor
import org.apache.spark.sql.delta.deletionvectors.{RoaringBitmapArray, RoaringBitmapArrayFormat}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Replay rules on hand-written log actions (shapes delta-spark does not write itself), in both
 * replay modes, against delta-spark V1 reading the same log.
 */
class ReplayRulesSuite extends AnyFunSuite with DeltaOracle {

  private def baseTable(path: String): Seq[String] = {
    spark
      .range(0, 30)
      .selectExpr("id")
      .repartition(3)
      .write
      .format("delta")
      .option("delta.enableDeletionVectors", "true")
      .save(path)
    LogFixtures.readLines(LogFixtures.commitFile(path, 0)).filter(_.startsWith("{\"add\""))
  }

  private def pathOf(addLine: String): String =
    """"path":"([^"]+)"""".r.findFirstMatchIn(addLine).get.group(1)

  test("an add and a remove of one key in the same commit: the add wins (file stays live)") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      val adds = baseTable(path)
      val p = pathOf(adds.head)
      val remove =
        s"""{"remove":{"path":"$p","deletionTimestamp":1700000000000,"dataChange":true}}"""
      // The add follows the remove, as delta-spark's in-order replay needs for the add to win.
      LogFixtures.writeCommit(path, 1, Seq(LogFixtures.commitInfo, remove, adds.head))
      DeltaLog.clearCache()
      assertSameAsV1(path)
      assertLiveFilesMatch(path, 1)
      assert(ourLiveFiles(path, 1, "local").exists(_.endsWith(p)))
    }
  }

  test(
    "remove then re-add of one path in later commits; inline deletion vector replaces the old entry"
  ) {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      val adds = baseTable(path)
      val p = pathOf(adds.head)
      val remove =
        s"""{"remove":{"path":"$p","deletionTimestamp":1700000000000,"dataChange":true}}"""
      LogFixtures.writeCommit(path, 1, Seq(LogFixtures.commitInfo, remove))
      LogFixtures.writeCommit(path, 2, Seq(LogFixtures.commitInfo, adds.head))
      // Version 3: an inline DV deleting rows 0 and 2 of that file (remove old key, add new key).
      val bitmap = RoaringBitmapArray(0L, 2L)
      val dv = DeletionVectorDescriptor.inlineInLog(
        bitmap.serializeAsByteArray(RoaringBitmapArrayFormat.Portable),
        2
      )
      val dvJson =
        s"""{"storageType":"${dv.storageType}","pathOrInlineDv":"${dv.pathOrInlineDv}","sizeInBytes":${dv.sizeInBytes},"cardinality":2}"""
      val addWithDv = adds.head.replaceFirst(
        "\"dataChange\":true",
        s""""dataChange":true,"deletionVector":$dvJson"""
      )
      LogFixtures.writeCommit(path, 3, Seq(LogFixtures.commitInfo, remove, addWithDv))
      DeltaLog.clearCache()
      (1L to 3L).foreach(v => assertLiveFilesMatch(path, v))
      assertSameAsV1(path, version = Some(1))
      assertSameAsV1(path, version = Some(2))
      val m = assertSameAsV1(path)
      assert(m("local").liveFiles === 3)
      assert(ours(path).count() === 28)
    }
  }
}
