package io.deltareplay.internal.index

import java.util.BitSet

import org.apache.spark.sql.catalyst.expressions.SpecializedGetters
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnarBatch

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
