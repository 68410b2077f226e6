package io.deltareplay.internal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Cast, GenericInternalRow, Literal}
import org.apache.spark.sql.types.{StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Turns the log's string partition values into typed rows. Values are cast from their string form
 * as delta-spark does (timestamps without a zone in the session time zone, ISO-8601 ones with `Z`
 * in UTC); a null stays null.
 *
 * @param schema
 *   logical partition schema of the rows to build
 * @param physicalNames
 *   the log's key for each column of `schema`
 */
private[deltareplay] final class PartitionValues(
    schema: StructType,
    physicalNames: Seq[String],
    timeZone: String
) {
  private val casts = schema.fields.map { f =>
    if (f.dataType == StringType) None
    else
      Some((s: String) =>
        Cast(Literal(UTF8String.fromString(s)), f.dataType, Some(timeZone)).eval()
      )
  }
  private val cache = new java.util.IdentityHashMap[Map[String, String], InternalRow]()

  /** The row for one file's values; identical (interned) maps share one row. */
  def row(values: Map[String, String]): InternalRow = {
    val cached = cache.get(values)
    if (cached != null) cached
    else {
      val out = new GenericInternalRow(schema.length)
      var i = 0
      while (i < schema.length) {
        val raw = values.getOrElse(physicalNames(i), null)
        out.update(
          i,
          if (raw == null) null
          else
            casts(i) match {
              case None => UTF8String.fromString(raw)
              case Some(cast) => cast(raw)
            }
        )
        i += 1
      }
      cache.put(values, out)
      out
    }
  }
}
