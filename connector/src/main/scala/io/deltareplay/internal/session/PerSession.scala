package io.deltareplay.internal.session

import org.apache.spark.sql.SparkSession

/**
 * One value per SparkSession, made on first use and dropped with the session (weakly held): the
 * state the session-scoped caches ([[IndexCache]], [[MetaCache]]) keep.
 */
private[internal] final class PerSession[T <: AnyRef](make: () => T) {
  private val values = new java.util.WeakHashMap[SparkSession, T]()

  /** This session's value, made now if it has none. */
  def apply(spark: SparkSession): T =
    values.synchronized(values.computeIfAbsent(spark, _ => make()))

  /** Takes this session's value away (the next use makes a new one). */
  def remove(spark: SparkSession): Option[T] = values.synchronized(Option(values.remove(spark)))
}
