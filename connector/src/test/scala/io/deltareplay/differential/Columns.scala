package io.deltareplay.differential

import java.math.{BigDecimal => JBigDecimal}
import java.sql.{Date, Timestamp}
import java.time.{LocalDate, LocalDateTime, ZoneOffset}

import scala.util.Random

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

/**
 * The column types the differential test generates, each with its edge values, a random value, and
 * a SQL literal of exactly the column's type (so that a comparison is not rewritten by a cast).
 * Values are those `Row`s take for `createDataFrame` (java.sql dates and timestamps in UTC).
 */
sealed trait ColumnType {
  def ddl: String
  def dataType: DataType
  def edges: Seq[Any]
  def random(r: Random): Any
  def literal(v: Any): String

  /** Whether the type may be a partition column in generated tables. */
  def partitionable: Boolean = true

  /** Whether `startsWith` / `LIKE 'p%'` apply. */
  def isString: Boolean = false

  /** The type delta-spark's type widening may change this one to (`ALTER ... CHANGE COLUMN`). */
  def widened: Option[ColumnType] = None

  /** A value of this type as the widened type holds it. */
  def widen(v: Any): Any = v

  /** Whether the type is a struct, array or map (queried through its parts). */
  def nested: Boolean = false
}

object ColumnType {
  val Micros: java.time.format.DateTimeFormatter =
    java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS")
  private def cast(v: Any, t: String) = s"CAST('$v' AS $t)"

  case object Byte_ extends ColumnType {
    val ddl = "TINYINT"; val dataType: DataType = ByteType
    val edges: Seq[Any] = Seq(Byte.MinValue, Byte.MaxValue, 0.toByte, 1.toByte, (-1).toByte)
    def random(r: Random): Any = (r.nextInt(256) - 128).toByte
    def literal(v: Any): String = cast(v, ddl)
    override def widened: Option[ColumnType] = Some(Short_)
    override def widen(v: Any): Any = v.asInstanceOf[Byte].toShort
    override val partitionable = false
  }

  case object Short_ extends ColumnType {
    val ddl = "SMALLINT"; val dataType: DataType = ShortType
    val edges: Seq[Any] = Seq(Short.MinValue, Short.MaxValue, 0.toShort, 7.toShort)
    def random(r: Random): Any = (r.nextInt(65536) - 32768).toShort
    def literal(v: Any): String = cast(v, ddl)
    override def widened: Option[ColumnType] = Some(Int_)
    override def widen(v: Any): Any = v.asInstanceOf[Short].toInt
    override val partitionable = false
  }

  case object Int_ extends ColumnType {
    val ddl = "INT"; val dataType: DataType = IntegerType
    val edges: Seq[Any] = Seq(Int.MinValue, Int.MaxValue, 0, 1, -1, 1000)
    def random(r: Random): Any = r.nextInt(2000) - 1000
    def literal(v: Any): String = cast(v, ddl)
    override def widened: Option[ColumnType] = Some(Long_)
    override def widen(v: Any): Any = v.asInstanceOf[Int].toLong
  }

  case object Long_ extends ColumnType {
    val ddl = "BIGINT"; val dataType: DataType = LongType
    val edges: Seq[Any] = Seq(Long.MinValue, Long.MaxValue, 0L, -1L, 1L << 40)
    def random(r: Random): Any = r.nextLong() % 100000L
    def literal(v: Any): String = cast(v, ddl)
  }

  case object Float_ extends ColumnType {
    val ddl = "FLOAT"; val dataType: DataType = FloatType
    val edges: Seq[Any] = Seq(
      Float.NaN,
      Float.PositiveInfinity,
      Float.NegativeInfinity,
      -0.0f,
      0.0f,
      Float.MinPositiveValue,
      Float.MaxValue,
      0.1f,
      -0.1f
    )
    def random(r: Random): Any = (r.nextInt(2000) - 1000) / 8.0f
    def literal(v: Any): String = cast(v, ddl)
    override val partitionable = false
    override def widened: Option[ColumnType] = Some(Double_)
    override def widen(v: Any): Any = v.asInstanceOf[Float].toDouble
  }

  case object Double_ extends ColumnType {
    val ddl = "DOUBLE"; val dataType: DataType = DoubleType
    val edges: Seq[Any] = Seq(
      Double.NaN,
      Double.PositiveInfinity,
      Double.NegativeInfinity,
      -0.0,
      0.0,
      Double.MinPositiveValue,
      Double.MaxValue,
      0.1,
      1e-300
    )
    def random(r: Random): Any = (r.nextInt(2000) - 1000) / 16.0
    def literal(v: Any): String = cast(v, ddl)
    override val partitionable = false
  }

