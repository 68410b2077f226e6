package io.deltareplay.test

import java.net.URI
import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermissions

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{
  ChecksumFs,
  DelegateToFileSystem,
  FileStatus,
  LocalFileSystem,
  Path,
  RawLocalFileSystem
}
import org.apache.hadoop.fs.permission.FsPermission

/**
 * Hadoop's local file system for the test JVMs, without a child process per file. Without Hadoop's
 * native library (pyspark ships none) `RawLocalFileSystem` runs `chmod` for every file it creates
 * and every directory it makes, and `readlink` for every link status (each FileContext rename, so
 * each delta-spark commit): a process started from the test JVM each time, thousands a suite. This
 * one sets permissions and reads link status through java.nio instead; files, permissions and
 * statuses are the same. Set for the test sessions' `file:` scheme by [[SparkSessions]] (both the
 * FileSystem and the FileContext API, which delta-spark's log store writes commits with); users'
 * sessions keep Hadoop's.
 */
class NoForkRawLocalFileSystem extends RawLocalFileSystem {
  override def setPermission(p: Path, permission: FsPermission): Unit = {
    val symbols =
      Seq(permission.getUserAction, permission.getGroupAction, permission.getOtherAction)
    val mode = PosixFilePermissions.fromString(symbols.map(_.SYMBOL).mkString)
    Files.setPosixFilePermissions(pathToFile(p).toPath, mode)
  }

  override def getFileLinkStatus(f: Path): FileStatus =
    if (Files.isSymbolicLink(pathToFile(f).toPath)) super.getFileLinkStatus(f)
    else getFileStatus(f)
}

/** [[NoForkRawLocalFileSystem]] with checksums: the `fs.file.impl` of the test sessions. */
class NoForkLocalFileSystem extends LocalFileSystem(new NoForkRawLocalFileSystem)

/** [[NoForkRawLocalFileSystem]] behind FileContext: `fs.AbstractFileSystem.file.impl`. */
class NoForkLocalFs(uri: URI, conf: Configuration)
    extends ChecksumFs(new NoForkRawLocalFs(uri, conf))

private class NoForkRawLocalFs(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new NoForkRawLocalFileSystem, conf, "file", false) {
  override def getUriDefaultPort(): Int = -1
  // as Hadoop's RawLocalFs: FileContext qualifies a link's target itself
  override def getFileLinkStatus(f: Path): FileStatus = {
    val status = fsImpl.getFileLinkStatus(f)
    if (status.isSymlink) status.setSymlink(fsImpl.getLinkTarget(f))
    status
  }
  override def isValidName(src: String): Boolean = true
}

object NoForkLocalFileSystem {

  /** The session settings that put these classes behind `file:` paths. */
  val sessionConf: Map[String, String] = Map(
    "spark.hadoop.fs.file.impl" -> classOf[NoForkLocalFileSystem].getName,
    "spark.hadoop.fs.AbstractFileSystem.file.impl" -> classOf[NoForkLocalFs].getName
  )
}
