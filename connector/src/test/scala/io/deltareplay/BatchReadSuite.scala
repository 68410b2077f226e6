package io.deltareplay

import io.deltareplay.test.DeltaOracle
import org.scalatest.funsuite.AnyFunSuite

/** Plain shapes of tables, read by this connector and by delta-spark V1 at the same version. */
class BatchReadSuite extends AnyFunSuite with DeltaOracle {

  private def append(path: String, from: Int, to: Int, mode: String = "append"): Unit =
    spark
      .range(from, to)
      .selectExpr("id", "cast(id % 7 as int) as bucket", "concat('name-', id) as name")
      .write
      .format("delta")
      .mode(mode)
      .save(path)

  test("plain appends") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      (0 until 5).foreach(i => append(path, i * 100, (i + 1) * 100))
      assertSameAsV1(path)
      assertLiveFilesMatch(path, latestVersion(path))
    }
  }

  test("overwrite replaces the files") {
    withTempDir { dir =>
      val path = dir.getAbsolutePath + "/t"
      append(path, 0, 100)
      append(path, 100, 200)
      append(path, 500, 550, mode = "overwrite")
      append(path, 600, 610)
      assertSameAsV1(path)
      assertSameAsV1(path, version = Some(1))
      assertLiveFilesMatch(path, 2)
    }
  }
}
