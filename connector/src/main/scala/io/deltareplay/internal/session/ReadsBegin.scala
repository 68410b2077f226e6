package io.deltareplay.internal.session

import org.apache.spark.sql.SparkSession

/**
 * A foreground read begins: its table's snapshot loads (in `log`), before its query is planned and
 * run. Work that should give way to it (`index`'s background builds) registers here when it first
 * exists, so the room that loads snapshots need not know the rooms above it. JVM-wide, like the
 * work it signals: a handler is added once per JVM and kept.
 */
private[deltareplay] object ReadsBegin {
  @volatile private var handlers: List[SparkSession => Unit] = Nil

  def register(handler: SparkSession => Unit): Unit = synchronized(handlers ::= handler)

  /** Tells every handler that a foreground read of `spark` begins. */
  def signal(spark: SparkSession): Unit = handlers.foreach(_(spark))
}
