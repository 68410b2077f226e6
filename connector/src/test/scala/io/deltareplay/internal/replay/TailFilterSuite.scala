package io.deltareplay.internal.replay

import io.deltareplay.internal.log.FileEntry
import io.deltareplay.internal.log.{LiveFile, StatsFromJson, StatsReader, TableMeta}
import io.deltareplay.internal.skipping.{FileFilter, PushedFilters}
import io.deltareplay.test.DeltaOracle
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * The statistics a [[TailFilter]] reads from a tail add's JSON are the values Spark's JSON reader
 * makes of them for the entry (or null), on well-formed and on malformed documents alike; its
 * decision never drops an add the entry predicate keeps. (Its decisions on delta-spark's own
 * statistics under random predicates: [[DataSkippingSuite]]; narrowed reads against V1:
 * SnapshotIndexSuite and the differential suites.)
 */
class TailFilterSuite extends AnyFunSuite with DeltaOracle {

  private val schema = new StructType()
    .add("i", IntegerType)
    .add("l", LongType)
    .add("sh", ShortType)
    .add("by", ByteType)
    .add("f", FloatType)
    .add("d", DoubleType)
    .add("b", BooleanType)
    .add("s", StringType)
    .add("dt", DateType)
    .add("n", new StructType().add("x", IntegerType))
    .add("p", StringType)

  private val entry = FileEntry(
    TableMeta(
      TableMeta.Protocol(1, 2, Set.empty, Set.empty, """{"protocol":{}}"""),
      TableMeta.Metadata("id-1", schema, Seq("p"), Map.empty, """{"metaData":{}}""")
    ),
    "UTC"
  )

  /** Every statistic the entry has, as names from the statistics' root, with its type. */
  private val leaves: Seq[(Seq[String], DataType)] = {
    def walk(prefix: Seq[String], t: DataType): Seq[(Seq[String], DataType)] = t match {
      case s: StructType => s.fields.toSeq.flatMap(f => walk(prefix :+ f.name, f.dataType))
      case other => Seq(prefix -> other)
    }
    walk(Nil, entry.statsSchema)
  }

  private def sparkValue(stats: InternalRow, names: Seq[String], t: DataType): Any = {
    var row = stats
    var struct = entry.statsSchema
    names.init.foreach { n =>
      val i = struct.fieldIndex(n)
      if (row == null || row.isNullAt(i)) return null
      val inner = struct(i).dataType.asInstanceOf[StructType]
      row = row.getStruct(i, inner.length)
      struct = inner
    }
    val i = struct.fieldIndex(names.last)
    if (row == null || row.isNullAt(i)) null else row.get(i, t)
  }

  private def add(stats: String) = LiveFile("f.parquet", Map("p" -> "a"), 1L, 1L, stats, None)

  private val u = "\\u" // a JSON unicode escape

  private val documents = Seq(
    // well-formed: every readable value is read
    """{"numRecords":3,"minValues":{"i":-1,"l":5,"sh":2,"by":-3,"f":1.5,"d":-0.0,"b":false,""" +
      """"s":"a\"b""" + u + """00e9\n","dt":"2024-02-29","n":{"x":4}},"maxValues":{"i":7,"l":9,""" +
      """"f":3,"d":1e300,"s":"""" + u + "D83D" + u + """DE00z"},"nullCount":{"i":0,"l":1,"n":{"x":2}},""" +
      """"tightBounds":true}""",
    """{'numRecords':2,'minValues':{'s':'abc','l':4}}""", // single quotes, as Spark allows
    // a sibling that does not convert (the others stay: partial results)
    """{"numRecords":3,"minValues":{"i":"x","l":5},"maxValues":{"l":7,"b":1}}""",
    // out of range, a float for an integer, a number as a string, leading zeros
    """{"minValues":{"i":3000000000,"l":99999999999999999999,"by":300,"sh":1.0}}""",
    """{"minValues":{"i":1.5,"l":2e3},"maxValues":{"l":"5"}}""",
    """{"minValues":{"l":007},"maxValues":{"l":8}}""",
    // NaN and infinities as strings, a number too large for a double, strings for booleans
    """{"minValues":{"d":"NaN","f":"-Infinity","b":"true"},"maxValues":{"d":1e400}}""",
    // an object twice (the second replaces the first), a key twice (the last wins)
    """{"minValues":{"l":1,"i":1},"minValues":{"i":2},"maxValues":{"l":1,"l":9}}""",
    // a key that differs only in case; trailing text; a syntax error
    """{"minValues":{"L":1,"l":2}}""",
    """{"minValues":{"l":1}} x""",
    """{"minValues":{"l":1},"maxValues":{"l":}""",
    // a section that is null, an array, a number; values of other shapes
    """{"minValues":null,"maxValues":{"l":2}}""",
    """{"minValues":[1,2],"maxValues":5,"nullCount":{"l":{"a":1},"i":[3]}}""",
    """{"minValues":{"s":{"a":1},"n":7},"maxValues":{"s":12,"n":{"x":"9"}}}""",
    // unknown fields, deep nesting around them
    """{"foo":{"bar":[{"l":1},{"minValues":{"l":2}}]},"minValues":{"l":3,"zz":{"a":[1]}}}""",
    "{}",
    "null",
    "[]",
    "\"\"",
    "",
    "{"
  )

