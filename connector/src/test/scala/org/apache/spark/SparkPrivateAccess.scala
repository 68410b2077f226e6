package org.apache.spark

import org.apache.spark.util.ShutdownHookManager

/** Test access to what Spark keeps private[spark]: the listener bus and its shutdown hooks. */
object SparkPrivateAccess {
  def waitUntilEmpty(sc: SparkContext): Unit = sc.listenerBus.waitUntilEmpty()

  /**
   * Runs `hook` at JVM exit before Spark's own hooks of default priority, among them the
   * local-cluster worker's, which kills its executor processes (the master then reports the
   * application as failed).
   */
  def beforeSparkShutdownHooks(hook: () => Unit): Unit = {
    ShutdownHookManager.addShutdownHook(ShutdownHookManager.DEFAULT_SHUTDOWN_PRIORITY + 10)(hook)
    ()
  }
}
