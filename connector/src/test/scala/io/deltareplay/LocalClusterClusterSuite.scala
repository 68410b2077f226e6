package io.deltareplay

import java.lang.management.ManagementFactory

import io.deltareplay.test.LocalClusterSparkSession
import org.scalatest.funsuite.AnyFunSuite

/** Proves that local-cluster tasks run in executor JVMs other than the driver's. */
class LocalClusterClusterSuite extends AnyFunSuite with LocalClusterSparkSession {

  test("tasks run in two executor JVMs, not in the driver") {
    val driverJvm = ManagementFactory.getRuntimeMXBean.getName
    val jvms = spark.sparkContext
      .parallelize(1 to 40, 8)
      .mapPartitions(_ => Iterator(ManagementFactory.getRuntimeMXBean.getName))
      .collect()
      .toSet
    assert(!jvms.contains(driverJvm), s"a task ran in the driver JVM $driverJvm")
    assert(jvms.size === 2, s"expected two executor JVMs, saw $jvms")
  }

  test("executors load delta-spark and this build's classes") {
    def origin(c: Class[_]): String = c.getProtectionDomain.getCodeSource.getLocation.toString
    val driverJvm = ManagementFactory.getRuntimeMXBean.getName
    val ours = origin(classOf[DeltaReplayExtension]) // this build's output, as the driver has it
    val seen = spark.sparkContext
      .parallelize(Seq(1, 2), 2)
      .map { _ =>
        (
          ManagementFactory.getRuntimeMXBean.getName,
          origin(Class.forName("org.apache.spark.sql.delta.actions.AddFile")),
          origin(Class.forName("io.deltareplay.DeltaReplayExtension"))
        )
      }
      .collect()
    seen.foreach { case (jvm, delta, replay) =>
      assert(jvm !== driverJvm, "the task ran in the driver")
      assert(delta.contains("delta-spark"), s"AddFile came from $delta")
      assert(replay === ours, s"the executor loaded this connector from $replay, not $ours")
    }
  }
}
