package io.deltareplay.internal.streaming

import com.fasterxml.jackson.databind.ObjectMapper
import io.deltareplay.Errors
import org.apache.spark.sql.connector.read.streaming.{Offset => OffsetV2}

/**
 * How far a stream has read, in the same JSON layout and with the same meaning as delta-spark's
 * `DeltaSourceOffset`, so that a query can move between delta-spark's source and this one without
 * losing or repeating data.
 *
 * @param version
 *   the table version being read
 * @param index
 *   the last file read within it: in the initial snapshot, the position in (modificationTime, path)
 *   order; in a commit, the position among its data-changing adds in log order.
 *   [[StreamOffset.Base]]: none yet.
 * @param initialSnapshot
 *   whether `version` is the initial snapshot rather than a commit
 */
private[deltareplay] case class StreamOffset(
    tableId: String,
    version: Long,
    index: Long,
    initialSnapshot: Boolean
) extends OffsetV2
    with Ordered[StreamOffset] {

  override def json(): String =
    s"""{"sourceVersion":${StreamOffset.SourceVersion},"reservoirId":"$tableId",""" +
      s""""reservoirVersion":$version,"index":$index,"isStartingVersion":$initialSnapshot}"""

  override def compare(that: StreamOffset): Int =
    Ordering[(Long, Boolean, Long)].compare(
      (version, !initialSnapshot, index),
      (that.version, !that.initialSnapshot, that.index)
    )
}

private[deltareplay] object StreamOffset {
  val SourceVersion = 1
  val Base: Long = -1L

  private val mapper = new ObjectMapper()

  /** Parses an offset; fails naming both tables when it belongs to another table. */
  def parse(json: String, table: String, tableId: String): StreamOffset = {
    val node =
      try mapper.readTree(json)
      catch { case e: Exception => throw Errors.badOffset(table, json, e.getMessage) }
    def field(name: String) =
      Option(node.get(name)).getOrElse(throw Errors.badOffset(table, json, s"no field $name"))
    val sourceVersion = field("sourceVersion").asInt()
    if (sourceVersion != 1 && sourceVersion != 3) {
      throw Errors.badOffset(table, json, s"unsupported sourceVersion $sourceVersion")
    }
    val id = field("reservoirId").asText()
    if (id != tableId) throw Errors.offsetFromAnotherTable(table, tableId, id)
    val index = field("index").asLong()
    if (index < Base) {
      throw Errors.badOffset(table, json, "a schema-tracking offset of delta-spark")
    }
    StreamOffset(
      id,
      field("reservoirVersion").asLong(),
      index,
      field("isStartingVersion").asBoolean()
    )
  }
}
