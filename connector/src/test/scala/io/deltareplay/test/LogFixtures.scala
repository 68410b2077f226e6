package io.deltareplay.test

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, StandardOpenOption}

/** Hand-made log files for shapes delta-spark never writes. */
object LogFixtures {

  def logDir(path: String): File = new File(path, "_delta_log")

  def commitFile(path: String, version: Long): File = new File(logDir(path), f"$version%020d.json")

  /** Writes commit `version` with the given JSON action lines. */
  def writeCommit(path: String, version: Long, actions: Seq[String]): Unit =
    Files.write(
      commitFile(path, version).toPath,
      actions.mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8)
    )

  def appendLines(file: File, lines: Seq[String]): Unit =
    Files.write(
      file.toPath,
      lines.mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8),
      StandardOpenOption.APPEND
    )

  def readLines(file: File): Seq[String] =
    new String(Files.readAllBytes(file.toPath), StandardCharsets.UTF_8)
      .split('\n')
      .toSeq
      .filter(_.nonEmpty)

  /** Cuts a file to `keep` of its bytes. */
  def truncate(file: File, keep: Double): Unit = {
    val bytes = Files.readAllBytes(file.toPath)
    Files.write(file.toPath, bytes.take((bytes.length * keep).toInt))
  }

  def commitInfo: String = """{"commitInfo":{"timestamp":1700000000000,"operation":"TEST"}}"""
}
