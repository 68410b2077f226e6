package io.deltareplay.internal.log

import java.nio.charset.StandardCharsets

import scala.util.Random

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, JsonToStructs}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[StatsReader]] answers every document the same whether [[StatsScan]] reads it or Jackson does
 * (`scan = false`), and where it is sure its values are `from_json`'s: hand-written documents of
 * every kind, then generated ones (plain statistics, with whitespace, escapes, text outside ASCII,
 * numbers of every form, keys in other case, and broken by a cut or a stray character).
 */
class StatsReaderSuite extends AnyFunSuite {
  import StatsReaderSuite._

  private val scanned = new StatsReader(Paths, "UTC")
  private val jackson = new StatsReader(Paths, "UTC", scan = false)
  private val tree = StatsNode.tree(Paths)
  private val oracle =
    JsonToStructs(
      OracleSchema,
      Map.empty,
      BoundReference(0, StringType, nullable = true),
      Some("UTC")
    )

  /** The reader's answer: whether it is sure, and the row (Scala values). */
  private def answer(reader: StatsReader, doc: String): (Boolean, Seq[Any]) = {
    val out = new GenericInternalRow(Paths.size)
    val sure = reader.read(UTF8String.fromString(doc), out)
    sure -> Paths.indices.map { i =>
      val v = out.get(i, Paths(i)._2)
      if (v == null) null else comparable(CatalystTypeConverters.convertToScala(v, Paths(i)._2))
    }
  }

  /** NaN compared as a value (it equals nothing, itself included). */
  private def comparable(v: Any): Any = v match {
    case d: Double if d.isNaN => "NaN"
    case other => other
  }

  /** `from_json`'s values at the paths (all null for a document it cannot read). */
  private def fromJson(doc: String): Seq[Any] = {
    val v = oracle.eval(InternalRow(UTF8String.fromString(doc)))
    val row = CatalystTypeConverters.convertToScala(v, OracleSchema).asInstanceOf[Row]
    Paths.map { case (names, _) =>
      names.foldLeft(row: Any) {
        case (r: Row, n) => if (r.isNullAt(r.fieldIndex(n))) null else r.get(r.fieldIndex(n))
        case _ => null
      } match {
        case r: Row => r
        case v => comparable(v)
      }
    }
  }

  /** Whether the scan decided `doc` alone. */
  private def scannedAlone(doc: String): Boolean = {
    val b = doc.getBytes(StandardCharsets.UTF_8)
    new StatsScan(b, 0, b.length, new GenericInternalRow(Paths.size)).run(tree)
  }

  private def check(doc: String): Unit = {
    val ours = answer(scanned, doc)
    assert(ours == answer(jackson, doc), s"document: $doc")
    if (ours._1) {
      val expected = fromJson(doc)
      ours._2.zip(expected).zip(Paths).foreach { case ((v, e), (names, _)) =>
        assert(v == null || v == e, s"${names.mkString(".")} of $doc: $v, from_json $e")
      }
    }
  }

  test("hand-written documents: the scan's answers are Jackson's, its values from_json's") {
    Documents.foreach(check)
    // not vacuous: the scan decides the plain ones alone and hands the others on
    val alone = Documents.filter(scannedAlone)
    assert(alone.size >= 12, alone)
    assert(Documents.size - alone.size >= 12)
    assert(
      answer(scanned, Documents.head) == (true -> Seq(10L, 1L, -3, 1.5, "a", true, 9L, 0L, 7L))
    )
  }

  test("generated documents, plain and broken") {
    val random = new Random(20261205L)
    var alone = 0
    var sure = 0
    for (_ <- 0 until 20000) {
      val doc = generated(random)
      check(doc)
      if (scannedAlone(doc)) alone += 1
      if (answer(jackson, doc)._1) sure += 1
    }
    // not vacuous: most are scanned alone, and some of every kind of answer
    assert(alone > 8000, alone)
    assert(sure > alone && sure < 19000, sure)
  }

