package io.deltareplay.internal.log

import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonParser, JsonToken}
import com.fasterxml.jackson.core.JsonToken._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.json.JSONOptions
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * Reads the statistics at `paths` (names from the statistics' root; their types) out of a
 * statistics JSON into a row, one ordinal per path. A document of plain JSON is scanned by
 * [[StatsScan]], any other read by Jackson with the options of Spark's JSON reader (`scan = false`:
 * every document by Jackson; StatsReaderSuite holds the two to the same answers).
 */
private[deltareplay] final class StatsReader(
    paths: Seq[(Seq[String], DataType)],
    timeZone: String,
    scan: Boolean = true
) {
  private val root = StatsNode.tree(paths)

  // plain documents are scanned without Jackson where every name is ASCII (so that a key's case
  // check is a byte comparison) and every leaf of a type the scan converts
  private val scanned = scan && root.ascii && paths.forall(p => StatsScan.Types.contains(p._2))

  private val factory: JsonFactory =
    new JSONOptions(Map.empty[String, String], timeZone, "").buildJsonFactory()

  /** Fills `out`; false when unsure (the document does not parse, or a key differs in case). */
  def read(json: String, out: InternalRow): Boolean =
    read(json.getBytes(StandardCharsets.UTF_8), out)

  /** [[read]] of a document's UTF-8 bytes. */
  def read(json: Array[Byte], out: InternalRow): Boolean = read(json, 0, json.length, out)

  /** [[read]] of a document's UTF-8 bytes held in a string (without copying them). */
  def read(json: UTF8String, out: InternalRow): Boolean = json.getBaseObject match {
    case bytes: Array[Byte] =>
      read(bytes, (json.getBaseOffset - Platform.BYTE_ARRAY_OFFSET).toInt, json.numBytes, out)
    case _ => read(json.getBytes, out)
  }

  /** [[read]] of the `length` bytes of `json` from `offset`. */
  def read(json: Array[Byte], offset: Int, length: Int, out: InternalRow): Boolean =
    (scanned && new StatsScan(json, offset, offset + length, out).run(root)) ||
      readWithJackson(json, offset, length, out)

  private def readWithJackson(
      json: Array[Byte],
      offset: Int,
      length: Int,
      out: InternalRow
  ): Boolean = {
    var p: JsonParser = null
    try {
      // a document Jackson's byte parser would take for another encoding: unsure (from_json, which
      // decodes it as UTF-8 text, fails on it)
      if (!StatsJsonToStruct.readsAsText(json, offset, length)) return false
      p = factory.createParser(json, offset, length)
      p.nextToken() == START_OBJECT && readObject(p, root, out) && p.nextToken() == null
    } catch {
      case NonFatal(_) => false
    } finally if (p != null) p.close()
  }

  /** From `node`'s START_OBJECT to its END_OBJECT. */
  private def readObject(p: JsonParser, node: StatsNode, out: InternalRow): Boolean = {
    node.clear(out) // an object read again replaces the first, as in Spark
    var t = p.nextToken()
    while (t == FIELD_NAME) {
      val name = p.currentName()
      val value = p.nextToken()
      val c = node.children.get(name)
      if (c == null) {
        if (node.differsInCase(name)) return false
        p.skipChildren()
      } else if (c.leaf >= 0) {
        out.update(c.leaf, scalar(p, value, c.dataType))
        p.skipChildren()
      } else if (value == START_OBJECT) {
        if (!readObject(p, c, out)) return false
      } else {
        c.clear(out)
        p.skipChildren()
      }
      t = p.nextToken()
    }
    t == END_OBJECT
  }

  /** The value Spark's JSON reader makes of the current token for `t`; null where unsure. */
  private def scalar(p: JsonParser, token: JsonToken, t: DataType): Any =
    try
      (t, token) match {
        case (ByteType, VALUE_NUMBER_INT) => p.getByteValue
        case (ShortType, VALUE_NUMBER_INT) => p.getShortValue
        case (IntegerType, VALUE_NUMBER_INT) => p.getIntValue
        case (LongType, VALUE_NUMBER_INT) => p.getLongValue
        case (FloatType, VALUE_NUMBER_INT | VALUE_NUMBER_FLOAT) => p.getFloatValue
        case (DoubleType, VALUE_NUMBER_INT | VALUE_NUMBER_FLOAT) => p.getDoubleValue
        case (BooleanType, VALUE_TRUE) => true
        case (BooleanType, VALUE_FALSE) => false
        case (_: StringType, VALUE_STRING) => UTF8String.fromString(p.getText)
        case _ => null
      }
    catch {
      case NonFatal(_) => null
    }
}

