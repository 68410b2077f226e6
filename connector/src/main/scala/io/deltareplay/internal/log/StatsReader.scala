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
 * statistics JSON into a row, one ordinal per path.
 */
private[deltareplay] final class StatsReader(
    paths: Seq[(Seq[String], DataType)],
    timeZone: String
) {
  // Built once, then only read (a reader may be shared by threads): per object of the
  // statistics, its children by name, their names (for the case check), the ordinals at or
  // below it and, for a leaf, its ordinal and type.
  private final class Node {
    val children = new java.util.HashMap[String, Node]()
    var names: Array[String] = Array.empty
    var leaf: Int = -1
    var dataType: DataType = NullType
    val belowBuffer = mutable.ArrayBuffer.empty[Int]
    var below: Array[Int] = Array.emptyIntArray

    def freeze(): Unit = {
      below = belowBuffer.toArray
      names = children.keySet.toArray(Array.empty[String])
      children.values.forEach(_.freeze())
    }

    /** Whether a child's name equals `name` but for case (Spark's reader would then differ). */
    def differsInCase(name: String): Boolean = {
      var i = 0
      while (i < names.length) {
        if (names(i).equalsIgnoreCase(name)) return true
        i += 1
      }
      false
    }

    def clear(out: InternalRow): Unit = {
      var i = 0
      while (i < below.length) {
        out.setNullAt(below(i))
        i += 1
      }
    }
  }
  private val root = new Node
  paths.zipWithIndex.foreach { case ((names, t), i) =>
    var n = root
    n.belowBuffer += i
    names.foreach { name =>
      n = n.children.computeIfAbsent(name, _ => new Node)
      n.belowBuffer += i
    }
    n.leaf = i
    n.dataType = t
  }
  root.freeze()

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
  def read(json: Array[Byte], offset: Int, length: Int, out: InternalRow): Boolean = {
    var p: JsonParser = null
    try {
      p = factory.createParser(json, offset, length)
      p.nextToken() == START_OBJECT && readObject(p, root, out) && p.nextToken() == null
    } catch {
      case NonFatal(_) => false
    } finally if (p != null) p.close()
  }

  /** From `node`'s START_OBJECT to its END_OBJECT. */
  private def readObject(p: JsonParser, node: Node, out: InternalRow): Boolean = {
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
