package io.deltareplay.internal.log

import java.io.FileNotFoundException

import scala.util.control.NonFatal

import io.deltareplay.Errors
import io.deltareplay.internal.log.LogFiles._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

/**
 * The log files that reconstruct one version of a table: the newest complete checkpoint at or
 * before it (if any) and every commit after that checkpoint up to the version.
 *
 * @param checkpoint
 *   the checkpoint's files (all parts of a multi-part checkpoint, or the top-level file of a V2
 *   checkpoint; sidecars are found when it is read)
 * @param commits
 *   commit files, ascending, versions `checkpointVersion + 1 .. version`
 * @param checksum
 *   the version checksum file (`version.crc`) of `version`, when the listing had one
 */
private[deltareplay] case class LogSegment(
    tablePath: Path,
    paths: TablePaths,
    version: Long,
    checkpointVersion: Option[Long],
    checkpointKind: String,
    checkpoint: Seq[FileStatus],
    commits: Seq[FileStatus],
    checksum: Option[FileStatus] = None
) {
  def logPath: Path = LogSegment.logDir(tablePath)
  def checkpointBytes: Long = checkpoint.map(_.getLen).sum
  def commitBytes: Long = commits.map(_.getLen).sum
  def totalBytes: Long = checkpointBytes + commitBytes

  /** A checkpoint and commits after it of at most `maxBytes`: a tail reconciled on the driver. */
  def tailWithin(maxBytes: Long): Boolean = checkpointVersion.isDefined && commitBytes <= maxBytes
  def table: String = tablePath.toString

  /** The segment of the commits `commits` alone (ascending), with no checkpoint. */
  def onlyCommits(commits: Seq[FileStatus], version: Long = this.version): LogSegment =
    copy(
      version = version,
      checkpointVersion = None,
      checkpointKind = "none",
      checkpoint = Nil,
      commits = commits,
      checksum = checksum.filter(_ => version == this.version)
    )

  def describe: String = {
    val ckpt = checkpointVersion.fold("no checkpoint")(v => s"$checkpointKind checkpoint $v")
    s"$ckpt + ${commits.size} commits"
  }
}

