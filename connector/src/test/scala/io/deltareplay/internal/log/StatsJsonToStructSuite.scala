package io.deltareplay.internal.log

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, JsonToStructs, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.GenerateUnsafeProjection
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[StatsJsonToStruct]] reads every statistics document as Spark's `from_json` (`JsonToStructs`
 * with no options, what the index used before) reads it: the same values, the same nulls for a
 * document or a field that does not parse, in two time zones.
 */
class StatsJsonToStructSuite extends AnyFunSuite {
  import StatsJsonToStructSuite._

  test("documents of every kind read as from_json reads them") {
    for (tz <- Seq("UTC", "America/Los_Angeles")) {
      val ours = StatsJsonToStruct(input, Schema, tz)
      val oracle = JsonToStructs(Schema, Map.empty, input, Some(tz), false)
      assert(ours.dataType == oracle.dataType)
      for (doc <- Documents :+ null) {
        val row = InternalRow(if (doc == null) null else UTF8String.fromString(doc))
        val expected = scala(oracle.eval(row))
        assert(scala(ours.eval(row)) == expected, s"document $doc in $tz")
      }
      // not vacuous: most documents give values, some give none
      val read = Documents.map(d => scala(oracle.eval(InternalRow(UTF8String.fromString(d)))))
      assert(read.count(r => r != null && !r.isNullAt(0)) >= 8)
      assert(read.count(r => r == null || r.isNullAt(0)) >= 3)
    }
  }

  test("generated code reads every document as the interpreted expression does") {
    // the projection's input an UnsafeRow, as a scan gives it; both expressions of the index
    val stats = StatsJsonToStruct(input, Schema, "UTC")
    val counts = StatsFromJson(input, Seq(Seq("numRecords")), Seq(LongType), "UTC")
    val generated = GenerateUnsafeProjection.generate(Seq(stats, counts))
    val toUnsafe = UnsafeProjection.create(Array[DataType](StringType))
    val countType = counts.dataType
    def both(r: InternalRow) =
      (
        scala(r.get(0, Schema)),
        CatalystTypeConverters.convertToScala(r.get(1, countType), countType)
      )
    for (doc <- Documents :+ null) {
      val row = toUnsafe(InternalRow(if (doc == null) null else UTF8String.fromString(doc)))
      val interpreted = both(InternalRow(stats.eval(row), counts.eval(row)))
      assert(both(generated(row)) == interpreted, s"document $doc")
    }
    // not vacuous: the counts of most documents are read
    val read = Documents.map(d => counts.eval(InternalRow(UTF8String.fromString(d))))
    assert(read.count(r => r != null && !r.asInstanceOf[InternalRow].isNullAt(0)) >= 8)
  }

  private def scala(v: Any): Row =
    CatalystTypeConverters.convertToScala(v, Schema).asInstanceOf[Row]
}

object StatsJsonToStructSuite {
  private val input = BoundReference(0, StringType, nullable = true)

  private val bounds = new StructType()
    .add("id", LongType)
    .add("n", IntegerType)
    .add("s", StringType)
    .add("d", DateType)
    .add("ts", TimestampType)
    .add("ntz", TimestampNTZType)
    .add("dec", DecimalType(10, 2))
    .add("x", DoubleType)
    .add("nested", new StructType().add("a", LongType).add("b", StringType))

  private val nulls = new StructType()
    .add("id", LongType)
    .add("s", LongType)
    .add("nested", new StructType().add("a", LongType).add("b", LongType))

  /** The shape of a table's statistics as FileEntry reads them. */
  val Schema: StructType = new StructType()
    .add("numRecords", LongType)
    .add("tightBounds", BooleanType)
    .add("minValues", bounds)
    .add("maxValues", bounds)
    .add("nullCount", nulls)

  val Documents: Seq[String] = Seq(
    """{"numRecords":10,"minValues":{"id":1,"n":-3,"s":"a","d":"2024-01-02",""" +
      """"ts":"2024-01-02T03:04:05.123Z","ntz":"2024-01-02T03:04:05.123","dec":12.34,""" +
      """"x":1.5,"nested":{"a":7,"b":"q"}},"maxValues":{"id":9,"s":"zz"},""" +
      """"nullCount":{"id":0,"s":2,"nested":{"a":0,"b":10}},"tightBounds":true}""",
    // non-ASCII and escaped text, a timestamp without an offset, whitespace around
    """  {"numRecords":3,"minValues":{"s":"héllo ☃ 𝄞","ts":"2024-03-10 02:30:00"},""" +
      "\"maxValues\":{\"s\":\"\\u00e9\\n\\\"q\\\"\"}}  ",
    // unknown keys, arrays and objects where none is read, keys out of order, repeated keys
    """{"extra":[1,{"a":2}],"maxValues":{"id":5,"other":{"k":[]}},"numRecords":4,"numRecords":5}""",
    // a field of the wrong type: that field or the row is null, as from_json decides
    """{"numRecords":"12","minValues":{"id":"x","n":1}}""",
    """{"numRecords":2,"minValues":{"id":1.5,"n":2147483648,"dec":123456789012.5}}""",
    """{"numRecords":1,"minValues":{"x":NaN},"maxValues":{"x":Infinity}}""",
    """{"numRecords":1,"minValues":{"d":"2024-13-45","ts":"not a time"}}""",
    """{"numRecords":6,"tightBounds":false,"minValues":null,"maxValues":{},"nullCount":null}""",
    """{"numRecords":7}""",
    """{"numRecords":8,"minValues":{"nested":"flat"}}""",
    """{"numRecords":-1,"minValues":{"id":-9223372036854775808}}""",
    // not a document of statistics
    """{"numRecords":3,"minValues":{"id":1}""",
    "{}",
    "[]",
    "[{\"numRecords\":4}]",
    "null",
    "",
    "   ",
    "12",
    "\"text\"",
    "{'numRecords':5}",
    "{\"numRecords\":5} trailing",
    // what a byte parser would take for another encoding: a byte-order mark, UTF-16 text
    "\uFEFF{\"numRecords\":1}",
    " {\"numRecords\":1}".flatMap(c => s"$c\u0000")
  )
}
