package io.deltareplay.internal.index

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/** The compact columns give back exactly the values they were built from, for every layout. */
class ColumnDataSuite extends AnyFunSuite {

  private val schema = new StructType()
    .add("l", LongType)
    .add("i", IntegerType)
    .add("s", ShortType)
    .add("b", ByteType)
    .add("d", DateType)
    .add("t", TimestampType)
    .add("f", FloatType)
    .add("x", DoubleType)
    .add("small", DecimalType(10, 2))
    .add("big", DecimalType(38, 18))
    .add("str", StringType)
    .add("bin", BinaryType)
    .add("bool", BooleanType)
    .add("st", new StructType().add("a", LongType).add("b", StringType))
    .add("nul", LongType)

  private def value(dt: DataType, r: Random, n: Int): Any = dt match {
    case LongType => if (r.nextBoolean()) r.nextLong() else 1000L + r.nextInt(10)
    case IntegerType | DateType =>
      r.nextInt(3) match {
        case 0 => Int.MinValue
        case 1 => Int.MaxValue
        case _ => r.nextInt()
      }
    case ShortType => r.nextInt(65536).toShort
    case ByteType => r.nextInt(256).toByte
    case TimestampType => Long.MaxValue - r.nextInt(3)
    case FloatType => if (r.nextBoolean()) Float.NaN else -0.0f
    case DoubleType => Seq(Double.NaN, -0.0, 1e300, Double.MinPositiveValue)(r.nextInt(4))
    case d: DecimalType =>
      val digits = math.min(d.precision, 18)
      val unscaled = r.nextLong() % math.pow(10, digits).toLong
      Decimal(BigDecimal(unscaled) / BigDecimal(10).pow(d.scale), d.precision, d.scale)
    case StringType =>
      // few distinct (dictionary) in some runs, many (bytes) in others
      UTF8String.fromString(if (n % 2 == 0) s"v${r.nextInt(5)}😀" else s"w${r.nextLong()}")
    case BinaryType => Array.fill(r.nextInt(4))(r.nextInt(256).toByte)
    case BooleanType => r.nextBoolean()
    case s: StructType =>
      new GenericInternalRow(Array[Any](r.nextLong(), UTF8String.fromString(s"n${r.nextInt(3)}")))
  }

  private def rows(n: Int, nullShare: Double, seed: Long): IndexedSeq[InternalRow] = {
    val r = new Random(seed)
    (0 until n).map { i =>
      new GenericInternalRow(schema.fields.map { f =>
        if (f.name == "nul" || r.nextDouble() < nullShare) null
        else value(f.dataType, r, seed.toInt)
      })
    }
  }

  private def same(dt: DataType, a: Any, b: Any): Boolean = (dt, a, b) match {
    case (_, null, null) => true
    case (_, null, _) | (_, _, null) => false
    case (BinaryType, x: Array[Byte], y: Array[Byte]) => x.sameElements(y)
    case (FloatType, x: Float, y: Float) => java.lang.Float.compare(x, y) == 0
    case (DoubleType, x: Double, y: Double) => java.lang.Double.compare(x, y) == 0
    case (s: StructType, x: InternalRow, y: InternalRow) =>
      s.fields.indices.forall { i =>
        same(
          s(i).dataType,
          if (x.isNullAt(i)) null else x.get(i, s(i).dataType),
          if (y.isNullAt(i)) null else y.get(i, s(i).dataType)
        )
      }
    case _ => a == b
  }

  Seq(("dense", 0.0, 11L), ("some nulls", 0.2, 12L), ("mostly null (sparse)", 0.8, 13L)).foreach {
    case (name, nulls, seed) =>
      test(s"every type read back as written: $name") {
        val input = rows(3000, nulls, seed)
        val columns = schema.fields.indices.map(i => ColumnData.build(schema(i).dataType, input, i))
        val batch = new org.apache.spark.sql.vectorized.ColumnarBatch(
          columns.map(_.vector).toArray,
          input.size
        )
        input.indices.foreach { row =>
          val got = batch.getRow(row)
          schema.fields.indices.foreach { i =>
            val dt = schema(i).dataType
            val expected = if (input(row).isNullAt(i)) null else input(row).get(i, dt)
            val actual = if (got.isNullAt(i)) null else got.get(i, dt)
            assert(same(dt, expected, actual), s"row $row column ${schema(i).name}")
          }
        }
        assert(columns.last.isInstanceOf[ColumnData.AllNull])
        if (nulls > 0.5) {
          assert(columns(schema.fieldIndex("st")).isInstanceOf[ColumnData.SparseStruct])
        }
      }
  }

  test("rows streamed through one reused UnsafeRow read back as written (nothing of a row kept)") {
    val input = rows(3000, 0.3, 21)
    val toUnsafe = org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(schema)
    val builders = schema.fields.map(f => ColumnBuilder(f.dataType))
    input.foreach { r =>
      val view = toUnsafe(r) // the same object every row, overwritten by the next
      builders.indices.foreach(i => builders(i).append(view, i))
    }
    val batch = new org.apache.spark.sql.vectorized.ColumnarBatch(
      builders.map(_.result().vector),
      input.size
    )
    input.indices.foreach { row =>
      schema.fields.indices.foreach { i =>
        val dt = schema(i).dataType
        val expected = if (input(row).isNullAt(i)) null else input(row).get(i, dt)
        val got = batch.getRow(row)
        assert(same(dt, expected, if (got.isNullAt(i)) null else got.get(i, dt)), s"row $row")
      }
    }
  }

