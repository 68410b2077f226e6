package io.deltareplay.internal.log

import com.fasterxml.jackson.core.{JsonFactory, JsonParser}
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Expression, NonSQLExpression, UnaryExpression}
import org.apache.spark.sql.catalyst.json.{CreateJacksonParser, JSONOptions, JacksonParser}
import org.apache.spark.sql.catalyst.util.FailureSafeParser
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types.{DataType, StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A file's statistics JSON (`child`) parsed into `schema` by Spark's own JSON reader (the same
 * converter, options and failure handling as `from_json` with no options: permissive, a document
 * that does not parse gives a struct of nulls), with one difference in how a document reaches
 * Jackson: its UTF-8 bytes are handed to a byte parser, where `from_json` wraps each document in a
 * character reader, a new UTF-8 decoder per row (a large share of an index build's task time on big
 * checkpoints: benchmarks/results/2026-12-04-whole-table-1m-profile.notes.md).
 * StatsJsonToStructSuite holds it to `from_json`'s answers.
 */
private[deltareplay] final case class StatsJsonToStruct(
    child: Expression,
    schema: StructType,
    timeZone: String
) extends UnaryExpression
    with EvalInGeneratedCode
    with NonSQLExpression {

  private val target = SparkBridge.asNullable(schema)

  override def dataType: DataType = target

  override def nullable: Boolean = true

  override def checkInputDataTypes(): TypeCheckResult =
    if (child.dataType.isInstanceOf[StringType]) super.checkInputDataTypes()
    else TypeCheckResult.TypeCheckFailure("needs a string")

  @transient private lazy val parser = {
    val options =
      new JSONOptions(Map.empty[String, String], timeZone, SQLConf.get.columnNameOfCorruptRecord)
    val raw = new JacksonParser(target, options, allowArrayAsStructs = false, Seq.empty)
    new FailureSafeParser[UTF8String](
      doc => raw.parse(doc, StatsJsonToStruct.overBytes, identity[UTF8String]),
      options.parseMode,
      target,
      options.columnNameOfCorruptRecord
    )
  }

  override protected def nullSafeEval(input: Any): Any = {
    val json = input.asInstanceOf[UTF8String]
    // a blank document is null, as from_json has it; a statistics document starts with `{`, so the
    // test needs no trimmed copy of it (trimAll copies the bytes)
    val blank = json.numBytes() == 0 || json.getByte(0) != '{' && json.trimAll().numBytes() == 0
    if (blank) null
    else {
      val rows = parser.parse(json)
      if (rows.hasNext) rows.next() else null
    }
  }

  override protected def withNewChildInternal(newChild: Expression): StatsJsonToStruct =
    copy(child = newChild)

  override def toString: String = s"stats_json_to_struct($child)"
}

private[deltareplay] object StatsJsonToStruct {

  /**
   * A Jackson parser over a document's UTF-8 bytes (no character decoder), where that reads it as
   * `from_json`'s character reader does; the character reader otherwise.
   */
  val overBytes: (JsonFactory, UTF8String) => JsonParser = (factory, doc) => {
    val bytes = doc.getBytes
    if (readsAsText(bytes, 0, bytes.length)) factory.createParser(bytes, 0, bytes.length)
    else CreateJacksonParser.utf8String(factory, doc)
  }

  /**
   * Whether Jackson's byte parser reads the `length` bytes of `b` from `offset` as UTF-8 text, as a
   * character reader does: it would take a byte-order mark or zero bytes among the first four for
   * another encoding (no statistics document starts so; `from_json` fails on those).
   */
  def readsAsText(b: Array[Byte], offset: Int, length: Int): Boolean = {
    if (length == 0) return true
    val first = b(offset)
    if (first != '{' && first != ' ' && first != '\n' && first != '\r' && first != '\t')
      return false
    var k = offset + 1
    while (k < offset + math.min(length, 4)) { if (b(k) == 0) return false; k += 1 }
    true
  }
}