private[deltareplay] object StatsReader {

  /** Whether [[StatsReader]] reads statistics of type `t` (as Spark's JSON reader converts it). */
  def readable(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case BooleanType => true
    case s: StringType => s == StringType
    case _ => false
  }
}

/**
 * A node of the tree of statistics a [[StatsReader]] reads: built once, then only read (a reader
 * may be shared by threads). Per object of the statistics: its children by name, the ordinals at or
 * below it and, for a leaf, its ordinal and type.
 */
private[log] final class StatsNode {
  val children = new java.util.HashMap[String, StatsNode]()
  var leaf: Int = -1
  var dataType: DataType = NullType
  private val belowBuffer = mutable.ArrayBuffer.empty[Int]
  private var below: Array[Int] = Array.emptyIntArray
  private var names: Array[String] = Array.empty
  // the children again, with their names as bytes, for the scan
  private var nameBytes: Array[Array[Byte]] = Array.empty
  private var nodes: Array[StatsNode] = Array.empty

  /** Whether every name at or below this node is ASCII. */
  def ascii: Boolean =
    names.forall(_.forall(_ < 0x80)) && nodes.forall(_.ascii)

  /** The child named by the ASCII bytes `from` until `until` of `b`; null if none. */
  def child(b: Array[Byte], from: Int, until: Int): StatsNode = {
    val k = named(b, from, until, ignoreCase = false)
    if (k < 0) null else nodes(k)
  }

  /** Whether a child's name equals `name` but for case (Spark's reader would then differ). */
  def differsInCase(name: String): Boolean = {
    var k = 0
    while (k < names.length) {
      if (names(k).equalsIgnoreCase(name)) return true
      k += 1
    }
    false
  }

  /** [[differsInCase]] of an ASCII name in bytes (every child's name ASCII). */
  def differsInCase(b: Array[Byte], from: Int, until: Int): Boolean =
    named(b, from, until, ignoreCase = true) >= 0

  /**
   * The position of the child whose name is the bytes `from` until `until` of `b` (ASCII letters
   * compared without case with `ignoreCase`); -1 if none. Names are short: a plain loop
   * (`Arrays.equals`' vectorized mismatch costs more to set up).
   */
  private def named(b: Array[Byte], from: Int, until: Int, ignoreCase: Boolean): Int = {
    var k = 0
    while (k < nameBytes.length) {
      val n = nameBytes(k)
      if (n.length == until - from) {
        var j = 0
        while (
          j < n.length && (n(j) == b(from + j) || ignoreCase && lower(n(j)) == lower(b(from + j)))
        )
          j += 1
        if (j == n.length) return k
      }
      k += 1
    }
    -1
  }

  private def lower(c: Byte): Int = if (c >= 'A' && c <= 'Z') c + 32 else c.toInt

  /** Nulls every ordinal at or below this node. */
  def clear(out: InternalRow): Unit = {
    var k = 0
    while (k < below.length) {
      out.setNullAt(below(k))
      k += 1
    }
  }

  private def freeze(): Unit = {
    below = belowBuffer.toArray
    names = children.keySet.toArray(Array.empty[String])
    nodes = names.map(children.get)
    nameBytes = names.map(_.getBytes(StandardCharsets.UTF_8))
    nodes.foreach(_.freeze())
  }
}

private[log] object StatsNode {

  /** The tree of `paths` (names from the statistics' root, with their types); ordinals in order. */
  def tree(paths: Seq[(Seq[String], DataType)]): StatsNode = {
    val root = new StatsNode
    paths.zipWithIndex.foreach { case ((names, t), i) =>
      var n = root
      n.belowBuffer += i
      names.foreach { name =>
        n = n.children.computeIfAbsent(name, _ => new StatsNode)
        n.belowBuffer += i
      }
      n.leaf = i
      n.dataType = t
    }
    root.freeze()
    root
  }
}