  test("a reader with a leaf the scan does not convert reads with Jackson") {
    val paths = Seq(Seq("minValues", "f") -> FloatType, Seq("numRecords") -> LongType)
    val doc = """{"numRecords":3,"minValues":{"f":1.25}}"""
    val out = new GenericInternalRow(2)
    assert(new StatsReader(paths, "UTC").read(UTF8String.fromString(doc), out))
    assert(out.getFloat(0) == 1.25f && out.getLong(1) == 3L)
  }
}

object StatsReaderSuite {
  val Paths: Seq[(Seq[String], DataType)] = Seq(
    Seq("numRecords") -> LongType,
    Seq("minValues", "id") -> LongType,
    Seq("minValues", "n") -> IntegerType,
    Seq("minValues", "x") -> DoubleType,
    Seq("minValues", "s") -> StringType,
    Seq("minValues", "b") -> BooleanType,
    Seq("maxValues", "id") -> LongType,
    Seq("nullCount", "id") -> LongType,
    Seq("minValues", "nested", "a") -> LongType
  )

  private val OracleSchema = new StructType()
    .add("numRecords", LongType)
    .add(
      "minValues",
      new StructType()
        .add("id", LongType)
        .add("n", IntegerType)
        .add("x", DoubleType)
        .add("s", StringType)
        .add("b", BooleanType)
        .add("nested", new StructType().add("a", LongType))
    )
    .add("maxValues", new StructType().add("id", LongType))
    .add("nullCount", new StructType().add("id", LongType))

  val Documents: Seq[String] = Seq(
    """{"numRecords":10,"minValues":{"id":1,"n":-3,"x":1.5,"s":"a","b":true,"nested":{"a":7}},""" +
      """"maxValues":{"id":9},"nullCount":{"id":0}}""",
    " \t\r\n{ \"numRecords\" : 4 , \"minValues\" : { \"id\" : -0 } }\n ",
    """{"numRecords":1,"minValues":{"x":-0.0,"n":2147483647},"maxValues":{"id":-9223372036854775807}}""",
    """{"numRecords":1,"minValues":{"x":12,"n":2147483648,"id":1.0}}""",
    // a raw tab in a string (a control character: no JSON), then an escaped one
    "{\"numRecords\":1,\"minValues\":{\"x\":1e308,\"s\":\"tab\t no\",\"b\":false}}",
    "{\"numRecords\":1,\"minValues\":{\"x\":1e308,\"s\":\"tab\\u0009 no\",\"b\":false}}",
    "{\"numRecords\":1,\"minValues\":{\"x\":1E-5,\"s\":\"\\u00e9 escaped\"}}",
    "{\"numRecords\":1,\"minValues\":{\"x\":2.5e+3,\"s\":\"\\\"q\\\"\"}}",
    """{"numRecords":1,"minValues":{"s":"héllo"}}""",
    """{"numRecords":1,"minValues":{"s":"ok"},"extra":"héllo"}""",
    "{\"numRecords\":1,\"extra\":\"a\\/b\\n\\u0041\",\"other\":[1,-2.5e3,true,false,null,{\"k\":[]}]}",
    """{"numRecords":1,"minValues":{"id":1,"other":{"k":[{"j":{}}]}},"tightBounds":true}""",
    """{"numRecords":1,"numRecords":2,"minValues":{"id":1},"minValues":{"n":2}}""",
    """{"numRecords":"12","minValues":{"id":"x","n":true,"x":"1.5","s":3,"b":"true"}}""",
    """{"numRecords":null,"minValues":null,"maxValues":{},"nullCount":[]}""",
    """{"numRecords":1,"minValues":{"nested":"flat","id":{"a":1}}}""",
    """{"numRecords":12345678901234567,"minValues":{"id":123456789012345678}}""",
    """{"numRecords":1234567890123456789,"minValues":{"x":-0}}""",
    """{"numRecords":1,"minValues":{"x":NaN}}""",
    """{"numRecords":1,"minValues":{"x":-Infinity}}""",
    """{"numRecords":1,"minValues":{"x":+1}}""",
    """{"numRecords":01}""",
    """{"numRecords":1.}""",
    """{"numRecords":1,"minValues":{"x":.5}}""",
    """{"NumRecords":1}""",
    """{"numRecords":1,"minvalues":{"id":1}}""",
    """{"numrecords":1}""",
    """{"numRecords":1,"minValues":{"ID":1}}""",
    """{"numRecords":1,"MINVALUES2":{"ID":1}}""",
    """{'numRecords':5}""",
    """{"numRecords":5,}""",
    """{"numRecords":5 "x":1}""",
    """{"numRecords":5} trailing""",
    """{"numRecords":5}}""",
    """{"numRecords":5""",
    "{\"numRecords\":\"a\\x\"}",
    "{\"numRecords\":1,\"extra\":\"a\\u12G4\"}",
    "{\"numRecords\":1,\"extra\":\"ctl\u0001\"}",
    "\uFEFF{\"numRecords\":1}",
    " {\"numRecords\":1}".flatMap(c => s"$c\u0000"),
    """{"numRecords":1 /* c */}""",
    "{\"num\\u0052ecords\":1}",
    """[{"numRecords":4}]""",
    "{}",
    "",
    "   ",
    "null",
    "12",
    "\"text\"",
    """{"numRecords":tru}""",
    """{"numRecords":1,"minValues":{"b":truex}}""",
    """{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]""" +
      """]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"numRecords":3}"""
  )

