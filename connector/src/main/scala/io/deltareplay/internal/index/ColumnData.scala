package io.deltareplay.internal.index

import java.util.BitSet

import io.deltareplay.internal.skipping.{LongCompare, NullWords, SkipVector}
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Compact columns of [[io.deltareplay.internal.log.FileEntry]] rows: the storage of the driver home
 * of the snapshot index. No object per file: primitive arrays, strings as one byte array with
 * offsets (or a dictionary when few distinct values repeat; the prefix and suffix every value
 * shares kept once), a constant or an all-null column when every row agrees, numbers held as int
 * offsets from a base when their range allows, null flags as bit sets.
 *
 * A [[ColumnData]] is plain, serializable data (a planning task builds one and the driver receives
 * it); [[ColumnData.vector]] views it as a Spark `ColumnVector`, so Spark's compiled predicates
 * evaluate over the rows of a `ColumnarBatch` of them directly.
 */
private[deltareplay] sealed trait ColumnData extends Serializable {
  def dataType: DataType
  def vector: ColumnVector

  /** Bytes held (arrays and their headers; estimates for dictionaries). */
  def bytes: Long
}

private[deltareplay] object ColumnData {

  /** One column of `dataType` holding `rows` values read from field `ordinal` of each row. */
  def build(dataType: DataType, rows: IndexedSeq[SpecializedGetters], ordinal: Int): ColumnData = {
    val b = ColumnBuilder(dataType)
    var i = 0
    while (i < rows.size) {
      b.append(rows(i), ordinal)
      i += 1
    }
    b.result()
  }

  /** Whole numbers: constant, int offsets from the minimum, or plain longs. */
  private[internal] def longs(
      dataType: DataType,
      values: Array[Long],
      nulls: BitSet
  ): ColumnData = {
    var lo = Long.MaxValue
    var hi = Long.MinValue
    var i = 0
    while (i < values.length) {
      if (nulls == null || !nulls.get(i)) {
        lo = math.min(lo, values(i))
        hi = math.max(hi, values(i))
      }
      i += 1
    }
    if (lo == hi) ConstantLong(dataType, lo, values.length, nulls)
    else if (hi - lo >= 0 && hi - lo <= Int.MaxValue.toLong - Int.MinValue.toLong) {
      IntOffsets(dataType, lo, values.map(v => (v - lo + Int.MinValue).toInt), nulls)
    } else Longs(dataType, values, nulls)
  }

  /**
   * Strings or binary held as one byte array with offsets (value `i` is `data[offsets(i), offsets(i
   * + 1))`, empty for a null): a dictionary when few distinct values repeat, else the bytes less
   * what every value shares ([[affixed]]).
   */
  private[internal] def strings(
      dataType: DataType,
      data: Array[Byte],
      offsets: Array[Int],
      nulls: BitSet
  ): ColumnData = {
    val n = offsets.length - 1
    def slice(i: Int) = java.nio.ByteBuffer.wrap(data, offsets(i), offsets(i + 1) - offsets(i))
    val distinct = new java.util.HashMap[java.nio.ByteBuffer, Integer]()
    var i = 0
    while (i < n && distinct.size() <= DictionaryMax) {
      if (nulls == null || !nulls.get(i)) distinct.putIfAbsent(slice(i), distinct.size())
      i += 1
    }
    if (distinct.size() <= DictionaryMax && distinct.size() * 4 < n) {
      val dict = new Array[Array[Byte]](distinct.size())
      distinct.forEach { (k, id) =>
        dict(id) = java.util.Arrays.copyOfRange(k.array(), k.position(), k.limit())
      }
      val ids = Array.tabulate(n) { i =>
        if (nulls != null && nulls.get(i)) 0 else distinct.get(slice(i)).intValue()
      }
      if (dict.length <= 256) SmallDictionary(dataType, dict, ids.map(_.toByte), nulls)
      else Dictionary(dataType, dict, ids, nulls)
    } else affixed(dataType, data, offsets, nulls)
  }

  /**
   * Distinct values as bytes, less the prefix and suffix every value shares, each kept once (file
   * paths: a partition directory's common part, Spark's `part-000` and `-c000.snappy.parquet`; 28
   * of the 44 bytes of the synthetic benchmark tables' paths), and with no offsets when what is
   * left of every value has one width (Spark's file names, fixed-width statistics). [[Bytes]] when
   * they share under two bytes and differ in width.
   */
  private def affixed(
      dataType: DataType,
      data: Array[Byte],
      offsets: Array[Int],
      nulls: BitSet
  ): ColumnData = {
    val n = offsets.length - 1
    var first = -1 // the first value that is not null: the prefix and suffix are taken from it
    var prefix = 0
    var suffix = 0
    var shortest = Int.MaxValue
    var longest = 0
    var i = 0
    while (i < n) {
      if (nulls == null || !nulls.get(i)) {
        val from = offsets(i)
        val len = offsets(i + 1) - from
        if (first < 0) {
          first = i
          prefix = len
          suffix = len
        } else {
          val f = offsets(first)
          val flen = offsets(first + 1) - f
          prefix = math.min(prefix, len)
          var k = 0
          while (k < prefix && data(from + k) == data(f + k)) k += 1
          prefix = k
          suffix = math.min(suffix, len)
          k = 0
          while (k < suffix && data(from + len - 1 - k) == data(f + flen - 1 - k)) k += 1
          suffix = k
        }
        shortest = math.min(shortest, len)
        longest = math.max(longest, len)
      }
      i += 1
    }
    val total = offsets(n)
    // (prefix and suffix must not overlap within the shortest value)
    suffix = math.min(suffix, math.max(0, shortest - prefix))
    val nullCount = if (nulls == null) 0 else nulls.cardinality()
    // one width: a null takes as many (zero) bytes, worth it while they cost less than offsets
    val left = longest - prefix - suffix
    val width =
      if (first >= 0 && shortest == longest && nullCount * left.toLong <= 4L * n) left else -1
    if (first < 0 || (prefix + suffix < 2 && width < 0)) {
      return Bytes(
        dataType,
        if (data.length == total) data else java.util.Arrays.copyOf(data, total),
        offsets,
        nulls
      )
    }
    val f = offsets(first)
    val head = java.util.Arrays.copyOfRange(data, f, f + prefix)
    val tail = java.util.Arrays.copyOfRange(data, offsets(first + 1) - suffix, offsets(first + 1))
    if (width >= 0) {
      val packed = hexPacked(dataType, head, tail, data, offsets, width, nulls)
      if (packed != null) return packed
      val middles = new Array[Byte](Math.multiplyExact(n, width))
      i = 0
      while (i < n) {
        if (nulls == null || !nulls.get(i)) {
          System.arraycopy(data, offsets(i) + prefix, middles, i * width, width)
        }
        i += 1
      }
      return Affixed(dataType, head, tail, middles, null, width, nulls)
    }
    val middles = new Array[Byte](total - (n - nullCount) * (prefix + suffix))
    val at = new Array[Int](n + 1)
    i = 0
    while (i < n) {
      if (nulls == null || !nulls.get(i)) {
        val keep = offsets(i + 1) - offsets(i) - prefix - suffix
        System.arraycopy(data, offsets(i) + prefix, middles, at(i), keep)
        at(i + 1) = at(i) + keep
      } else at(i + 1) = at(i) // (a null has no bytes)
      i += 1
    }
    Affixed(dataType, head, tail, middles, at, -1, nulls)
  }

  /**
   * Values of one width between a shared `prefix` and `suffix`, position by position: a byte the
   * same in every value is kept once, in a template; one that is a lowercase hexadecimal digit in
   * every value takes half a byte (the UUID and the task number of a writer's file names:
   * `00000-<uuid>` in about 18 bytes, not 42); the others a byte each. Null when that saves under
   * four bytes a value (the plain fixed-width layout is then about as small, and quicker to read).
   */
  private def hexPacked(
      dataType: DataType,
      prefix: Array[Byte],
      suffix: Array[Byte],
      data: Array[Byte],
      offsets: Array[Int],
      width: Int,
      nulls: BitSet
  ): ColumnData = {
    val n = offsets.length - 1
    val skip = prefix.length
    val template = new Array[Byte](width)
    val same = new Array[Boolean](width)
    val hex = new Array[Boolean](width)
    java.util.Arrays.fill(same, true)
    java.util.Arrays.fill(hex, true)
    var seen = false
    var i = 0
    while (i < n) {
      if (nulls == null || !nulls.get(i)) {
        val from = offsets(i) + skip
        var k = 0
        while (k < width) {
          val b = data(from + k)
          if (!seen) template(k) = b else if (b != template(k)) same(k) = false
          if (!((b >= '0' && b <= '9') || (b >= 'a' && b <= 'f'))) hex(k) = false
          k += 1
        }
        seen = true
      }
      i += 1
    }
    val hexAt = (0 until width).filter(k => !same(k) && hex(k)).toArray
    val rawAt = (0 until width).filter(k => !same(k) && !hex(k)).toArray
    val packedFrom = width - hexAt.length - rawAt.length // positions kept once in the template
    if (packedFrom + hexAt.length / 2 < 4) return null
    (0 until width).foreach(k => if (!same(k)) template(k) = 0)
    val hexBytes = (hexAt.length + 1) / 2 // a row's digits, two to a byte, then its raw bytes
    val stride = hexBytes + rawAt.length
    val packed = new Array[Byte](Math.multiplyExact(n, stride))
    i = 0
    while (i < n) {
      if (nulls == null || !nulls.get(i)) {
        val from = offsets(i) + skip
        val at = i * stride
        var h = 0
        while (h < hexAt.length) {
          val b = data(from + hexAt(h))
          val nibble = if (b <= '9') b - '0' else b - 'a' + 10
          packed(at + (h >>> 1)) = (packed(at + (h >>> 1)) | (nibble << ((h & 1) * 4))).toByte
          h += 1
        }
        var r = 0
        while (r < rawAt.length) {
          packed(at + hexBytes + r) = data(from + rawAt(r))
          r += 1
        }
      }
      i += 1
    }
    HexPacked(dataType, prefix, suffix, template, hexAt, rawAt, packed, nulls)
  }

  private val HexDigits = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII)

  private val DictionaryMax = 4096

  private def nullBytes(nulls: BitSet): Long = if (nulls == null) 0L else 16L + nulls.size() / 8

  final case class AllNull(dataType: DataType) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, null) {
      override def isNullAt(i: Int): Boolean = true
      override def hasNull: Boolean = true
      override def numNulls: Int = Int.MaxValue
      override def getChild(i: Int): ColumnVector =
        AllNull(AllNull.this.dataType.asInstanceOf[StructType](i).dataType).vector
    }
    def bytes: Long = 16
  }

  final case class ConstantLong(dataType: DataType, value: Long, rows: Int, nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new LongVec(dataType, nulls) {
      def long(i: Int): Long = value
      def markCompared(literal: Long, signs: Int, words: Array[Long], n: Int): Unit =
        if (SkipVector.accepts(signs, java.lang.Long.compare(value, literal))) {
          java.util.Arrays.fill(words, 0, n >>> 6, -1L)
          if ((n & 63) != 0) words(n >>> 6) |= (1L << n) - 1 // rows n.. stay clear
        } else orNulls(words)
    }
    def bytes: Long = 32 + nullBytes(nulls)
  }

  final case class IntOffsets(dataType: DataType, base: Long, offsets: Array[Int], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new LongVec(dataType, nulls) {
      def long(i: Int): Long = offsets(i).toLong - Int.MinValue + base
      def markCompared(literal: Long, signs: Int, words: Array[Long], n: Int): Unit = {
        var i = 0
        while (i < n) {
          val c = java.lang.Long.compare(offsets(i).toLong - Int.MinValue + base, literal)
          words(i >>> 6) |= ((signs >>> (c + 1)) & 1L) << i
          i += 1
        }
        orNulls(words)
      }
    }
    def bytes: Long = 32 + 4L * offsets.length + nullBytes(nulls)
  }

  final case class Longs(dataType: DataType, values: Array[Long], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new LongVec(dataType, nulls) {
      def long(i: Int): Long = values(i)
      def markCompared(literal: Long, signs: Int, words: Array[Long], n: Int): Unit = {
        var i = 0
        while (i < n) {
          val c = java.lang.Long.compare(values(i), literal)
          words(i >>> 6) |= ((signs >>> (c + 1)) & 1L) << i
          i += 1
        }
        orNulls(words)
      }
    }
    def bytes: Long = 16 + 8L * values.length + nullBytes(nulls)
  }

  final case class Doubles(dataType: DataType, values: Array[Double], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      override def getDouble(i: Int): Double = values(i)
      override def getFloat(i: Int): Float = values(i).toFloat
    }
    def bytes: Long = 16 + 8L * values.length + nullBytes(nulls)
  }

  final case class Booleans(values: BitSet, nulls: BitSet) extends ColumnData {
    def dataType: DataType = BooleanType
    def vector: ColumnVector = new Vec(BooleanType, nulls) {
      override def getBoolean(i: Int): Boolean = values.get(i)
    }
    def bytes: Long = 32 + values.size() / 8 + nullBytes(nulls)
  }

  final case class Objects(dataType: DataType, values: Array[AnyRef], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      override def getDecimal(i: Int, p: Int, s: Int): Decimal = values(i).asInstanceOf[Decimal]
    }
    def bytes: Long = 16 + 56L * values.length + nullBytes(nulls)
  }

  final case class Bytes(dataType: DataType, data: Array[Byte], offsets: Array[Int], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      override def getUTF8String(i: Int): UTF8String =
        UTF8String.fromBytes(data, offsets(i), offsets(i + 1) - offsets(i))
      override def getBinary(i: Int): Array[Byte] =
        java.util.Arrays.copyOfRange(data, offsets(i), offsets(i + 1))
    }
    def bytes: Long = 32 + data.length + 4L * offsets.length + nullBytes(nulls)
  }

  /**
   * [[Bytes]] with the `prefix` and `suffix` every value shares kept once, and what is left of
   * value `i` at `data[offsets(i), offsets(i + 1))`, or, with no `offsets`, at `data[i * width, (i
   * + 1) * width)`; a value read is built.
   */
  final case class Affixed(
      dataType: DataType,
      prefix: Array[Byte],
      suffix: Array[Byte],
      data: Array[Byte],
      offsets: Array[Int],
      width: Int,
      nulls: BitSet
  ) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      private def value(i: Int): Array[Byte] = {
        val from = if (offsets == null) i * width else offsets(i)
        val len = if (offsets == null) width else offsets(i + 1) - from
        val out = new Array[Byte](prefix.length + len + suffix.length)
        System.arraycopy(prefix, 0, out, 0, prefix.length)
        System.arraycopy(data, from, out, prefix.length, len)
        System.arraycopy(suffix, 0, out, prefix.length + len, suffix.length)
        out
      }
      override def getUTF8String(i: Int): UTF8String = UTF8String.fromBytes(value(i))
      override def getBinary(i: Int): Array[Byte] = value(i)
    }
    def bytes: Long = 64 + prefix.length + suffix.length + data.length +
      (if (offsets == null) 0L else 16L + 4L * offsets.length) + nullBytes(nulls)
  }

  /**
   * Values of one width (see [[ColumnData.hexPacked]]): `prefix`, the `template` with the positions
   * `hexAt` (half a byte each, two to a byte, low half first) and `rawAt` (a byte each) of the row
   * filled in, then `suffix`; a row's packed bytes start at `row * stride`. A value read is built.
   */
  final case class HexPacked(
      dataType: DataType,
      prefix: Array[Byte],
      suffix: Array[Byte],
      template: Array[Byte],
      hexAt: Array[Int],
      rawAt: Array[Int],
      packed: Array[Byte],
      nulls: BitSet
  ) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      private val hexBytes = (hexAt.length + 1) / 2
      private val stride = hexBytes + rawAt.length
      private def value(i: Int): Array[Byte] = {
        val out = new Array[Byte](prefix.length + template.length + suffix.length)
        System.arraycopy(prefix, 0, out, 0, prefix.length)
        System.arraycopy(template, 0, out, prefix.length, template.length)
        System.arraycopy(suffix, 0, out, prefix.length + template.length, suffix.length)
        val at = i * stride
        var h = 0
        while (h < hexAt.length) {
          val nibble = (packed(at + (h >>> 1)) >>> ((h & 1) * 4)) & 0xf
          out(prefix.length + hexAt(h)) = HexDigits(nibble)
          h += 1
        }
        var r = 0
        while (r < rawAt.length) {
          out(prefix.length + rawAt(r)) = packed(at + hexBytes + r)
          r += 1
        }
        out
      }
      override def getUTF8String(i: Int): UTF8String = UTF8String.fromBytes(value(i))
      override def getBinary(i: Int): Array[Byte] = value(i)
    }
    def bytes: Long = 96 + prefix.length + suffix.length + template.length +
      4L * (hexAt.length + rawAt.length) + packed.length + nullBytes(nulls)
  }

  final case class Dictionary(
      dataType: DataType,
      dict: Array[Array[Byte]],
      ids: Array[Int],
      nulls: BitSet
  ) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      private val strings = dict.map(b => UTF8String.fromBytes(b))
      override def getUTF8String(i: Int): UTF8String = strings(ids(i))
      override def getBinary(i: Int): Array[Byte] = dict(ids(i)).clone()
    }
    def bytes: Long = 32 + 4L * ids.length + dict.map(_.length + 48L).sum + nullBytes(nulls)
  }

  /** A dictionary of at most 256 values: one byte per row. */
  final case class SmallDictionary(
      dataType: DataType,
      dict: Array[Array[Byte]],
      ids: Array[Byte],
      nulls: BitSet
  ) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) {
      private val strings = dict.map(b => UTF8String.fromBytes(b))
      override def getUTF8String(i: Int): UTF8String = strings(ids(i) & 0xff)
      override def getBinary(i: Int): Array[Byte] = dict(ids(i) & 0xff).clone()
    }
    def bytes: Long = 32 + ids.length + dict.map(_.length + 48L).sum + nullBytes(nulls)
  }

  final case class StructData(dataType: StructType, children: Array[ColumnData], nulls: BitSet)
      extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, nulls) with NullWords {
      private val vectors = children.map(_.vector)
      def orNulls(words: Array[Long]): Unit = orNullFlags(words)
      override def getChild(i: Int): ColumnVector = vectors(i)
    }
    def bytes: Long = 16 + children.map(_.bytes).sum + nullBytes(nulls)
  }

  /**
   * A struct whose value most rows lack: `present` (ascending) lists the rows that have one; its
   * children are dense over those rows and are read through the row's rank in `present`.
   */
  final case class SparseStruct(
      dataType: StructType,
      present: Array[Int],
      children: Array[ColumnData]
  ) extends ColumnData {
    def vector: ColumnVector = new Vec(dataType, null) {
      private val vectors = children.map(c => new Ranked(c.vector, present))
      override def hasNull: Boolean = true
      override def numNulls: Int = Int.MaxValue
      override def isNullAt(i: Int): Boolean = java.util.Arrays.binarySearch(present, i) < 0
      override def getChild(i: Int): ColumnVector = vectors(i)
    }
    def bytes: Long = 32 + 4L * present.length + children.map(_.bytes).sum
  }

  /** A dense vector read at the rank of the row in `present` (only rows present are asked). */
  private final class Ranked(dense: ColumnVector, present: Array[Int])
      extends ColumnVector(dense.dataType()) {
    private def at(i: Int) = java.util.Arrays.binarySearch(present, i)
    override def close(): Unit = ()
    override def hasNull: Boolean = true
    override def numNulls: Int = Int.MaxValue
    override def isNullAt(i: Int): Boolean = { val r = at(i); r < 0 || dense.isNullAt(r) }
    override def getBoolean(i: Int): Boolean = dense.getBoolean(at(i))
    override def getByte(i: Int): Byte = dense.getByte(at(i))
    override def getShort(i: Int): Short = dense.getShort(at(i))
    override def getInt(i: Int): Int = dense.getInt(at(i))
    override def getLong(i: Int): Long = dense.getLong(at(i))
    override def getFloat(i: Int): Float = dense.getFloat(at(i))
    override def getDouble(i: Int): Double = dense.getDouble(at(i))
    override def getArray(i: Int): ColumnarArray = dense.getArray(at(i))
    override def getMap(i: Int): ColumnarMap = dense.getMap(at(i))
    override def getDecimal(i: Int, p: Int, s: Int): Decimal = dense.getDecimal(at(i), p, s)
    override def getUTF8String(i: Int): UTF8String = dense.getUTF8String(at(i))
    override def getBinary(i: Int): Array[Byte] = dense.getBinary(at(i))
    override def getChild(i: Int): ColumnVector = new Ranked(dense.getChild(i), present)
  }

  /** The common part of the vectors: null flags; every typed getter fails unless overridden. */
  private abstract class Vec(dataType: DataType, nulls: BitSet) extends ColumnVector(dataType) {
    protected final def orNullFlags(words: Array[Long]): Unit =
      if (nulls != null) {
        val w = nulls.toLongArray
        var k = 0
        while (k < w.length) {
          words(k) |= w(k)
          k += 1
        }
      }
    override def close(): Unit = ()
    override def hasNull: Boolean = nulls != null
    override def numNulls: Int = if (nulls == null) 0 else nulls.cardinality()
    override def isNullAt(i: Int): Boolean = nulls != null && nulls.get(i)
    private def no(what: String) =
      throw new UnsupportedOperationException(s"$what of a $dataType index column")
    override def getBoolean(i: Int): Boolean = no("boolean")
    override def getByte(i: Int): Byte = no("byte")
    override def getShort(i: Int): Short = no("short")
    override def getInt(i: Int): Int = no("int")
    override def getLong(i: Int): Long = no("long")
    override def getFloat(i: Int): Float = no("float")
    override def getDouble(i: Int): Double = no("double")
    override def getArray(i: Int): ColumnarArray = no("array")
    override def getMap(i: Int): ColumnarMap = no("map")
    override def getDecimal(i: Int, p: Int, s: Int): Decimal = no("decimal")
    override def getUTF8String(i: Int): UTF8String = no("string")
    override def getBinary(i: Int): Array[Byte] = no("binary")
    override def getChild(i: Int): ColumnVector = no("child")
  }

  /** Whole numbers of any width (and decimals of up to 18 digits) read from one long. */
  private abstract class LongVec(dataType: DataType, nulls: BitSet)
      extends Vec(dataType, nulls)
      with LongCompare {
    def orNulls(words: Array[Long]): Unit = orNullFlags(words)
    def long(i: Int): Long
    override def getLong(i: Int): Long = long(i)
    override def getInt(i: Int): Int = long(i).toInt
    override def getShort(i: Int): Short = long(i).toShort
    override def getByte(i: Int): Byte = long(i).toByte
    override def getDecimal(i: Int, p: Int, s: Int): Decimal = Decimal.createUnsafe(long(i), p, s)
  }
}
