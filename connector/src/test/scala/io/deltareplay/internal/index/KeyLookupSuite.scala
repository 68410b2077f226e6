package io.deltareplay.internal.index

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

/** A chunk's key lookup finds every row of a hash, and only those, at most half full. */
class KeyLookupSuite extends AnyFunSuite {

  test("positions by key hash: every row with the hash, repeated hashes, absent ones; its size") {
    val r = new Random(62)
    Seq(1, 2, 3, 4, 5, 1000, 1024, 1025, 65536).foreach { n =>
      // a few hashes repeat (one path under two DVs hashes apart, but a collision must be found)
      val hashes = Array.tabulate(n)(i => if (i % 7 == 3) (i / 7).toLong else r.nextLong())
      val start = 1000 * n
      val lookup = new KeyLookup(hashes, start)
      assert(lookup.bytes === 0L, "built before first use")
      val expected = hashes.indices.groupBy(hashes(_))
      expected.foreach { case (h, rows) =>
        assert(lookup.positions(h).sorted === rows.map(_ + start).sorted, s"n=$n hash $h")
      }
      (0 until 50).map(_ => r.nextLong()).filterNot(expected.contains).foreach { h =>
        assert(lookup.positions(h).isEmpty, s"n=$n absent $h")
      }
      val slots = lookup.bytes / 4
      assert(slots >= 2L * n && slots < 4L * math.max(n, 2), s"n=$n: $slots slots")
      assert(java.lang.Long.bitCount(slots) === 1, s"n=$n: $slots slots")
    }
  }
}