  test("compact layouts are chosen: constants, int offsets, dictionaries") {
    val input = (0 until 1000).map { i =>
      new GenericInternalRow(
        Array[Any](7L, 1700000000000L + i, UTF8String.fromString(s"p${i % 3}"))
      ): InternalRow
    }
    val types = Seq(LongType, LongType, StringType)
    val columns = types.indices.map(i => ColumnData.build(types(i), input, i))
    assert(columns(0).isInstanceOf[ColumnData.ConstantLong])
    assert(columns(1).isInstanceOf[ColumnData.IntOffsets])
    assert(columns(2).isInstanceOf[ColumnData.SmallDictionary])
    assert(columns.map(_.bytes).sum < 1000 * 6)
  }

  test("strings keep the prefix and suffix every value shares once, and read back whole") {
    def column(values: Seq[String], dt: DataType = StringType): ColumnData = ColumnData.build(
      dt,
      values.map { v =>
        val x =
          if (v == null) null
          else if (dt == BinaryType) v.getBytes("UTF-8")
          else UTF8String.fromString(v)
        new GenericInternalRow(Array[Any](x)): InternalRow
      }.toIndexedSeq,
      0
    )
    def readBack(c: ColumnData, n: Int, dt: DataType = StringType): Seq[String] = {
      val v = c.vector
      (0 until n).map { i =>
        if (v.isNullAt(i)) null
        else if (dt == BinaryType) new String(v.getBinary(i), "UTF-8")
        else v.getUTF8String(i).toString
      }
    }
    // file paths as the benchmark's synthetic tables name them, some rows null
    val paths = (0 until 5000).map { i =>
      if (i % 97 == 0) null else f"part=p${i % 20}%03d/part-$i%08d-synth.snappy.parquet"
    }
    val c = column(paths)
    assert(c.isInstanceOf[ColumnData.HexPacked], c.getClass)
    val a = c.asInstanceOf[ColumnData.HexPacked]
    assert(new String(a.prefix, "UTF-8") === "part=p0")
    assert(new String(a.suffix, "UTF-8") === "-synth.snappy.parquet")
    // what is left has one width, "00/part-0000nnnn": 10 positions the same in every value, 6 digits
    assert(a.hexAt.toSeq === Seq(0, 1, 12, 13, 14, 15) && a.rawAt.isEmpty, a)
    assert(readBack(c, paths.size) === paths)
    // 41 bytes of each value's 44 kept once or packed (the slack: null flags, headers)
    val values = paths.filter(_ != null)
    val plainBytes = 32L + values.map(_.length).sum + 4L * (paths.size + 1)
    assert(c.bytes <= plainBytes - 45L * values.size + 2000, s"${c.bytes} of $plainBytes")
    // names as Spark writes them, under date partitions: the task number and UUID packed
    val r = new Random(63)
    val named = (0 until 3000).map { i =>
      val uuid = new java.util.UUID(r.nextLong(), r.nextLong())
      if (i % 50 == 0) null
      else f"date=2024-01-${1 + i % 9}%02d/part-${i % 200}%05d-$uuid-c000.snappy.parquet"
    }
    val sp = column(named).asInstanceOf[ColumnData.HexPacked]
    assert(new String(sp.prefix, "UTF-8") === "date=2024-01-0")
    assert(new String(sp.suffix, "UTF-8") === "-c000.snappy.parquet")
    assert(sp.hexAt.length === 36 && sp.rawAt.isEmpty, sp) // a day, 3 digits, 32 of the UUID
    assert(readBack(sp, named.size) === named)
    assert(sp.bytes <= 18L * named.size + 2000, sp.bytes) // 87 bytes with an offset unpacked
    // a position neither the same everywhere nor a lowercase hexadecimal digit stays a byte
    // (uppercase letters, A to T); an odd count of digits
    val mixed = (0 until 400).map(i => f"${('A' + i % 20).toChar}-${r.nextInt(10000000)}%07d/XYZ")
    val m = column(mixed).asInstanceOf[ColumnData.HexPacked]
    assert(m.rawAt.toSeq === Seq(0) && m.hexAt.length === 7, m)
    assert(readBack(m, mixed.size) === mixed)
    // a prefix and suffix that would overlap in the shortest value; multi-byte characters cut
    // through; binary; nothing shared (plain bytes)
    val edges = Seq(
      Seq("abcab", "ab", null, "ab", "abab"),
      Seq("😀x😀", "😀y😀", "😁z😀"),
      Seq("a", "b", "ab")
    )
    edges.foreach { values =>
      Seq(StringType, BinaryType).foreach { dt =>
        val e = column(values, dt)
        assert(readBack(e, values.size, dt) === values, s"$values as $dt: $e")
      }
    }
    // widths that differ keep offsets
    val uneven = paths.map(p => if (p == null) null else p.replaceFirst("=p0+", "=p"))
    val u = column(uneven).asInstanceOf[ColumnData.Affixed]
    assert(u.offsets != null && new String(u.prefix, "UTF-8") == "part=p", u)
    assert(readBack(u, uneven.size) === uneven)
    assert(column(Seq("abcab", "ab", "ab", "abab")).isInstanceOf[ColumnData.Affixed])
    assert(column(Seq("ab", "cd", null)).asInstanceOf[ColumnData.Affixed].width === 2)
    assert(readBack(column(Seq("ab", "cd", null)), 3) === Seq("ab", "cd", null))
    assert(column(Seq("a", "b", "ab")).isInstanceOf[ColumnData.Bytes])
  }
}