private[deltareplay] object LogSegment {

  /** The `_delta_log` directory of the table at `tablePath`. */
  def logDir(tablePath: Path): Path = new Path(tablePath, "_delta_log")

  /** All that one listing of `_delta_log` tells: commit files and complete checkpoints. */
  case class Listing(
      tablePath: Path,
      paths: TablePaths,
      commits: Map[Long, FileStatus],
      checkpoints: Map[Long, (String, Seq[FileStatus])],
      checksums: Map[Long, FileStatus] = Map.empty
  ) {
    def latestVersion: Long =
      (commits.keys ++ checkpoints.keys).max

    /** Versions that can be reconstructed start here (None: none can). */
    def earliestReadable: Option[Long] = {
      val fromZero = if (commits.contains(0L)) Some(0L) else None
      (checkpoints.keys ++ fromZero).minOption
    }
  }

  /** Lists `_delta_log` once. Fails naming the table if it is not a Delta table. */
  def list(tablePath: Path, hadoopConf: Configuration): Listing =
    listed(tablePath, hadoopConf, fs => fs.listStatus(logDir(tablePath)).toSeq)

  /**
   * A listing of `_delta_log` from checkpoint version `checkpoint` on: that checkpoint, the commits
   * after it and every file of a later version, which is all a newest version read from a
   * checkpoint at or after it needs (on S3 one LIST of those few keys instead of every file the log
   * keeps). Older checkpoints and commits are not in it: a caller that cannot load the newest
   * version from it (a checkpoint unreadable, a commit missing) lists the whole log.
   */
  def listFrom(tablePath: Path, checkpoint: Long, hadoopConf: Configuration): Listing = {
    // after the commit before it: the checkpoint's files sort after that name, as do its commit,
    // its checksum and every file of a later version
    val after = if (checkpoint == 0) "" else LogFiles.commitName(checkpoint - 1)
    listed(tablePath, hadoopConf, fs => listAfter(fs, logDir(tablePath), after))
  }

  /**
   * The listing of the log files `list` gives, its store failures named for `tablePath`. Fails
   * naming the table if it is not a Delta table.
   */
  private def listed(
      tablePath: Path,
      hadoopConf: Configuration,
      list: FileSystem => Seq[FileStatus]
  ): Listing = {
    val fs = logDir(tablePath).getFileSystem(hadoopConf)
    val statuses =
      try list(fs)
      catch {
        case e: java.io.IOException =>
          Errors.storeFailure(tablePath.toString, tablePath.toString, e) match {
            case Some(storeError) => throw storeError
            case None if e.isInstanceOf[FileNotFoundException] => Nil
            case None => throw e
          }
      }
    val (commits, checkpoints, checksums) = parse(statuses)
    if (commits.isEmpty && checkpoints.isEmpty) throw Errors.notADeltaTable(tablePath.toString)
    Listing(
      tablePath,
      TablePaths(tablePath, FileSystem.getDefaultUri(hadoopConf)),
      commits,
      checkpoints,
      checksums
    )
  }

  /**
   * The files of `dir` whose names sort after `name`: on S3 one LIST of just those ([[S3Listing]]),
   * elsewhere the whole directory, filtered.
   */
  private def listAfter(fs: FileSystem, dir: Path, name: String): Seq[FileStatus] = {
    val fromS3 = if (fs.getScheme == "s3a") S3Listing.after(fs, dir, name) else None
    fromS3.getOrElse(fs.listStatus(dir).toSeq.filter(_.getPath.getName > name))
  }

  /** The commits, complete checkpoints and checksums among listed log files, by version. */
  private def parse(statuses: Seq[FileStatus]): (
      Map[Long, FileStatus],
      Map[Long, (String, Seq[FileStatus])],
      Map[Long, FileStatus]
  ) = {
    val parsed = statuses.flatMap(s => LogFiles.parse(s.getPath.getName).map(_ -> s))
    val commits = parsed.collect { case (Commit(v), s) => v -> s }.toMap
    val byVersion = parsed
      .collect { case (f, s) if !f.isInstanceOf[Commit] => (f, s) }
      .groupBy(_._1.version)
    val checkpoints = byVersion.flatMap { case (v, files) => complete(files).map(v -> _) }
    val checksums =
      statuses.flatMap(s => LogFiles.checksumVersion(s.getPath.getName).map(_ -> s)).toMap
    (commits, checkpoints, checksums)
  }

  /**
   * The complete checkpoint among the files of one version, preferring V2, then classic, then the
   * multi-part set with every part present (an incomplete set is ignored, as Delta does).
   */
  private def complete(files: Seq[(LogFile, FileStatus)]): Option[(String, Seq[FileStatus])] = {
    val v2 = files.collect { case (c: V2Checkpoint, s) => (c, s) }.sortBy(_._1.uuid).headOption
    val single = files.collectFirst { case (_: SingleCheckpoint, s) => s }
    val parts = files.collect { case (p: PartCheckpoint, s) => (p, s) }
    val multi = parts.groupBy(_._1.parts).collect {
      case (n, ps) if ps.map(_._1.part).toSet == (1 to n).toSet =>
        ps.sortBy(_._1.part).map(_._2)
    }
    v2.map(x => ("v2", Seq(x._2)))
      .orElse(single.map(s => ("classic", Seq(s))))
      .orElse(multi.headOption.map(ps => ("multi-part", ps)))
  }

  /**
   * The segment for `version` (None: the newest), from the newest complete checkpoint at or before
   * it, skipping `excludedCheckpoints` (checkpoints found unreadable). Where no checkpoint serves,
   * replay starts at commit 0. Fails, never guesses, when commits are missing.
   */
  def forVersion(
      listing: Listing,
      version: Option[Long],
      excludedCheckpoints: Set[Long] = Set.empty
  ): LogSegment = {
    val table = listing.tablePath.toString
    val latest = listing.latestVersion
    val target = version.getOrElse(latest)
    if (target > latest) throw Errors.versionDoesNotExist(table, target, latest)
    if (target < 0) throw Errors.versionNotReconstructable(table, target, listing.earliestReadable)
    val usable = listing.checkpoints.keys.filter(v => v <= target && !excludedCheckpoints(v))
    // A checkpoint serves only if every commit after it up to the target is present.
    val candidates = usable.toSeq.sorted.reverse.map(Some(_)) :+ None
    val chosen = candidates.find { start =>
      val first = start.map(_ + 1).getOrElse(0L)
      (first to target).forall(listing.commits.contains)
    }
    chosen match {
      case Some(start) =>
        val first = start.map(_ + 1).getOrElse(0L)
        LogSegment(
          tablePath = listing.tablePath,
          paths = listing.paths,
          version = target,
          checkpointVersion = start,
          checkpointKind = start.map(v => listing.checkpoints(v)._1).getOrElse("none"),
          checkpoint = start.map(v => listing.checkpoints(v)._2).getOrElse(Nil),
          commits = (first to target).map(listing.commits),
          checksum = listing.checksums.get(target)
        )
      case None =>
        val newestStart = usable.maxOption
        val first = newestStart.map(_ + 1).getOrElse(0L)
        val missing = (first to target).find(v => !listing.commits.contains(v))
        (newestStart, missing) match {
          case (None, _) if !listing.commits.contains(0L) =>
            throw Errors.versionNotReconstructable(table, target, listing.earliestReadable)
          case (_, Some(m)) => throw Errors.missingCommit(table, m, first, target)
          case _ => throw Errors.versionNotReconstructable(table, target, listing.earliestReadable)
        }
    }
  }

  /** Lists and picks the segment in one go. */
  def load(tablePath: Path, version: Option[Long], hadoopConf: Configuration): LogSegment =
    try forVersion(list(tablePath, hadoopConf), version)
    catch {
      case e: Errors.DeltaReplayException => throw e
      case NonFatal(e) => throw Errors.corruptLogFile(tablePath.toString, "_delta_log", e)
    }
}
