package org.apache.spark.sql.deltareplay

import org.apache.spark.{QueryContext, SparkRuntimeException}

/**
 * The base of the connector's runtime errors ([[io.deltareplay.DeltaReplayException]]'s corrupt
 * log, missing file, store access and stream errors). It lives in Spark's package only because
 * `SparkRuntimeException` is `private[spark]` in Scala, yet it is the type Spark raises for a read
 * that fails and the one PySpark and Spark Connect map to `pyspark.errors.SparkRuntimeException`.
 *
 * Spark builds such an error's message from its own condition registry, which cannot name the
 * connector's conditions, so the base is built with Spark's generic `INTERNAL_ERROR` template and
 * the subclass overrides every field Spark, PySpark and Spark Connect read: `getCondition`,
 * `getSqlState`, `getMessageParameters`, `getMessage` and `isInternalError`.
 */
abstract class RuntimeErrorBase(text: String, cause: Throwable)
    extends SparkRuntimeException(
      "INTERNAL_ERROR",
      Map("message" -> text),
      cause,
      Array.empty[QueryContext],
      ""
    )
