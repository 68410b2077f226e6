package io.deltareplay.internal.log

import org.apache.spark.sql.catalyst.expressions.UnaryExpression
import org.apache.spark.sql.catalyst.expressions.codegen.{CodeGenerator, CodegenContext, ExprCode}

/**
 * A unary expression of a non-primitive type whose generated code reads its child as generated code
 * does (the row's typed getter) and then calls the expression's own `nullSafeEval` (a null result
 * is a null). Not `CodegenFallback`, which evaluates the child interpreted too: each row's
 * `UnsafeRow.get(i, StringType)` then made Spark 4.2 build a SQL conf of the task
 * (benchmarks/results/2026-12-05-task-conf.notes.md).
 */
private[deltareplay] trait EvalInGeneratedCode extends UnaryExpression {

  /** `nullSafeEval` of a non-null child value (the generated code's call). */
  def evalNonNull(input: Any): Any = nullSafeEval(input)

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val self = ctx.addReferenceObj("expression", this)
    val javaType = CodeGenerator.javaType(dataType)
    nullSafeCodeGen(
      ctx,
      ev,
      value =>
        s"${ev.value} = ($javaType) $self.evalNonNull($value);\n${ev.isNull} = ${ev.value} == null;"
    )
  }
}
