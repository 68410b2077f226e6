package org.apache.spark.sql.deltareplay

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.DataSourceStrategy
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.sources.Filter

/** Spark APIs that are `private[sql]`, reached from inside Spark's package. Nothing else. */
object SparkBridge {

  /** A Catalyst filter as a data source filter, if it translates. */
  def translateFilter(e: Expression): Option[Filter] =
    DataSourceStrategy.translateFilter(e, supportNestedPredicatePushdown = true)

  /** A Catalyst filter as a V2 predicate, if it translates. */
  def translatePredicate(e: Expression): Option[Predicate] = translateFilter(e).map(_.toV2)
}
