package io.deltareplay.internal

import java.util.BitSet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarBatch, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Compact columns of [[FileEntry]] rows: the storage of the driver home of the snapshot index. No
 * object per file: primitive arrays, strings as one byte array with offsets (or a dictionary when
 * few distinct values repeat), a constant or an all-null column when every row agrees, numbers held
 * as int offsets from a base when their range allows, null flags as bit sets.
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
   * + 1))`, empty for a null): a dictionary when few distinct values repeat, else the bytes as they
   * are.
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
    } else {
      val total = offsets(n)
      Bytes(
        dataType,
        if (data.length == total) data else java.util.Arrays.copyOf(data, total),
        offsets,
        nulls
      )
    }
  }

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

  /**
   * A vector whose rows are null exactly where its null flags say ([[SkipVector]] reads them as bit
   * words instead of row by row).
   */
  private[internal] trait NullWords {

    /** Sets the bits of `words` of the rows that are null. */
    def orNulls(words: Array[Long]): Unit
  }

  /**
   * Whole numbers compared with a literal in one loop over the column's own layout ([[SkipVector]]
   * on a million entries: no call per row through `ColumnVector`).
   */
  private[internal] trait LongCompare extends NullWords {

    /**
     * Sets bit `i` of `words`, for rows `i < n`, where the sign of `compare(value(i), literal)` is
     * one of `signs` (bit 0 less, bit 1 equal, bit 2 greater) or the row is null.
     */
    def markCompared(literal: Long, signs: Int, words: Array[Long], n: Int): Unit
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

/**
 * Builds one [[ColumnData]] a value at a time, so that rows can be read once, as they stream by (a
 * replay task's rows are views that the next row overwrites: nothing of them is kept), into
 * growable primitive arrays; [[result]] then picks the compact layout.
 */
private[deltareplay] sealed abstract class ColumnBuilder(val dataType: DataType) {
  protected var n = 0
  protected var nulls: BitSet = null

  /** Values appended. */
  final def size: Int = n

  /** Appends field `ordinal` of `row` (null or not). */
  final def append(row: SpecializedGetters, ordinal: Int): Unit =
    if (row.isNullAt(ordinal)) appendNull()
    else {
      put(row, ordinal)
      n += 1
    }

  final def appendNull(): Unit = {
    if (nulls == null) nulls = new BitSet()
    nulls.set(n)
    putNull()
    n += 1
  }

  /** Stores field `ordinal` of `row` (not null) at position `n`. */
  protected def put(row: SpecializedGetters, ordinal: Int): Unit

  /** Stores a placeholder at position `n` (the position is null). */
  protected def putNull(): Unit

  protected def build(): ColumnData

  final def result(): ColumnData =
    if (nulls != null && nulls.cardinality() == n) ColumnData.AllNull(dataType) else build()

  protected final def grown(capacity: Int): Int =
    math.max(16, math.min(Int.MaxValue - 16L, capacity.toLong * 2).toInt)
}

private[deltareplay] object ColumnBuilder {

  def apply(dataType: DataType): ColumnBuilder = dataType match {
    case s: StructType => new StructBuilder(s)
    case LongType | TimestampType | TimestampNTZType => new LongBuilder(dataType, 0)
    case IntegerType | DateType => new LongBuilder(dataType, 1)
    case ShortType => new LongBuilder(dataType, 2)
    case ByteType => new LongBuilder(dataType, 3)
    case d: DecimalType if d.precision <= Decimal.MAX_LONG_DIGITS => new LongBuilder(dataType, 4)
    case _: DecimalType => new DecimalBuilder(dataType.asInstanceOf[DecimalType])
    case BooleanType => new BooleanBuilder
    case FloatType | DoubleType => new DoubleBuilder(dataType)
    case _: StringType | BinaryType => new BytesBuilder(dataType)
    case other => throw new IllegalArgumentException(s"no compact column for $other")
  }

  /** Whole numbers (and decimals of up to 18 digits, unscaled) as longs; `kind` is the width. */
  private final class LongBuilder(dataType: DataType, kind: Int) extends ColumnBuilder(dataType) {
    private var values = new Array[Long](1024)
    private val decimal = dataType match {
      case d: DecimalType => d
      case _ => null
    }
    private def ensure(): Unit =
      if (n == values.length) values = java.util.Arrays.copyOf(values, grown(n))
    protected def put(row: SpecializedGetters, ordinal: Int): Unit = {
      ensure()
      values(n) = (kind: @scala.annotation.switch) match {
        case 0 => row.getLong(ordinal)
        case 1 => row.getInt(ordinal).toLong
        case 2 => row.getShort(ordinal).toLong
        case 3 => row.getByte(ordinal).toLong
        case _ => row.getDecimal(ordinal, decimal.precision, decimal.scale).toUnscaledLong
      }
    }
    protected def putNull(): Unit = { ensure(); values(n) = 0L }
    protected def build(): ColumnData =
      ColumnData.longs(dataType, java.util.Arrays.copyOf(values, n), nulls)
  }

  private final class DecimalBuilder(d: DecimalType) extends ColumnBuilder(d) {
    private val values = scala.collection.mutable.ArrayBuffer.empty[AnyRef]
    protected def put(row: SpecializedGetters, ordinal: Int): Unit =
      values += row.getDecimal(ordinal, d.precision, d.scale).clone()
    protected def putNull(): Unit = values += null
    protected def build(): ColumnData = ColumnData.Objects(d, values.toArray, nulls)
  }

  private final class BooleanBuilder extends ColumnBuilder(BooleanType) {
    private val values = new BitSet()
    protected def put(row: SpecializedGetters, ordinal: Int): Unit =
      if (row.getBoolean(ordinal)) values.set(n)
    protected def putNull(): Unit = ()
    protected def build(): ColumnData = ColumnData.Booleans(values, nulls)
  }

  private final class DoubleBuilder(dataType: DataType) extends ColumnBuilder(dataType) {
    private var values = new Array[Double](1024)
    private val float = dataType == FloatType
    private def ensure(): Unit =
      if (n == values.length) values = java.util.Arrays.copyOf(values, grown(n))
    protected def put(row: SpecializedGetters, ordinal: Int): Unit = {
      ensure()
      values(n) = if (float) row.getFloat(ordinal).toDouble else row.getDouble(ordinal)
    }
    protected def putNull(): Unit = { ensure(); values(n) = 0.0 }
    protected def build(): ColumnData =
      ColumnData.Doubles(dataType, java.util.Arrays.copyOf(values, n), nulls)
  }

  /** Strings or binary: their bytes end to end in one growing array, with offsets. */
  private final class BytesBuilder(dataType: DataType) extends ColumnBuilder(dataType) {
    private var data = new Array[Byte](16384)
    private var offsets = new Array[Int](1025)
    private var total = 0
    private val binary = dataType == BinaryType
    private def reserve(bytes: Int): Unit = {
      if (n + 1 == offsets.length) offsets = java.util.Arrays.copyOf(offsets, grown(n + 1))
      if (total.toLong + bytes > data.length) {
        val want = math.max(grown(data.length).toLong, total.toLong + bytes)
        if (want > Int.MaxValue - 16) {
          throw new IllegalStateException(s"a $dataType index column over 2 GB: $n values")
        }
        data = java.util.Arrays.copyOf(data, want.toInt)
      }
    }
    protected def put(row: SpecializedGetters, ordinal: Int): Unit = {
      if (binary) {
        val b = row.getBinary(ordinal)
        reserve(b.length)
        System.arraycopy(b, 0, data, total, b.length)
        total += b.length
      } else {
        val s = row.getUTF8String(ordinal)
        reserve(s.numBytes())
        s.writeToMemory(data, org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET + total)
        total += s.numBytes()
      }
      offsets(n + 1) = total
    }
    protected def putNull(): Unit = { reserve(0); offsets(n + 1) = total }
    protected def build(): ColumnData =
      ColumnData.strings(dataType, data, java.util.Arrays.copyOf(offsets, n + 1), nulls)
  }

  /**
   * A struct: one builder per field, every row appended to each (a null struct as null fields). A
   * struct that most rows lack (deletion vectors) keeps only the rows that have one.
   */
  private final class StructBuilder(s: StructType) extends ColumnBuilder(s) {
    private val children = s.fields.map(f => ColumnBuilder(f.dataType))
    protected def put(row: SpecializedGetters, ordinal: Int): Unit = {
      val inner = row.getStruct(ordinal, s.length)
      var i = 0
      while (i < children.length) {
        children(i).append(inner, i)
        i += 1
      }
    }
    protected def putNull(): Unit = {
      var i = 0
      while (i < children.length) {
        children(i).appendNull()
        i += 1
      }
    }
    protected def build(): ColumnData = {
      val nullCount = if (nulls == null) 0 else nulls.cardinality()
      if (nullCount * 2 > n) {
        val present = (0 until n).filterNot(nulls.get).toArray
        ColumnData.SparseStruct(s, present, children.map(c => gathered(c.result(), present)))
      } else ColumnData.StructData(s, children.map(_.result()), nulls)
    }

    /** The values of `column` at `rows` only, in a column of their own. */
    private def gathered(column: ColumnData, rows: Array[Int]): ColumnData = {
      val view = new ColumnarBatch(Array(column.vector), n)
      val b = ColumnBuilder(column.dataType)
      rows.foreach(i => b.append(view.getRow(i), 0))
      b.result()
    }
  }
}

/** Builds an [[EntryChunk]] a [[FileEntry]] row at a time (the rows need not outlive the call). */
private[deltareplay] final class EntryChunkBuilder(entry: FileEntry) {
  private val columns = entry.schema.fields.map(f => ColumnBuilder(f.dataType))
  private var hashes = new Array[Long](1024)
  private var n = 0

  def size: Int = n

  def append(row: InternalRow, keyHash: Long): Unit = {
    if (n == hashes.length) hashes = java.util.Arrays.copyOf(hashes, n * 2)
    hashes(n) = keyHash
    var i = 0
    while (i < columns.length) {
      columns(i).append(row, i)
      i += 1
    }
    n += 1
  }

  def result(): EntryChunk =
    EntryChunk(columns.map(_.result()), java.util.Arrays.copyOf(hashes, n), n)
}

/**
 * A chunk of the driver index: `numRows` [[FileEntry]] rows as columns, in entry order, with the
 * 64-bit hash of each row's replay key (to find the rows a later commit removes).
 */
private[deltareplay] final case class EntryChunk(
    columns: Array[ColumnData],
    keyHashes: Array[Long],
    numRows: Int
) {
  @transient lazy val batch: ColumnarBatch = new ColumnarBatch(columns.map(_.vector), numRows)

  def bytes: Long = columns.map(_.bytes).sum + 8L * keyHashes.length + 64
}

private[deltareplay] object EntryChunk {

  /** Columns of `rows` ([[FileEntry]] rows of `entry`) and their key hashes. */
  def apply(entry: FileEntry, rows: IndexedSeq[InternalRow], keyHashes: Array[Long]): EntryChunk = {
    val b = new EntryChunkBuilder(entry)
    var i = 0
    while (i < rows.size) {
      b.append(rows(i), keyHashes(i))
      i += 1
    }
    b.result()
  }
}
