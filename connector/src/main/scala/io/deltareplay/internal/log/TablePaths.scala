package io.deltareplay.internal.log

import java.net.URI

import org.apache.hadoop.fs.Path
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

/**
 * How the `path` of an add or remove action names a file, resolved exactly as delta-spark resolves
 * it. The log stores either a path relative to the table root (URL-encoded) or an absolute URI,
 * with or without a scheme.
 *
 *   - [[key]]: the path part of the replay key. delta-spark's canonical form: the URI normalised by
 *     Hadoop's `Path`; an absolute path without scheme and authority is qualified with the default
 *     file system; a relative path stays relative (so a relative and an absolute path to the same
 *     file are two keys, as in delta-spark and Delta Kernel).
 *   - [[absolute]]: the file to read, as a URL-encoded URI string (what `SparkPath.fromUrlString`
 *     takes and `input_file_name()` shows): the key resolved against the table root.
 *
 * Both have a fast path for the common case (a plain relative path such as
 * `p=1/part-00000-....parquet`), which gives the same string as the general rule; `TablePathsSuite`
 * checks that on generated paths. Plain values: serializable, built on the driver.
 *
 * @param root
 *   the table root as a qualified URI string without trailing slash (`file:/data/t`)
 * @param defaultFs
 *   the default file system's URI (`fs.defaultFS`)
 */
private[deltareplay] final case class TablePaths(root: String, defaultFs: String) {
  @transient private lazy val rootPath = new Path(new URI(root))
  @transient private lazy val defaultUri = new URI(defaultFs)

  /**
   * What a child path resolved against the root starts with (`file:///t` resolves to `file:/t/`).
   */
  @transient private lazy val childPrefix: String = {
    val probe = new Path(rootPath, "x").toUri.toString
    probe.substring(0, probe.length - 1)
  }

  /** The replay key's path for a log path (delta-spark's canonical path). */
  def key(logPath: String): String =
    if (TablePaths.isPlainRelative(logPath)) logPath
    else {
      val p = TablePaths.parse(logPath)
      val canonical =
        if (p.isAbsoluteAndSchemeAuthorityNull) p.makeQualified(defaultUri, rootPath) else p
      canonical.toUri.toString
    }

  /**
   * [[key]] of a log path as a row holds it: a plain relative path is its own key and comes back as
   * the same object (no string made; copy it to keep it beyond the row), any other is resolved.
   */
  def key(logPath: UTF8String): UTF8String =
    if (TablePaths.isPlainRelative(logPath)) logPath
    else UTF8String.fromString(key(logPath.toString))

  /** The file a log path names, as a URL-encoded absolute URI string. */
  def absolute(logPath: String): String =
    // a plain relative path is its own key (one check, not two: this runs once per planned file)
    if (TablePaths.isPlainRelative(logPath)) childPrefix + logPath
    else absoluteOfKey(key(logPath))

  private def absoluteOfKey(k: String): String =
    if (TablePaths.isPlainRelative(k)) childPrefix + k
    else {
      val p = TablePaths.parse(k)
      (if (p.isAbsolute) p else new Path(rootPath, p)).toUri.toString
    }
}

private[deltareplay] object TablePaths {

  /** The paths of the table rooted at `tablePath` (qualified), with this default file system. */
  def apply(tablePath: Path, defaultFs: URI): TablePaths =
    TablePaths(tablePath.toUri.toString.stripSuffix("/"), defaultFs.toString)

  private def parse(logPath: String): Path =
    try new Path(new URI(logPath))
    catch {
      case e: java.net.URISyntaxException =>
        throw new IllegalArgumentException(s"not a valid URI path: $logPath (${e.getMessage})", e)
    }

  /**
   * Whether `p` is a relative path that URI parsing and Hadoop's `Path` leave exactly as it is:
   * only letters, digits and `-_.=/`, no empty, `.` or `..` segment, no leading or trailing slash.
   * (A character above ASCII is never plain, so chars and UTF-8 bytes give the same answer.)
   */
  def isPlainRelative(p: String): Boolean = plain(p.length, p.charAt(_).toInt)

  /** [[isPlainRelative]] of a path held as UTF-8 (a row's string): its bytes read in place. */
  def isPlainRelative(p: UTF8String): Boolean = {
    val base = p.getBaseObject
    val offset = p.getBaseOffset
    plain(p.numBytes(), i => Platform.getByte(base, offset + i).toInt)
  }

  /** The rule of [[isPlainRelative]] over the `n` characters (or UTF-8 bytes) `at` gives. */
  private def plain(n: Int, at: Int => Int): Boolean = {
    if (n == 0 || at(0) == '/' || at(n - 1) == '/') return false
    var i = 0
    var segmentStart = 0
    while (i <= n) {
      if (i == n || at(i) == '/') {
        val len = i - segmentStart
        if (len == 0) return false
        if (at(segmentStart) == '.' && (len == 1 || (len == 2 && at(i - 1) == '.'))) {
          return false
        }
        segmentStart = i + 1
      } else {
        val c = at(i)
        val ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '-' || c == '_' || c == '.' || c == '='
        if (!ok) return false
      }
      i += 1
    }
    true
  }
}
