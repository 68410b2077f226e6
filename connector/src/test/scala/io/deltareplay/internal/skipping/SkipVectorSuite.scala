package io.deltareplay.internal.skipping

import scala.util.Random

import io.deltareplay.internal.index.ColumnData
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.scalatest.funsuite.AnyFunSuite

/**
 * The column-wise first pass ([[SkipVector]]) over index columns keeps exactly the rows where the
 * comparison is true or null: checked row by row for each layout of whole numbers (constant, int
 * offsets, plain longs) under a struct with nulls, every comparison, literals at and beyond the
 * ends of each column's range, and chunk sizes that do and do not fill their last bit word.
 */
class SkipVectorSuite extends AnyFunSuite {

  private val inner = new StructType().add("x", LongType)
  private val outer = new StructType().add("s", inner)
  private val column = AttributeReference("e", outer)()
  private val x = GetStructField(GetStructField(column, 0), 0)

  private def comparisons(lit: Literal): Seq[Expression] =
    Seq(
      EqualTo(x, lit),
      LessThan(x, lit),
      LessThanOrEqual(x, lit),
      GreaterThan(x, lit),
      GreaterThanOrEqual(x, lit),
      LessThan(lit, x),
      GreaterThanOrEqual(lit, x)
    )

  /** The rows where `predicate` is true or null, one row at a time. */
  private def expected(predicate: Expression, batch: ColumnarBatch): java.util.BitSet = {
    val bound = BindReferences.bindReference(predicate, Seq(column))
    val out = new java.util.BitSet()
    (0 until batch.numRows()).foreach { i =>
      val v = bound.eval(batch.getRow(i))
      if (v == null || v == true) out.set(i)
    }
    out
  }

  private def layouts(n: Int, r: Random): Seq[(String, Array[Long])] = Seq(
    "constant" -> Array.fill(n)(42L),
    "int offsets" -> Array.fill(n)(1000L + r.nextInt(50)),
    "longs" -> Array.fill(n)(if (r.nextBoolean()) r.nextLong() else r.nextInt(5).toLong - 2)
  )

  test("the column pass keeps exactly the rows whose comparison is true or null") {
    val r = new Random(20261127L)
    val seen = scala.collection.mutable.Set.empty[String]
    for (n <- Seq(1, 63, 64, 130); (_, values) <- layouts(n, r)) {
      val leafNulls = new java.util.BitSet()
      val structNulls = new java.util.BitSet()
      (0 until n).foreach { i =>
        if (r.nextInt(5) == 0) leafNulls.set(i)
        if (r.nextInt(7) == 0) structNulls.set(i)
      }
      val leaf = ColumnData.longs(LongType, values, if (leafNulls.isEmpty) null else leafNulls)
      val layout = leaf.getClass.getSimpleName
      seen += layout
      val struct = ColumnData.StructData(inner, Array(leaf), structNulls)
      val top = ColumnData.StructData(outer, Array(struct), null)
      val batch = new ColumnarBatch(Array(top.vector), n)
      val present = values.indices.filterNot(i => leafNulls.get(i) || structNulls.get(i))
      val ends = present.map(values).flatMap(v => Seq(v - 1, v, v + 1)).take(12)
      val literals = (ends ++ Seq(Long.MinValue, Long.MaxValue, 0L)).distinct
      for (lit <- literals; predicate <- comparisons(Literal(lit))) {
        val pass = SkipVector(predicate, Seq(column)).get
        assert(
          pass.candidates(batch) == expected(predicate, batch),
          s"$layout of $n rows: $predicate"
        )
      }
    }
    assert(seen == Set("ConstantLong", "IntOffsets", "Longs"))
  }

  test("a field under a struct most rows lack is compared row by row, as exactly") {
    val n = 100
    val present = (0 until n).filter(_ % 9 == 0).toArray
    val values = present.map(i => i.toLong * 3)
    val leaf = ColumnData.longs(LongType, values, null)
    val sparse = ColumnData.SparseStruct(inner, present, Array(leaf))
    val top = ColumnData.StructData(outer, Array(sparse), null)
    val batch = new ColumnarBatch(Array(top.vector), n)
    for (lit <- Seq(-1L, 0L, 27L, 28L, 400L); predicate <- comparisons(Literal(lit))) {
      val pass = SkipVector(predicate, Seq(column)).get
      assert(pass.candidates(batch) == expected(predicate, batch), s"$predicate")
    }
  }
}