  final case class Decimal_(precision: Int, scale: Int) extends ColumnType {
    val ddl = s"DECIMAL($precision,$scale)"
    val dataType: DataType = DecimalType(precision, scale)
    private def dec(s: String) = new JBigDecimal(s).setScale(scale)
    private val max = {
      val digits = "9" * (precision - scale)
      dec(if (scale == 0) digits else digits + "." + "9" * scale)
    }
    val edges: Seq[Any] = Seq(max, max.negate(), dec("0"), dec("1")) ++ (
      if (precision == 38 && scale == 18) {
        Seq(
          dec("12345678901234567890.123456789012345678"),
          dec("12345678901234567890.123456789012345679")
        )
      } else Nil
    )
    def random(r: Random): Any =
      JBigDecimal.valueOf(r.nextInt(200000) - 100000L, math.min(scale, 3)).setScale(scale)
    def literal(v: Any): String = cast(v.asInstanceOf[JBigDecimal].toPlainString, ddl)
    override def widened: Option[ColumnType] =
      if (precision <= 36) Some(Decimal_(precision + 2, scale)) else None
  }

  case object String_ extends ColumnType {
    val ddl = "STRING"; val dataType: DataType = StringType
    private val long = "x" * 40
    val edges: Seq[Any] = Seq(
      "",
      "a",
      "Ａ",
      "😀x",
      "😀",
      "é",
      "\u007f",
      long,
      long + "a",
      long + "😀",
      ("y" * 31) + "😀z",
      "p/ =%1",
      "Z"
    )
    def random(r: Random): Any = {
      val alphabet = "abcXYZ09 -_/=%é😀Ａ"
      val cps = alphabet.codePoints().toArray
      val n = r.nextInt(6)
      new String(Array.fill(n)(cps(r.nextInt(cps.length))), 0, n)
    }
    def literal(v: Any): String = s"'${v.toString.replace("\\", "\\\\").replace("'", "\\'")}'"
    override def isString: Boolean = true
  }

  case object Binary_ extends ColumnType {
    val ddl = "BINARY"; val dataType: DataType = BinaryType
    val edges: Seq[Any] = Seq(Array[Byte](), Array[Byte](0), Array[Byte](-1, 127))
    def random(r: Random): Any = Array.fill(r.nextInt(3))(r.nextInt(256).toByte)
    def literal(v: Any): String =
      v.asInstanceOf[Array[Byte]].map(b => f"${b & 0xff}%02X").mkString("X'", "", "'")
    override val partitionable = false
  }

  case object Boolean_ extends ColumnType {
    val ddl = "BOOLEAN"; val dataType: DataType = BooleanType
    val edges: Seq[Any] = Seq(true, false)
    def random(r: Random): Any = r.nextBoolean()
    def literal(v: Any): String = v.toString
  }

  case object Date_ extends ColumnType {
    val ddl = "DATE"; val dataType: DataType = DateType
    val edges: Seq[Any] = Seq("1969-12-31", "1970-01-01", "1900-01-01", "9999-12-31", "2024-02-29")
      .map(d => Date.valueOf(LocalDate.parse(d)))
    def random(r: Random): Any =
      Date.valueOf(LocalDate.of(1960 + r.nextInt(80), 1, 1).plusDays(r.nextInt(365)))
    def literal(v: Any): String = s"DATE'$v'"
    override def widened: Option[ColumnType] = Some(TimestampNtz_)
    override def widen(v: Any): Any = v.asInstanceOf[Date].toLocalDate.atStartOfDay()
  }

  case object Timestamp_ extends ColumnType {
    val ddl = "TIMESTAMP"; val dataType: DataType = TimestampType
    val edges: Seq[Any] = Seq(
      "2024-01-01T10:00:00.000999",
      "2024-01-01T10:00:00.001",
      "2024-01-01T10:00:00.001001",
      "1969-12-31T23:59:59.999999",
      "1900-01-01T00:00:00"
    ).map(s => Timestamp.from(LocalDateTime.parse(s).toInstant(ZoneOffset.UTC)))
    def random(r: Random): Any = Timestamp.from(
      LocalDateTime
        .of(2024, 1, 1, 10, 0)
        .plusNanos((r.nextInt(4000) - 2000).toLong * 1000L * (1 + r.nextInt(3)))
        .toInstant(ZoneOffset.UTC)
    )
    def literal(v: Any): String = {
      val t = v.asInstanceOf[Timestamp].toInstant.atOffset(ZoneOffset.UTC).toLocalDateTime
      s"TIMESTAMP'${t.format(ColumnType.Micros)}'"
    }
  }

