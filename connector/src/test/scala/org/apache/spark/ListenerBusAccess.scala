package org.apache.spark

/** Test access to `SparkContext.listenerBus` (private[spark]). */
object ListenerBusAccess {
  def waitUntilEmpty(sc: SparkContext): Unit = sc.listenerBus.waitUntilEmpty()
}