  test("statistics read from the JSON are Spark's values, or null") {
    val reader = new StatsReader(leaves, entry.timeZone)
    val toEntry = entry.projector()
    var read, sure = 0
    documents.foreach { json =>
      val spark = toEntry(add(json)).getStruct(entry.Ord.Stats, entry.statsSchema.length)
      val ours = new GenericInternalRow(leaves.size)
      if (reader.read(json, ours)) {
        sure += 1
        leaves.zipWithIndex.foreach { case ((names, t), i) =>
          if (!ours.isNullAt(i)) {
            read += 1
            val theirs = sparkValue(spark, names, t)
            assert(
              java.util.Objects.equals(ours.get(i, t), theirs),
              s"${names.mkString(".")} of $json: ours ${ours.get(i, t)}, Spark's $theirs"
            )
          }
        }
      }
    }
    // well-formed documents are read: every value of the first one that the reader takes
    val first = new GenericInternalRow(leaves.size)
    assert(reader.read(documents.head, first))
    val readable = leaves.zipWithIndex.filter { case ((_, t), _) => StatsReader.readable(t) }
    val firstSpark =
      toEntry(add(documents.head)).getStruct(entry.Ord.Stats, entry.statsSchema.length)
    readable.foreach { case ((names, t), i) =>
      assert(
        java.util.Objects.equals(first.get(i, t), sparkValue(firstSpark, names, t)),
        names.mkString(".")
      )
    }
    assert(sure >= 12 && read >= 25, s"$sure documents read, $read values")
  }

  private def attr(name: String): AttributeReference = {
    val f = schema(name)
    AttributeReference(f.name, f.dataType, nullable = true)()
  }

  private def filterOf(partition: Seq[Expression], skipping: Seq[Expression]): FileFilter =
    FileFilter(entry, PushedFilters(partition, skipping, Array.empty, Nil), skipping = true)

  test("generated statistics: the checkpoint's JSON reader gives Spark's values, or null") {
    // documents as writers leave them and worse: every type with its edge values, nulls, long
    // (truncated) strings, escapes, non-BMP characters, huge numbers, missing sections and fields,
    // keys of other case, and the same documents cut short (malformed: never read as values)
    val r = new scala.util.Random(20261128L)
    def value(t: DataType): String = r.nextInt(12) match {
      case 0 => "null"
      case 1 => "\"" + ("x" * 40) + "\\u00e9\\n\\\"" + "\"" // a long string with escapes
      case 2 => "\"\ud83d\ude00z\"" // a non-BMP character, raw
      case 3 => "123456789012345678901234567890" // huge
      case 4 => "-0.0"
      case 5 => "1e-400"
      case 6 => "{\"a\":1}"
      case _ =>
        t match {
          case ByteType | ShortType | IntegerType | LongType => (r.nextInt(2000) - 1000).toString
          case FloatType | DoubleType => f"${r.nextDouble() * 1000 - 500}%.6f"
          case BooleanType => r.nextBoolean().toString
          case DateType => "\"2024-0" + (1 + r.nextInt(9)) + "-1" + r.nextInt(9) + "\""
          case _ => "\"v" + r.nextInt(100) + "\""
        }
    }
    def section(kind: String, fields: Seq[(Seq[String], DataType)]): String = {
      val byTop = fields.groupBy(_._1.head).toSeq
      byTop
        .filter(_ => r.nextInt(6) > 0)
        .map { case (top, fs) =>
          val key = if (r.nextInt(30) == 0) top.toUpperCase else top
          val body =
            if (fs.head._1.size == 1) value(fs.head._2)
            else fs.map(f => "\"" + f._1.last + "\":" + value(f._2)).mkString("{", ",", "}")
          "\"" + key + "\":" + body
        }
        .mkString("\"" + kind + "\":{", ",", "}")
    }
    val byKind = leaves.groupBy(_._1.head)
    val documents = Seq.fill(300) {
      val parts = Seq(s"\"numRecords\":${r.nextInt(100)}") ++
        byKind.toSeq.filter(_._1 != "numRecords").filter(_ => r.nextInt(5) > 0).map {
          case (kind, fs) => section(kind, fs.map(f => f._1.tail -> f._2).filter(_._1.nonEmpty))
        }
      val doc = parts.mkString("{", ",", "}")
      if (r.nextInt(8) == 0) doc.take(r.nextInt(doc.length)) else doc
    }
    val readable = leaves.filter { case (_, t) => StatsReader.readable(t) }
    val json = StatsFromJson(
      BoundReference(0, StringType, nullable = true),
      readable.map(_._1),
      readable.map(_._2),
      "UTC"
    )
    val toEntry = entry.projector()
    var values = 0
    documents.foreach { doc =>
      val spark = toEntry(add(doc)).getStruct(entry.Ord.Stats, entry.statsSchema.length)
      val ours =
        json
          .eval(InternalRow(org.apache.spark.unsafe.types.UTF8String.fromString(doc)))
          .asInstanceOf[InternalRow]
      // the same bytes in the middle of a larger buffer (as a column vector holds them) and as
      // their own array: read in place, the same values
      val bytes = doc.getBytes(java.nio.charset.StandardCharsets.UTF_8)
      val padded = Array.fill[Byte](7)('{') ++ bytes ++ Array.fill[Byte](5)('}')
      val slice = org.apache.spark.unsafe.types.UTF8String.fromBytes(padded, 7, bytes.length)
      val inPlace =
        json.copy(id = StatsFromJson.nextId()).eval(InternalRow(slice)).asInstanceOf[InternalRow]
      assert(inPlace.toSeq(json.dataType) == ours.toSeq(json.dataType), s"in place: $doc")
      readable.zipWithIndex.foreach { case ((names, t), i) =>
        if (!ours.isNullAt(i)) {
          values += 1
          val theirs = sparkValue(spark, names, t)
          assert(
            java.util.Objects.equals(ours.get(i, t), theirs),
            s"${names.mkString(".")} of $doc: ours ${ours.get(i, t)}, Spark's $theirs"
          )
        }
      }
    }
    assert(values > 1000, s"only $values values read") // it does read
  }

