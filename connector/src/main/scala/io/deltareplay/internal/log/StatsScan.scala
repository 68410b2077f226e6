package io.deltareplay.internal.log

import java.nio.charset.StandardCharsets

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * One read of a statistics document without a JSON library: the bytes `from` until `until` of `b`
 * scanned once, the statistics of `root`'s tree written to `out` as [[StatsReader]]'s Jackson path
 * writes them. It decides only documents of plain JSON, which Jackson (with the options of Spark's
 * JSON reader) parses the same way; on anything else [[run]] says false and the caller hands the
 * document to Jackson, which decides it: a document that is not JSON, an escape in a name or in a
 * string value it reads, a byte outside ASCII in a string, an integer of more than 18 digits, the
 * non-numeric numbers and single quotes the reader allows, a key that differs from one it reads
 * only in case, nesting deeper than [[StatsScan.MaxDepth]]. Those are rare in statistics, which
 * writers emit as plain JSON; what the scan saves is Jackson's parser per document and its name
 * canonicalisation while skipping (most of a filtered first read's task on a checkpoint without
 * typed statistics: benchmarks/results/2026-12-05-stats-scan.notes.md).
 *
 * Not thread-safe: one per document.
 */
private[log] final class StatsScan(b: Array[Byte], from: Int, until: Int, out: InternalRow) {
  import StatsScan._

  private var i = from

  /** Reads the document into `out`; false when the caller must read it with Jackson. */
  def run(root: StatsNode): Boolean = {
    ws()
    if (i >= until || b(i) != '{' || !obj(root, 1)) return false
    ws()
    i == until
  }

  /** An object of `node` from its `{` past its `}`. */
  private def obj(node: StatsNode, depth: Int): Boolean = {
    node.clear(out) // an object read again replaces the first, as in Spark
    i += 1
    ws()
    if (i < until && b(i) == '}') { i += 1; return true }
    while (true) {
      if (i >= until || b(i) != '"') return false
      val start = i + 1
      if (!plainString()) return false
      val end = i - 1
      ws()
      if (i >= until || b(i) != ':') return false
      i += 1
      ws()
      if (i >= until) return false
      val c = node.child(b, start, end)
      val ok =
        if (c == null) !node.differsInCase(b, start, end) && skip(depth)
        else if (c.leaf >= 0) leaf(c, depth)
        else if (b(i) == '{') depth < MaxDepth && obj(c, depth + 1)
        else { c.clear(out); skip(depth) }
      if (!ok) return false
      val next = separator('}')
      if (next != More) return next == Closed
    }
    false
  }

  /**
   * The value of leaf `c`, converted as the Jackson path converts its token; null where it does.
   */
  private def leaf(c: StatsNode, depth: Int): Boolean = {
    val t = c.dataType
    val first = b(i)
    if (first == '"') {
      if (t != StringType) { out.setNullAt(c.leaf); skipString() }
      else {
        val start = i + 1
        if (!plainString()) return false
        out.update(c.leaf, UTF8String.fromBytes(java.util.Arrays.copyOfRange(b, start, i - 1)))
        true
      }
    } else if (first == 't' || first == 'f') {
      val value = first == 't'
      if (!literal(if (value) True else False)) return false
      if (t == BooleanType) out.update(c.leaf, value) else out.setNullAt(c.leaf)
      true
    } else if (first == '-' || (first >= '0' && first <= '9')) {
      val start = i
      val kind = number()
      if (kind == NotANumber) false
      else if (kind == Integral) integral(c, t, start)
      else {
        if (t == DoubleType)
          out.update(c.leaf, java.lang.Double.parseDouble(ascii(start, i)))
        else out.setNullAt(c.leaf)
        true
      }
    } else {
      // null, an object or an array: null (an object or array skipped)
      out.setNullAt(c.leaf)
      skip(depth)
    }
  }

  /** The integer from `start` to the scan's position into leaf `c` of type `t`. */
  private def integral(c: StatsNode, t: DataType, start: Int): Boolean = {
    val negative = b(start) == '-'
    val digits = i - start - (if (negative) 1 else 0)
    if (t != LongType && t != IntegerType && t != DoubleType) {
      out.setNullAt(c.leaf)
      return true
    }
    // longer ones may not fit in a long (Jackson decides them); a negative zero as a double is
    // left to it too
    if (digits > 18) return false
    var v = 0L
    var k = if (negative) start + 1 else start
    while (k < i) { v = v * 10 + (b(k) - '0'); k += 1 }
    if (negative) v = -v
    if (t == LongType) out.setLong(c.leaf, v)
    else if (t == IntegerType) {
      if (v >= Int.MinValue && v <= Int.MaxValue) out.setInt(c.leaf, v.toInt)
      else out.setNullAt(c.leaf) // out of range: Jackson's coercion fails, the value is unsure
    } else {
      if (negative && v == 0) return false
      out.setDouble(c.leaf, v.toDouble)
    }
    true
  }

  /** Past any value; false on what is not plain JSON. */
  private def skip(depth: Int): Boolean = {
    if (i >= until) return false
    val first = b(i)
    if (first == '"') skipString()
    else if (first == '{') {
      if (depth >= MaxDepth) return false
      i += 1
      ws()
      if (i < until && b(i) == '}') { i += 1; return true }
      while (true) {
        if (i >= until || b(i) != '"' || !skipString()) return false
        ws()
        if (i >= until || b(i) != ':') return false
        i += 1
        ws()
        if (!skip(depth + 1)) return false
        val next = separator('}')
        if (next != More) return next == Closed
      }
      false
    } else if (first == '[') {
      if (depth >= MaxDepth) return false
      i += 1
      ws()
      if (i < until && b(i) == ']') { i += 1; return true }
      while (true) {
        if (!skip(depth + 1)) return false
        val next = separator(']')
        if (next != More) return next == Closed
      }
      false
    } else if (first == 't') literal(True)
    else if (first == 'f') literal(False)
    else if (first == 'n') literal(Null)
    else number() != NotANumber
  }

  /**
   * After a member or element: past a `,` ([[More]]), past `close` ([[Closed]]), or [[Broken]] on
   * anything else.
   */
  private def separator(close: Char): Int = {
    ws()
    if (i >= until) Broken
    else if (b(i) == ',') { i += 1; ws(); More }
    else if (b(i) == close) { i += 1; Closed }
    else Broken
  }

  /** Past a string of printable ASCII without escapes (a name, or a value read). */
  private def plainString(): Boolean = {
    val start = i
    i += 1
    while (i < until) {
      val c = b(i)
      if (c == '"') { i += 1; return true }
      if (c < 0x20 || c == '\\' || i - start > MaxString) return false // c < 0: not ASCII
      i += 1
    }
    false
  }

  /** Past a string of ASCII, escapes allowed (JSON's, checked as Jackson checks them). */
  private def skipString(): Boolean = {
    val start = i
    i += 1
    while (i < until) {
      val c = b(i)
      if (c == '"') { i += 1; return true }
      if (c < 0x20 || i - start > MaxString) return false
      if (c == '\\') {
        if (i + 1 >= until) return false
        val e = b(i + 1)
        if (e == 'u') {
          if (i + 5 >= until) return false
          var k = i + 2
          while (k < i + 6) { if (!hex(b(k))) return false; k += 1 }
          i += 6
        } else if (Escapes.indexOf(e.toInt) >= 0) i += 2
        else return false
      } else i += 1
    }
    false
  }

  /** Past a number of JSON's grammar; its kind ([[NotANumber]] when it is not one). */
  private def number(): Int = {
    val start = i
    if (b(i) == '-') i += 1
    if (i >= until) return NotANumber
    if (b(i) == '0') i += 1
    else if (b(i) >= '1' && b(i) <= '9') while (i < until && digit(b(i))) i += 1
    else return NotANumber
    var kind = Integral
    if (i < until && b(i) == '.') {
      i += 1
      if (i >= until || !digit(b(i))) return NotANumber
      while (i < until && digit(b(i))) i += 1
      kind = Fractional
    }
    if (i < until && (b(i) == 'e' || b(i) == 'E')) {
      i += 1
      if (i < until && (b(i) == '+' || b(i) == '-')) i += 1
      if (i >= until || !digit(b(i))) return NotANumber
      while (i < until && digit(b(i))) i += 1
      kind = Fractional
    }
    if (i - start > MaxNumber) NotANumber else kind
  }

  private def literal(word: Array[Byte]): Boolean = {
    if (until - i < word.length) return false
    var k = 0
    while (k < word.length) { if (b(i + k) != word(k)) return false; k += 1 }
    i += word.length
    true
  }

  private def ws(): Unit =
    while (i < until && (b(i) == ' ' || b(i) == '\n' || b(i) == '\r' || b(i) == '\t')) i += 1

  private def ascii(start: Int, end: Int): String =
    new String(b, start, end - start, StandardCharsets.US_ASCII)
}

private[log] object StatsScan {

  /** Deeper documents go to Jackson (its own limit is far above any statistics'). */
  val MaxDepth = 64

  /** Longer strings and numbers go to Jackson (its limits are far above these). */
  private val MaxString = 1 << 20
  private val MaxNumber = 100

  private val More = 0
  private val Closed = 1
  private val Broken = 2

  private val NotANumber = 0
  private val Integral = 1
  private val Fractional = 2

  private val True = "true".getBytes(StandardCharsets.US_ASCII)
  private val False = "false".getBytes(StandardCharsets.US_ASCII)
  private val Null = "null".getBytes(StandardCharsets.US_ASCII)
  private val Escapes = "\"\\/bfnrt"

  /** The leaf types the scan converts itself (the others' documents go to Jackson). */
  val Types: Set[DataType] = Set(LongType, IntegerType, DoubleType, BooleanType, StringType)

  private def digit(c: Byte): Boolean = c >= '0' && c <= '9'

  private def hex(c: Byte): Boolean =
    (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
