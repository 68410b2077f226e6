package io.deltareplay.internal.log

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Expression,
  GenericInternalRow,
  NonSQLExpression,
  UnaryExpression
}
import org.apache.spark.sql.types.{DataType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The statistics at `paths` (names from the statistics' root) read out of a file's statistics JSON
 * (`child`, a checkpoint's `add.stats`), as a struct with one field per path: a value where
 * [[StatsReader]] reads it as Spark's JSON reader would, null where it is missing or not certain (a
 * document that does not parse gives a struct of nulls). Only the fields asked for are converted,
 * token by token; the rest of the document is skipped.
 *
 * A predicate reads several fields of one document: every copy of this expression made from one
 * (same `id`) decodes a row's document once (the last decoded is kept per thread with a copy of its
 * bytes, compared with the next document's); `remember = false` for a single use, which needs
 * neither the copy nor the comparison.
 */
private[deltareplay] final case class StatsFromJson(
    child: Expression,
    paths: Seq[Seq[String]],
    types: Seq[DataType],
    timeZone: String,
    id: Long = StatsFromJson.nextId(),
    remember: Boolean = true
) extends UnaryExpression
    with EvalInGeneratedCode
    with NonSQLExpression {

  override def dataType: StructType =
    StructType(types.zipWithIndex.map { case (t, i) => StructField(s"_$i", t) })

  override def nullable: Boolean = true

  override def checkInputDataTypes(): org.apache.spark.sql.catalyst.analysis.TypeCheckResult =
    if (child.dataType.isInstanceOf[StringType]) super.checkInputDataTypes()
    else
      org.apache.spark.sql.catalyst.analysis.TypeCheckResult.TypeCheckFailure("needs a string")

  @transient private lazy val reader = new StatsReader(paths.zip(types), timeZone)

  override protected def nullSafeEval(input: Any): Any = {
    val json = input.asInstanceOf[UTF8String]
    if (!remember) read(json)
    else {
      val last = StatsFromJson.last.get()
      // the same document again (compared by its bytes: a reader may reuse its buffers)
      if (last.id == id && last.json != null && last.json == json) last.row
      else {
        val out = read(json)
        last.id = id
        last.json = json.clone()
        last.row = out
        out
      }
    }
  }

  private def read(json: UTF8String): InternalRow = {
    val out = new GenericInternalRow(paths.size)
    if (!reader.read(json, out)) paths.indices.foreach(out.setNullAt)
    out
  }

  override protected def withNewChildInternal(newChild: Expression): StatsFromJson =
    copy(child = newChild)

  override def toString: String =
    s"stats_from_json($child, ${paths.map(_.mkString(".")).mkString(", ")})"
}

private[deltareplay] object StatsFromJson {
  private val ids = new AtomicLong()
  def nextId(): Long = ids.incrementAndGet()

  /**
   * The document a thread decoded last (a copy of its bytes) and the struct made of it. Per thread,
   * not per session: it lives in executor tasks, where no session is, and only saves decoding the
   * same document twice in a row.
   */
  private final class Last {
    var id: Long = -1L
    var json: UTF8String = null
    var row: InternalRow = null
  }

  private val last = ThreadLocal.withInitial[Last](() => new Last)
}
