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
    val names = spark.sparkContext
      .parallelize(Seq(1), 1)
      .map { _ =>
        Class.forName("org.apache.spark.sql.delta.actions.AddFile").getName + "," +
          Class.forName("io.deltareplay.DeltaReplayExtension").getName
      }
      .collect()
    assert(names.head.contains("io.deltareplay.DeltaReplayExtension"))
  }
}
