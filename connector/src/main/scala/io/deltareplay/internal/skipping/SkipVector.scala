package io.deltareplay.internal.skipping

import java.util.BitSet

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A first pass of a skipping predicate over whole columns of an index chunk: the rows it may
 * accept, found by comparing a column with a literal in one loop per comparison instead of
 * evaluating the predicate row by row (which, on a large index, is most of a selective re-plan).
 *
 * It evaluates [[Relax]] of the predicate, which is true wherever the predicate is true or null, so
 * it never leaves out a row the predicate keeps; the predicate itself then runs on the rows left
 * in. Comparisons of whole numbers, dates, timestamps and binary-ordered strings are evaluated; any
 * other part counts as "may match".
 */
private[deltareplay] final class SkipVector private (root: SkipVector.Node) {

  /** The rows of `batch` the predicate may accept (a superset of those it accepts). */
  def candidates(batch: ColumnarBatch): BitSet = root.maybe(batch, batch.numRows())
}

private[deltareplay] object SkipVector {

  /** None when no part of `predicate` can be evaluated over columns (nothing to gain). */
  def apply(predicate: Expression, attributes: Seq[Attribute]): Option[SkipVector] = {
    val relaxed = Relax(predicate, e => column(e, attributes).isDefined)
    compile(relaxed, attributes) match {
      case All => None
      case node => Some(new SkipVector(node))
    }
  }

  /** A field of an entry column: the column's ordinal, then struct field ordinals. */
  private final case class Field(ordinal: Int, path: List[Int], dataType: DataType) {

    /**
     * The vectors from the column down to the field that hold nulls (a row is null if any of them
     * is null there), and the field's own vector.
     */
    def vectors(batch: ColumnarBatch): (Array[ColumnVector], ColumnVector) = {
      val chain = path.scanLeft(batch.column(ordinal): ColumnVector)((v, i) => v.getChild(i))
      (chain.filter(_.hasNull).toArray, chain.last)
    }
  }

  private def column(e: Expression, attributes: Seq[Attribute]): Option[Field] = {
    def walk(e: Expression): Option[(Int, List[Int])] = e match {
      case a: AttributeReference =>
        val i = attributes.indexWhere(_.exprId == a.exprId)
        if (i < 0) None else Some((i, Nil))
      case GetStructField(child, ordinal, _) => walk(child).map { case (c, p) => (c, p :+ ordinal) }
      case _ => None
    }
    if (!comparable(e.dataType)) None
    else walk(e).map { case (c, p) => Field(c, p, e.dataType) }
  }

  private def comparable(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | TimestampType |
        TimestampNTZType =>
      true
    case s: StringType => SparkBridge.binaryOrdered(s)
    case _ => false
  }

  private sealed trait Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet
  }

  private case object All extends Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet = { val b = new BitSet(n); b.set(0, n); b }
  }

  private final case class Both(l: Node, r: Node) extends Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet = {
      val b = l.maybe(batch, n)
      b.and(r.maybe(batch, n))
      b
    }
  }

  private final case class Either(l: Node, r: Node) extends Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet = {
      val b = l.maybe(batch, n)
      b.or(r.maybe(batch, n))
      b
    }
  }

  /** Rows where the field is null (IS NULL, never null itself). */
  private final case class Nulls(field: Field) extends Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet = {
      val (vs, _) = field.vectors(batch)
      val b = new Bits(n)
      var i = 0
      while (i < n) {
        if (isNull(vs, i)) b.set(i)
        i += 1
      }
      b.result
    }
  }

  /**
   * Rows where `field op literal` is true or null. `sign` tells which signs of `compare(value,
   * literal)` make it true: bit 0 for less, bit 1 for equal, bit 2 for greater.
   */
  private final case class Compare(field: Field, sign: Int, literal: Any) extends Node {
    def maybe(batch: ColumnarBatch, n: Int): BitSet = {
      val (vs, leaf) = field.vectors(batch)
      (field.dataType, leaf) match {
        case (_: StringType, _) => rowByRow(vs, leaf, n)
        case (_, numbers: LongCompare) if vs.forall(_.isInstanceOf[NullWords]) =>
          // one loop in the column's own layout; a row with a null on the way is "may match"
          val words = new Array[Long]((n + 63) >>> 6)
          numbers.markCompared(asLong(literal), sign, words, n)
          vs.foreach(v => if (v ne leaf) v.asInstanceOf[NullWords].orNulls(words))
          BitSet.valueOf(words)
        case _ => rowByRow(vs, leaf, n)
      }
    }

    private def rowByRow(vs: Array[ColumnVector], leaf: ColumnVector, n: Int): BitSet = {
      val b = new Bits(n)
      def accepts(c: Int): Boolean = SkipVector.accepts(sign, c)
      var i = 0
      field.dataType match {
        case _: StringType =>
          val lit = literal.asInstanceOf[UTF8String]
          while (i < n) {
            if (isNull(vs, i) || accepts(leaf.getUTF8String(i).binaryCompare(lit))) b.set(i)
            i += 1
          }
        case LongType | TimestampType | TimestampNTZType =>
          val lit = asLong(literal)
          while (i < n) {
            if (isNull(vs, i) || accepts(java.lang.Long.compare(leaf.getLong(i), lit))) b.set(i)
            i += 1
          }
        case IntegerType | DateType =>
          val lit = asLong(literal)
          while (i < n) {
            if (isNull(vs, i) || accepts(java.lang.Long.compare(leaf.getInt(i), lit))) b.set(i)
            i += 1
          }
        case ShortType =>
          val lit = asLong(literal)
          while (i < n) {
            if (isNull(vs, i) || accepts(java.lang.Long.compare(leaf.getShort(i), lit))) b.set(i)
            i += 1
          }
        case _ => // ByteType
          val lit = asLong(literal)
          while (i < n) {
            if (isNull(vs, i) || accepts(java.lang.Long.compare(leaf.getByte(i), lit))) b.set(i)
            i += 1
          }
      }
      b.result
    }
  }

  /**
   * A row set filled in ascending order, as bit words: `BitSet.set` checks and may grow its words
   * on every call, a share of a loop over a million rows that does little else.
   */
  private final class Bits(n: Int) {
    private val words = new Array[Long]((n + 63) >>> 6)
    def set(i: Int): Unit = words(i >>> 6) |= 1L << i // the shift takes the low 6 bits of i
    def result: BitSet = BitSet.valueOf(words)
  }

  private def isNull(vs: Array[ColumnVector], i: Int): Boolean = {
    var k = 0
    while (k < vs.length) {
      if (vs(k).isNullAt(i)) return true
      k += 1
    }
    false
  }

  private def asLong(v: Any): Long = v match {
    case b: Byte => b.toLong
    case s: Short => s.toLong
    case i: Int => i.toLong
    case l: Long => l
  }

  /**
   * Whether the sign of `compare` (any int, as compare functions return) is one of `signs`: bit 0
   * for less, bit 1 for equal, bit 2 for greater (the column layouts' loops, index's `ColumnData`
   * `LongCompare`, test the same bits).
   */
  private[internal] def accepts(signs: Int, compare: Int): Boolean =
    ((signs >>> (Integer.signum(compare) + 1)) & 1) != 0

  private val Less = 1
  private val Equal = 2
  private val Greater = 4

  /** The sign bits of `column op literal`; 0 for comparisons not evaluated here. */
  private def signOf(c: BinaryComparison, columnOnLeft: Boolean): Int = {
    val (lt, gt) = if (columnOnLeft) (Less, Greater) else (Greater, Less)
    c match {
      case _: EqualTo => Equal
      case _: LessThan => lt
      case _: LessThanOrEqual => lt | Equal
      case _: GreaterThan => gt
      case _: GreaterThanOrEqual => gt | Equal
      case _ => 0 // EqualNullSafe and others: not evaluated here
    }
  }

  private def compile(e: Expression, attributes: Seq[Attribute]): Node = e match {
    case And(l, r) =>
      (compile(l, attributes), compile(r, attributes)) match {
        case (All, x) => x
        case (x, All) => x
        case (a, b) => Both(a, b)
      }
    case Or(l, r) =>
      (compile(l, attributes), compile(r, attributes)) match {
        case (All, _) | (_, All) => All
        // a comparison counts its nulls as "may match" already (`col IS NULL OR col < x`)
        case (Nulls(f), c @ Compare(g, _, _)) if f == g => c
        case (c @ Compare(g, _, _), Nulls(f)) if f == g => c
        case (a, b) => Either(a, b)
      }
    case IsNull(c) => column(c, attributes).fold[Node](All)(f => Nulls(f))
    case c: BinaryComparison =>
      val (col, lit, onLeft) = c.left match {
        case l: Literal => (c.right, l, false)
        case _ => (c.left, c.right, true)
      }
      (column(col, attributes), lit) match {
        case (Some(f), Literal(v, t)) if v != null && t == f.dataType && signOf(c, onLeft) != 0 =>
          Compare(f, signOf(c, onLeft), v)
        case _ => All
      }
    case _ => All
  }
}
