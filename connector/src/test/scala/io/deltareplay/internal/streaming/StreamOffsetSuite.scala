package io.deltareplay.internal.streaming

import scala.util.Random

import org.apache.spark.sql.delta.sources.DeltaSourceOffset
import org.scalatest.funsuite.AnyFunSuite

/**
 * Stream offsets read and write delta-spark's `DeltaSourceOffset` JSON and order as it does, so a
 * checkpoint moves between the two sources (no Spark session needed).
 */
class StreamOffsetSuite extends AnyFunSuite {

  private val id = "8f3d4c9a-72b3-4873-97ff-70b72c4a233b"

  private def random(r: Random): StreamOffset =
    StreamOffset(
      id,
      r.nextInt(50).toLong,
      if (r.nextInt(5) == 0) StreamOffset.Base else r.nextInt(2000).toLong,
      r.nextBoolean()
    )

  // delta-spark's in-memory base index is BASE_INDEX; its JSON carries -1 as ours does
  private def theirIndex(i: Long): Long =
    if (i == StreamOffset.Base) DeltaSourceOffset.BASE_INDEX else i
  private def ourIndex(i: Long): Long =
    if (i == DeltaSourceOffset.BASE_INDEX) StreamOffset.Base else i

  private def theirs(o: StreamOffset): DeltaSourceOffset =
    DeltaSourceOffset(o.tableId, o.version, theirIndex(o.index), o.initialSnapshot)

  test("JSON round trip through DeltaSourceOffset, both directions") {
    val r = new Random(20261125)
    (0 until 500).map(_ => random(r)).foreach { o =>
      val parsed = DeltaSourceOffset(id, o.json())
      assert(
        (
          parsed.reservoirId,
          parsed.reservoirVersion,
          ourIndex(parsed.index),
          parsed.isInitialSnapshot
        ) ===
          (o.tableId, o.version, o.index, o.initialSnapshot),
        o.json()
      )
      assert(StreamOffset.parse(theirs(o).json(), "t", id) === o, theirs(o).json())
    }
  }

  test("offsets of one stream order as DeltaSourceOffset orders them") {
    val r = new Random(7)
    (0 until 2000).foreach { _ =>
      val (a, b) = (random(r), random(r))
      // one stream never holds a snapshot offset and a commit offset of the same version
      if (a.version != b.version || a.initialSnapshot == b.initialSnapshot)
        assert(
          math.signum(a.compare(b)) === math.signum(theirs(a).compare(theirs(b))),
          s"${a.json()} vs ${b.json()}"
        )
    }
  }

  test("another table's offset, a schema-tracking offset and garbage fail naming the table") {
    val other = StreamOffset("another-id", 3, 4, initialSnapshot = false)
    val e1 = intercept[Exception](StreamOffset.parse(other.json(), "/data/t", id))
    assert(e1.getMessage.contains("another-id") && e1.getMessage.contains(id), e1.getMessage)
    val tracking = DeltaSourceOffset(id, 3, DeltaSourceOffset.METADATA_CHANGE_INDEX, false)
    val e2 = intercept[Exception](StreamOffset.parse(tracking.json(), "/data/t", id))
    assert(e2.getMessage.contains("/data/t"), e2.getMessage)
    val e3 = intercept[Exception](StreamOffset.parse("{not json", "/data/t", id))
    assert(e3.getMessage.contains("/data/t"), e3.getMessage)
  }
}
