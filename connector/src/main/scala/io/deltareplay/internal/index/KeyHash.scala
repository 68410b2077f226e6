package io.deltareplay.internal.index

import java.nio.charset.StandardCharsets

import scala.collection.mutable

import io.deltareplay.internal.log.{DvDescriptor, FileEntry, TablePaths}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.XXH64
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/** The 64-bit hash of a replay key (canonical path, DV id), the index's way to find a file. */
private[deltareplay] object KeyHash {
  def of(path: String, dv: String): Long = {
    val bytes = (path + "\u0000" + dv).getBytes(StandardCharsets.UTF_8)
    XXH64.hashUnsafeBytes(bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length, 42L)
  }
}

/**
 * [[KeyHash.of]] of a log path as a row holds it: a plain relative path (its own key, see
 * [[TablePaths.isPlainRelative]]) is hashed from its bytes in a reused buffer, with no string made;
 * any other path goes through [[TablePaths.key]].
 */
private[deltareplay] final class KeyHasher(paths: TablePaths) {
  private var buffer = new Array[Byte](512)

  /** The key hash of an entry row ([[FileEntry]]'s layout): its path and its DV's unique id. */
  def ofEntry(entry: FileEntry, r: InternalRow): Long =
    of(
      r.getUTF8String(entry.Ord.Path),
      DvDescriptor.fromInternalRow(r, entry.Ord.Dv).fold("")(_.uniqueId)
    )

  def of(path: UTF8String, dv: String): Long =
    if (!TablePaths.isPlainRelative(path)) KeyHash.of(paths.key(path.toString), dv)
    else {
      val p = path.numBytes()
      val dvBytes = dv.getBytes(StandardCharsets.UTF_8)
      val length = p + 1 + dvBytes.length
      if (buffer.length < length) buffer = new Array[Byte](length * 2)
      path.writeToMemory(buffer, Platform.BYTE_ARRAY_OFFSET)
      buffer(p) = 0
      System.arraycopy(dvBytes, 0, buffer, p + 1, dvBytes.length)
      XXH64.hashUnsafeBytes(buffer, Platform.BYTE_ARRAY_OFFSET, length, 42L)
    }
}

/**
 * Positions of one chunk's rows by key hash: an open-addressing table of row numbers (linear
 * probing, at most half full: 4 to 8 bytes per row), built on first use (an index that is never
 * rolled forward never builds it).
 */
private[deltareplay] final class KeyLookup(hashes: Array[Long], start: Int) {
  @volatile private var built = false

  /** The smallest power of two at least twice the rows. */
  private def slots: Int = Integer.highestOneBit(math.max(2, hashes.length) * 2 - 1) * 2

  private lazy val table: Array[Int] = {
    built = true
    val t = Array.fill(slots)(-1)
    val mask = t.length - 1
    var i = 0
    while (i < hashes.length) {
      var slot = (hashes(i) ^ (hashes(i) >>> 32)).toInt & mask
      while (t(slot) != -1) slot = (slot + 1) & mask
      t(slot) = i
      i += 1
    }
    t
  }

  /** Global positions of the rows whose key hashes to `hash`. */
  def positions(hash: Long): Seq[Int] = {
    val t = table
    val mask = t.length - 1
    var slot = (hash ^ (hash >>> 32)).toInt & mask
    val out = mutable.ArrayBuffer.empty[Int]
    while (t(slot) != -1) {
      if (hashes(t(slot)) == hash) out += start + t(slot)
      slot = (slot + 1) & mask
    }
    out.toSeq
  }

  /** Whether some row's key hashes to `hash` (no allocation: a check per row of a task). */
  def contains(hash: Long): Boolean = {
    val t = table
    val mask = t.length - 1
    var slot = (hash ^ (hash >>> 32)).toInt & mask
    while (t(slot) != -1) {
      if (hashes(t(slot)) == hash) return true
      slot = (slot + 1) & mask
    }
    false
  }

  /** Heap of the table once built (an index that never rolls forward never builds it). */
  def bytes: Long = if (built) 4L * slots else 0L
}