  test("an add is dropped only where the entry predicate drops it") {
    val filters = Seq(
      filterOf(Nil, Seq(EqualTo(attr("l"), Literal(6L)))),
      filterOf(Nil, Seq(GreaterThan(attr("i"), Literal(3)))),
      filterOf(Nil, Seq(Or(LessThan(attr("d"), Literal(0.0)), EqualTo(attr("s"), Literal("b"))))),
      filterOf(Seq(EqualTo(attr("p"), Literal("b"))), Nil),
      filterOf(Seq(EqualTo(attr("p"), Literal("a"))), Seq(IsNull(attr("l"))))
    )
    val toEntry = entry.projector()
    var dropped = 0
    val wellFormed = Seq(
      """{"numRecords":3,"minValues":{"l":1,"i":1,"d":1.0,"s":"c"},""" +
        """"maxValues":{"l":5,"i":2,"d":2.0,"s":"d"},"nullCount":{"l":0}}""",
      """{"numRecords":3,"minValues":{"l":6,"i":4},"maxValues":{"l":8,"i":9}}"""
    )
    (documents ++ wellFormed).foreach { json =>
      val f = add(json)
      val e = toEntry(f)
      filters.foreach { ff =>
        val tf = new TailFilter(entry, ff)
        assert(tf.narrows)
        val entryKeeps = ff.keepsPartition(e) && ff.mayMatch(e)
        if (!tf.keeps(f)) {
          dropped += 1
          assert(!entryKeeps, s"dropped $json, which the entry predicate keeps")
        }
      }
    }
    // the partition filter drops every add; the well-formed ones are dropped as by the entries
    wellFormed.foreach { json =>
      val e = toEntry(add(json))
      filters.foreach { ff =>
        val tf = new TailFilter(entry, ff)
        assert(tf.keeps(add(json)) === (ff.keepsPartition(e) && ff.mayMatch(e)), json)
      }
    }
    assert(dropped > documents.size + wellFormed.size, s"$dropped dropped")
  }

  test("without Spark's partial results for JSON, only the partition part is checked") {
    withConf("spark.sql.json.enablePartialResults" -> "false") {
      val onStats = new TailFilter(entry, filterOf(Nil, Seq(EqualTo(attr("l"), Literal(6L)))))
      assert(!onStats.narrows)
      val onPartition =
        new TailFilter(entry, filterOf(Seq(EqualTo(attr("p"), Literal("b"))), Nil))
      assert(onPartition.narrows && !onPartition.keeps(add(documents.head)))
    }
  }
}