  case object TimestampNtz_ extends ColumnType {
    val ddl = "TIMESTAMP_NTZ"; val dataType: DataType = TimestampNTZType
    val edges: Seq[Any] =
      Seq("2024-01-01T10:00:00.000999", "2024-01-01T10:00:00.001", "1969-12-31T23:59:59.999999")
        .map(LocalDateTime.parse)
    def random(r: Random): Any =
      LocalDateTime.of(2024, 1, 1, 10, 0).plusNanos((r.nextInt(4000) - 2000).toLong * 1000L)
    def literal(v: Any): String =
      s"TIMESTAMP_NTZ'${v.asInstanceOf[LocalDateTime].format(ColumnType.Micros)}'"
    override val partitionable = false
  }

  /** A struct of leaf fields (nulls at both levels). */
  final case class Struct_(fields: Seq[(String, ColumnType)]) extends ColumnType {
    val ddl: String = fields.map { case (n, t) => s"$n: ${t.ddl}" }.mkString("STRUCT<", ", ", ">")
    val dataType: DataType = StructType(fields.map { case (n, t) => StructField(n, t.dataType) })
    val edges: Seq[Any] = Seq(Row.fromSeq(fields.map(_ => null)))
    def random(r: Random): Any = Row.fromSeq(fields.map { case (_, t) =>
      if (r.nextInt(5) == 0) null else Values.pick(Values.pool(t, r), r)
    })
    def literal(v: Any): String = {
      val row = v.asInstanceOf[Row]
      fields.zipWithIndex
        .flatMap { case ((n, t), i) =>
          Seq(s"'$n'", if (row.isNullAt(i)) s"CAST(NULL AS ${t.ddl})" else t.literal(row.get(i)))
        }
        .mkString("named_struct(", ", ", ")")
    }
    override val partitionable = false
    override def nested: Boolean = true
  }

  /** An array of a leaf type. */
  final case class Array_(element: ColumnType) extends ColumnType {
    val ddl: String = s"ARRAY<${element.ddl}>"
    val dataType: DataType = ArrayType(element.dataType)
    val edges: Seq[Any] = Seq(Seq.empty, Seq(null))
    def random(r: Random): Any = Seq.fill(r.nextInt(3))(Values.pick(Values.pool(element, r), r))
    def literal(v: Any): String =
      v.asInstanceOf[Seq[Any]]
        .map(x => if (x == null) s"CAST(NULL AS ${element.ddl})" else element.literal(x))
        .mkString("array(", ", ", ")")
    override val partitionable = false
    override def nested: Boolean = true
  }

  /** A map from short strings to a leaf type. */
  final case class Map_(value: ColumnType) extends ColumnType {
    val ddl: String = s"MAP<STRING, ${value.ddl}>"
    val dataType: DataType = MapType(StringType, value.dataType)
    val keys: Seq[String] = Seq("k", "key two", "")
    val edges: Seq[Any] = Seq(Map.empty[String, Any])
    def random(r: Random): Any =
      r.shuffle(keys).take(r.nextInt(3)).map(k => k -> Values.pick(Values.pool(value, r), r)).toMap
    def literal(v: Any): String =
      v.asInstanceOf[Map[String, Any]]
        .flatMap { case (k, x) =>
          Seq(s"'$k'", if (x == null) s"CAST(NULL AS ${value.ddl})" else value.literal(x))
        }
        .mkString("map(", ", ", ")")
    override val partitionable = false
    override def nested: Boolean = true
  }

  val all: Seq[ColumnType] = Seq(
    Byte_,
    Short_,
    Int_,
    Long_,
    Float_,
    Double_,
    Decimal_(38, 18),
    Decimal_(10, 2),
    String_,
    Binary_,
    Boolean_,
    Date_,
    Timestamp_,
    TimestampNtz_
  )

  /** Types of partition columns: the issue's STRING, DATE, TIMESTAMP, DECIMAL and BOOLEAN. */
  val partitionTypes: Seq[ColumnType] =
    Seq(Int_, Long_, String_, Date_, Timestamp_, Boolean_, Decimal_(10, 2))

  /** Nested types: a struct of two leaves, arrays and maps of a leaf. */
  val nestedTypes: Seq[ColumnType] = Seq(
    Struct_(Seq("a" -> Int_, "b" -> String_)),
    Struct_(Seq("x" -> Long_, "d" -> Date_)),
    Array_(Int_),
    Array_(String_),
    Map_(Long_)
  )
}
