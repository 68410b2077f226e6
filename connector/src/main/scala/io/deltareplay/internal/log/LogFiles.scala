package io.deltareplay.internal.log

/** Names of the files in `_delta_log`, as Delta's protocol fixes them. */
private[deltareplay] object LogFiles {

  sealed trait LogFile { def version: Long }

  /** `00000000000000000012.json` */
  case class Commit(version: Long) extends LogFile

  /** `...12.checkpoint.parquet` (classic, may also hold a V2 checkpoint). */
  case class SingleCheckpoint(version: Long) extends LogFile

  /** `...12.checkpoint.0000000001.0000000003.parquet` */
  case class PartCheckpoint(version: Long, part: Int, parts: Int) extends LogFile

  /** `...12.checkpoint.<uuid>.json` or `.parquet`: a V2 checkpoint's top-level file. */
  case class V2Checkpoint(version: Long, uuid: String, format: String) extends LogFile

  private val CommitRe = """^(\d{20})\.json$""".r
  private val SingleRe = """^(\d{20})\.checkpoint\.parquet$""".r
  private val PartRe = """^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$""".r
  private val V2Re = """^(\d{20})\.checkpoint\.([^.]+)\.(json|parquet)$""".r
  private val ChecksumRe = """^(\d{20})\.crc$""".r

  /** What a file name in `_delta_log` is, if it takes part in replay. */
  def parse(name: String): Option[LogFile] = name match {
    case CommitRe(v) => Some(Commit(v.toLong))
    case SingleRe(v) => Some(SingleCheckpoint(v.toLong))
    case PartRe(v, p, n) => Some(PartCheckpoint(v.toLong, p.toInt, n.toInt))
    case V2Re(v, uuid, fmt) => Some(V2Checkpoint(v.toLong, uuid, fmt))
    case _ => None
  }

  /** The version of a `00000000000000000012.crc` version checksum file's name. */
  def checksumVersion(name: String): Option[Long] = name match {
    case ChecksumRe(v) => Some(v.toLong)
    case _ => None
  }

  def commitName(version: Long): String = f"$version%020d.json"

  /** The commit version a `_delta_log/NNN.json` path names. */
  def commitVersionOf(path: String): Long = {
    val name = path.substring(path.lastIndexOf('/') + 1)
    name.stripSuffix(".json").toLong
  }
}
