package io.deltareplay.internal.read

import org.apache.spark.sql.types.{CalendarIntervalType, Decimal, StructType, VariantType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarBatch, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Some rows of a column vector, in order, without copying them: row `i` of this vector is row
 * `rows(i)` of `child`. How a columnar read drops the rows a deletion vector marks as deleted: the
 * batch the Parquet reader decoded stays as it is, and the rows left are a selection over it. A
 * struct's fields are selections over the child's fields (made once per field); arrays and maps are
 * the child's (their elements are addressed through the child's offsets). Valid as long as the
 * batch it selects from; closing it closes nothing (the reader owns the vectors).
 */
private[deltareplay] final class SelectedColumnVector(child: ColumnVector, rows: Array[Int])
    extends ColumnVector(child.dataType()) {

  /** The child's per-row children (struct fields, an interval's or a variant's parts). */
  private val rowChildren: Int = child.dataType() match {
    case s: StructType => s.length
    case _: CalendarIntervalType => 3
    case _: VariantType => 2
    case _ => 0
  }

  private lazy val fields = new Array[SelectedColumnVector](rowChildren)

  override def close(): Unit = ()
  override def closeIfFreeable(): Unit = ()

  // a selection of a vector with nulls may have none: "may have nulls" is what readers ask
  override def hasNull(): Boolean = child.hasNull()

  override def numNulls(): Int = nulls

  private lazy val nulls: Int =
    if (!child.hasNull()) 0
    else {
      var n = 0
      var i = 0
      while (i < rows.length) {
        if (child.isNullAt(rows(i))) n += 1
        i += 1
      }
      n
    }

  override def isNullAt(rowId: Int): Boolean = child.isNullAt(rows(rowId))
  override def getBoolean(rowId: Int): Boolean = child.getBoolean(rows(rowId))
  override def getByte(rowId: Int): Byte = child.getByte(rows(rowId))
  override def getShort(rowId: Int): Short = child.getShort(rows(rowId))
  override def getInt(rowId: Int): Int = child.getInt(rows(rowId))
  override def getLong(rowId: Int): Long = child.getLong(rows(rowId))
  override def getFloat(rowId: Int): Float = child.getFloat(rows(rowId))
  override def getDouble(rowId: Int): Double = child.getDouble(rows(rowId))
  override def getArray(rowId: Int): ColumnarArray = child.getArray(rows(rowId))
  override def getMap(rowId: Int): ColumnarMap = child.getMap(rows(rowId))
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal =
    child.getDecimal(rows(rowId), precision, scale)
  override def getUTF8String(rowId: Int): UTF8String = child.getUTF8String(rows(rowId))
  override def getBinary(rowId: Int): Array[Byte] = child.getBinary(rows(rowId))

  // an array's or a map's child vectors hold elements, addressed through the child's offsets
  override def getChild(ordinal: Int): ColumnVector =
    if (rowChildren == 0) child.getChild(ordinal)
    else {
      var f = fields(ordinal)
      if (f == null) {
        f = new SelectedColumnVector(child.getChild(ordinal), rows)
        fields(ordinal) = f
      }
      f
    }
}

private[deltareplay] object SelectedColumnVector {

  /**
   * The rows of a batch a deletion vector keeps, as a selection: null when it keeps every row (the
   * batch is used as it is), else the kept row numbers in order.
   */
  def kept(rowIndexes: ColumnVector, numRows: Int, deleted: Long => Boolean): Array[Int] = {
    var out: Array[Int] = null
    var n = 0
    var i = 0
    while (i < numRows) {
      val gone = deleted(rowIndexes.getLong(i))
      if (gone && out == null) {
        out = new Array[Int](numRows)
        var j = 0
        while (j < i) { out(j) = j; j += 1 }
        n = i
      } else if (!gone && out != null) {
        out(n) = i
        n += 1
      }
      i += 1
    }
    if (out == null) null else java.util.Arrays.copyOf(out, n)
  }

  /** `columns` of `batch`, in that order, each over the `rows` kept (all when null). */
  def select(batch: ColumnarBatch, columns: Array[Int], rows: Array[Int]): ColumnarBatch =
    if (rows == null) new ColumnarBatch(columns.map(batch.column), batch.numRows())
    else {
      val vectors: Array[ColumnVector] =
        columns.map(c => new SelectedColumnVector(batch.column(c), rows))
      new ColumnarBatch(vectors, rows.length)
    }
}
