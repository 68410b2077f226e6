package io.deltareplay.internal.log

import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonParser, JsonToken}
import com.fasterxml.jackson.core.JsonParser.NumberType
import com.fasterxml.jackson.core.JsonToken._

/**
 * One JSON log line decoded into an add or remove with a streaming parser, without the tree that
 * [[FileAction.fromJson]] reads: building that tree (an object node and a map entry per field of
 * every action) was about two thirds of the time a commit tail takes to parse, and a first read on
 * a new driver parses tens of thousands of such lines while Spark plans the query on the same two
 * cores.
 *
 * It decodes the shapes writers produce: the action an object, `path` and `stats` strings,
 * `partitionValues` an object of strings and nulls, `size` and `modificationTime` integers,
 * `dataChange` a boolean, the deletion vector an object of its fields with their types. Anything
 * else (another token type for one of these, a line with both an add and a remove, a line that is
 * not one JSON object, a syntax error) gives [[Unusual]], and the caller decodes the line through
 * the tree as before, which also names the file when the line is broken. Where it decodes a line,
 * it gives what the tree gives: the last of repeated keys, a null field as an absent one, and only
 * the first JSON value of the line.
 */
private[deltareplay] object ActionLine {

  /** A line this parser leaves to [[FileAction.fromJson]]. */
  case object Unusual extends RuntimeException(null, null, false, false)

  /**
   * The add or remove of `line`, None for a line that holds another action (after reading it whole,
   * so that a broken line is found); throws [[Unusual]] where the tree must decide.
   */
  def decode(
      factory: JsonFactory,
      line: String,
      version: Long,
      needStats: Boolean
  ): Option[FileAction.Action] = {
    val p = factory.createParser(line)
    try {
      if (p.nextToken() != START_OBJECT) throw Unusual
      var found: Body = null
      var seenAdd = false
      var seenRemove = false
      while (p.nextToken() == FIELD_NAME) {
        val name = p.currentName()
        val t = p.nextToken()
        if (name == "add" || name == "remove") {
          if (t != START_OBJECT) throw Unusual
          val isAdd = name == "add"
          if (isAdd) seenAdd = true else seenRemove = true
          found = body(p, isAdd, needStats && isAdd)
        } else p.skipChildren()
      }
      // a syntax error inside is thrown by the parser; a truncated object ends without END_OBJECT
      if (p.currentToken() != END_OBJECT || (seenAdd && seenRemove)) throw Unusual
      Option(found).map(_.action(version))
    } catch {
      case NonFatal(_) => throw Unusual // Unusual itself, or the parser's error on a broken line
    } finally p.close()
  }

  /** The fields of one add or remove as they are read (the last of repeated keys wins). */
  private final class Body(val isAdd: Boolean) {
    var path: String = _
    var partitionValues: Map[String, String] = Map.empty
    var size = 0L
    var modificationTime = 0L
    var dataChange = true
    var stats: String = _
    var dv: Option[DvDescriptor] = None

    def action(version: Long): FileAction.Action = {
      if (path == null) throw Unusual // the tree names the file: an action without a path
      FileAction.Action(
        version = version,
        isAdd = isAdd,
        path = path,
        partitionValues = partitionValues,
        size = size,
        modificationTime = modificationTime,
        dataChange = dataChange,
        stats = stats,
        dv = dv
      )
    }
  }

  /** From an action's START_OBJECT to its END_OBJECT. */
  private def body(p: JsonParser, isAdd: Boolean, keepStats: Boolean): Body = {
    val b = new Body(isAdd)
    while (p.nextToken() == FIELD_NAME) {
      val name = p.currentName()
      val t = p.nextToken()
      name match {
        case "path" => b.path = if (t == VALUE_NULL) null else string(p, t)
        case "partitionValues" =>
          b.partitionValues = if (t == VALUE_NULL) Map.empty else values(p, t)
        case "size" => b.size = if (t == VALUE_NULL) 0L else long(p, t)
        case "modificationTime" => b.modificationTime = if (t == VALUE_NULL) 0L else long(p, t)
        case "dataChange" =>
          b.dataChange = t match {
            case VALUE_TRUE | VALUE_NULL => true
            case VALUE_FALSE => false
            case _ => throw Unusual
          }
        case "stats" =>
          if (t != VALUE_NULL && t != VALUE_STRING) throw Unusual
          b.stats = if (keepStats && t == VALUE_STRING) p.getText else null
        case "deletionVector" => b.dv = if (t == VALUE_NULL) None else Some(dv(p, t))
        case _ => p.skipChildren()
      }
    }
    b
  }

  private def string(p: JsonParser, t: JsonToken): String =
    if (t == VALUE_STRING) p.getText else throw Unusual

  private def long(p: JsonParser, t: JsonToken): Long =
    if (t == VALUE_NUMBER_INT && p.getNumberType != NumberType.BIG_INTEGER) p.getLongValue
    else throw Unusual

  private def int(p: JsonParser, t: JsonToken): Int =
    if (t == VALUE_NUMBER_INT && p.getNumberType == NumberType.INT) p.getIntValue
    else throw Unusual

  /** `partitionValues`: an object of strings and nulls. */
  private def values(p: JsonParser, t: JsonToken): Map[String, String] = {
    if (t != START_OBJECT) throw Unusual
    val m = Map.newBuilder[String, String]
    while (p.nextToken() == FIELD_NAME) {
      val key = p.currentName()
      p.nextToken() match {
        case VALUE_STRING => m += key -> p.getText
        case VALUE_NULL => m += key -> null
        case _ => throw Unusual
      }
    }
    m.result()
  }

  /** A deletion vector descriptor: every field but `offset` present and not null. */
  private def dv(p: JsonParser, t: JsonToken): DvDescriptor = {
    if (t != START_OBJECT) throw Unusual
    var storageType: String = null
    var pathOrInline: String = null
    var offset: Option[Int] = None
    var sizeInBytes: Option[Int] = None
    var cardinality: Option[Long] = None
    while (p.nextToken() == FIELD_NAME) {
      val name = p.currentName()
      val v = p.nextToken()
      name match {
        case "storageType" => storageType = string(p, v)
        case "pathOrInlineDv" => pathOrInline = string(p, v)
        case "offset" => offset = if (v == VALUE_NULL) None else Some(int(p, v))
        case "sizeInBytes" => sizeInBytes = Some(int(p, v))
        case "cardinality" => cardinality = Some(long(p, v))
        case _ => p.skipChildren()
      }
    }
    if (storageType == null || pathOrInline == null || sizeInBytes.isEmpty || cardinality.isEmpty) {
      throw Unusual
    }
    DvDescriptor(storageType, pathOrInline, offset, sizeInBytes.get, cardinality.get)
  }
}
