package io.deltareplay.internal.replay

import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonParser, JsonToken}
import com.fasterxml.jackson.core.JsonToken._
import io.deltareplay.internal.log.FileEntry
import io.deltareplay.internal.log.LiveFile
import io.deltareplay.internal.skipping.{DataSkipping, FileFilter, Relax}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.json.JSONOptions
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * A scan's [[FileFilter]] checked on the adds of the commits after a checkpoint before their index
 * entries are built, so that a narrowed read ([[CheckpointFilter]] on the checkpoint's side) parses
 * the statistics of only the tail adds its filters may match: building an entry parses the whole
 * statistics JSON with Spark's JSON reader, the largest cost of a first read's tail on a cold
 * driver. It only ever lets more through than the entry predicate: an add it drops is one the read
 * would skip.
 *
 *   - Partition part, exact: the prune predicate with each entry column replaced by the expression
 *     that computes it from the add ([[FileEntry.fromLiveFile]]: the same casts of the partition
 *     values).
 *   - Statistics part, relaxed ([[Relax]]): over the few statistics it compares with literals, read
 *     from the add's JSON token by token with a Jackson parser of the factory Spark's reader builds
 *     for the same (default) options, each value as that reader converts its type: integers of
 *     every width from integer tokens, floats from number tokens, booleans, and strings from string
 *     tokens. Any other token, a value out of range, a statistic of another type, or a missing one
 *     is null, which the relaxed predicate reads as "may match". A document that does not parse, or
 *     that has a key differing from a needed one only in case, keeps the add. A field Spark's
 *     reader fails to convert leaves the other fields set only with its partial results
 *     (`spark.sql.json.enablePartialResults`, on by default); with them off, the statistics part is
 *     not checked.
 */
private[deltareplay] final class TailFilter(entry: FileEntry, filter: FileFilter) {
  import TailFilter._

  private val offset = LiveFile.Schema.length
  private val statsAttr = entry.attribute("stats")
  private val statsField = CheckpointFilter.StatsField(statsAttr)
  private val definitions: Map[ExprId, Expression] =
    entry.attributes.zip(entry.fromLiveFile).map { case (a, e) => a.exprId -> e }.toMap

  private val leaves = mutable.LinkedHashMap.empty[Seq[String], BoundReference]

  /** As Spark's JSON reader takes it (the session's `spark.sql.json.enablePartialResults`). */
  private val partialResults = SQLConf.get.jsonEnablePartialResults

  /** Entry columns other than `stats` replaced by their definition over a [[LiveFile]] row. */
  private def onAdd(e: Expression): Expression = e.transformUp {
    case a: AttributeReference if a.exprId != statsAttr.exprId && definitions.contains(a.exprId) =>
      definitions(a.exprId)
  }

  private val prune: Expression = onAdd(filter.prune) match {
    case p if p.references.isEmpty => p
    case _ => Literal.TrueLiteral // it reads statistics: left to the entries
  }

  private val skip: Expression =
    if (!partialResults || !filter.skips) Literal.TrueLiteral
    else {
      val moved = onAdd(filter.skip.transformDown {
        case g @ statsField(names) if readable(g.dataType) =>
          leaves.getOrElseUpdate(names, BoundReference(offset + leaves.size, g.dataType, true))
        case g @ statsField(_) => Literal(null, g.dataType)
      })
      val relaxed = Relax(
        moved,
        {
          case b: BoundReference => b.ordinal >= offset
          case _ => false
        }
      )
      if (relaxed.references.isEmpty) relaxed else Literal.TrueLiteral
    }

  private val predicate: Expression = DataSkipping.and(prune, skip)

  /** Whether it can drop anything. */
  val narrows: Boolean = predicate != Literal.TrueLiteral

  private val needsAdd = predicate.exists {
    case b: BoundReference => b.ordinal < offset
    case _ => false
  }
  private val noAdd = new GenericInternalRow(offset) // read only: stands for an unused add row
  private val reader =
    new StatsReader(leaves.toSeq.map { case (n, b) => n -> b.dataType }, entry.timeZone)

  /** Whether the read may match the add (false only where the entry predicate is false). */
  def keeps(f: LiveFile): Boolean = !narrows || {
    val values = new GenericInternalRow(leaves.size)
    val sure = leaves.isEmpty || f.stats == null || reader.read(f.stats, values)
    if (!sure) true
    else {
      val add = if (needsAdd) f.toInternalRow else noAdd
      predicate.eval(new JoinedRow(add, values)) != false
    }
  }
}

private[deltareplay] object TailFilter {

  /** Whether [[StatsReader]] reads statistics of type `t` (as Spark's JSON reader converts it). */
  def readable(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case BooleanType => true
    case s: StringType => s == StringType
    case _ => false
  }

  /**
   * Reads the statistics at `paths` (names from the statistics' root; their types) out of a
   * statistics JSON into a row, one ordinal per path.
   */
  final class StatsReader(paths: Seq[(Seq[String], DataType)], timeZone: String) {
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
}