  private val Names = Seq(
    "numRecords",
    "minValues",
    "maxValues",
    "nullCount",
    "id",
    "n",
    "x",
    "s",
    "b",
    "nested",
    "a",
    "tightBounds",
    "other",
    "ID",
    "Id",
    "NUMRECORDS",
    "é",
    "k"
  )

  private def scalar(r: Random): String = r.nextInt(16) match {
    case 0 => r.nextLong().toString
    case 1 => r.nextInt().toString
    case 2 => (r.nextInt(2000) - 1000).toString
    case 3 => r.nextDouble().toString
    case 4 => s"${r.nextInt(100)}e${r.nextInt(40) - 20}"
    case 5 => s"${r.nextInt(10)}.${r.nextInt(1000)}E+${r.nextInt(400)}"
    case 6 => "\"" + r.alphanumeric.take(r.nextInt(8)).mkString + "\""
    case 7 =>
      "\"" + Seq("\\n", "\\\"", "\\u00e9", "é", "☃", "a b", "\\\\").apply(r.nextInt(7)) + "\""
    case 8 => Seq("true", "false", "null").apply(r.nextInt(3))
    case 9 => "12345678901234567890"
    case 10 =>
      Seq("-0", "-0.0", "0", "2147483648", "-2147483649", "9223372036854775807")(r.nextInt(6))
    case 11 => Seq("NaN", "Infinity", "-Infinity", "'q'", "+5", "07")(r.nextInt(6))
    case _ => (r.nextInt(100000) - 10).toString
  }

  private def value(r: Random, depth: Int): String = {
    val k = r.nextInt(10)
    if (depth < 4 && k < 3) obj(r, depth + 1)
    else if (depth < 4 && k == 3)
      Seq.fill(r.nextInt(4))(value(r, depth + 1)).mkString("[", ws(r) + "," + ws(r), "]")
    else scalar(r)
  }

  private def ws(r: Random): String =
    if (r.nextInt(6) == 0) Seq(" ", "\n", "\t ", "\r\n")(r.nextInt(4)) else ""

  private def obj(r: Random, depth: Int): String =
    Seq
      .fill(r.nextInt(6)) {
        val name = Names(r.nextInt(if (r.nextInt(8) == 0) Names.size else 11))
        ws(r) + "\"" + name + "\"" + ws(r) + ":" + ws(r) + value(r, depth) + ws(r)
      }
      .mkString("{", ",", "}")

  /** A statistics document, plain most times, sometimes broken. */
  def generated(r: Random): String = {
    val doc = ws(r) + obj(r, 0) + ws(r)
    r.nextInt(10) match {
      case 0 if doc.nonEmpty => doc.substring(0, r.nextInt(doc.length))
      case 1 =>
        val at = r.nextInt(doc.length + 1)
        doc.substring(0, at) + "{}[],:\"\\'aN0-.eE+ é\u0001".charAt(r.nextInt(20)) + doc.substring(
          at
        )
      case _ => doc
    }
  }
}
