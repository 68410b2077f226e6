package io.deltareplay.internal.log

import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.deltareplay.Errors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.hadoop.util.functional.FutureIO
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.internal.Logging
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, StructsToJson}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.{
  ParquetFileFormat,
  ParquetToSparkSchemaConverter
}
import org.apache.spark.sql.sources.{Filter, IsNotNull, Or}
import org.apache.spark.sql.types._

/** A protocol (left) or metaData (right) action. */
private[deltareplay] object ProtocolOrMetadata {
  type T = Either[TableMeta.Protocol, TableMeta.Metadata]
}

/**
 * Reads log files on the driver without a Spark job: JSON commits line by line, checkpoint Parquet
 * through Spark's own Parquet reader called in-process. Used for protocol/metadata loading, the
 * local replay, and the commit tail of the distributed fast path.
 */
private[deltareplay] class LogReader(
    val spark: SparkSession,
    segment: LogSegment,
    val settings: LogSettings
) extends Logging {
  private val hadoopConf: Configuration = {
    val c = spark.sessionState.newHadoopConf()
    ParquetConf.copyFlags(settings.sparkSettings.sql, c)
    c
  }
  private val mapper = new ObjectMapper()
  private def table = segment.table

  /**
   * The non-blank lines of a JSON log file. Commits come through [[CommitTexts]], so the snapshot
   * load and the index roll-forward of one query read a new commit once. The file is opened with
   * its listed status: on an object store that saves the HEAD request an open by path makes.
   */
  private def readText(file: FileStatus): Seq[String] = {
    def read(): Array[Byte] = {
      val fs = file.getPath.getFileSystem(hadoopConf)
      val in = FutureIO.awaitFuture( // its IOException unwrapped, as an open by path throws it
        fs.openFile(file.getPath)
          .withFileStatus(file)
          .opt("fs.option.openfile.read.policy", "whole-file")
          .build()
      )
      try in.readAllBytes()
      finally in.close()
    }
    val bytes =
      try
        if (LogFiles.parse(file.getPath.getName).exists(_.isInstanceOf[LogFiles.Commit])) {
          CommitTexts.bytes(spark, file, settings)(read())
        } else read()
      catch {
        case NonFatal(e) => throw Errors.corruptLogFile(table, file.getPath.toString, e)
      }
    new String(bytes, StandardCharsets.UTF_8).split('\n').toSeq.filter(_.trim.nonEmpty)
  }

  /**
   * The lines of each of `files`, in order, read a few at a time ahead
   * ([[ReadAhead.forFilesUnder]]: on a local disk one after another).
   */
  private def readTexts(files: Seq[FileStatus]): Iterator[(FileStatus, Seq[String])] =
    files.headOption.fold(Iterator.empty[(FileStatus, Seq[String])]) { first =>
      ReadAhead.forFilesUnder(first.getPath, files, (f: FileStatus) => f.getLen)(f =>
        f -> readText(f)
      )
    }

  private def parseLine(file: FileStatus, line: String): JsonNode =
    try mapper.readTree(line)
    catch { case NonFatal(e) => throw Errors.corruptLogFile(table, file.getPath.toString, e) }

  // ---------------------------------------------------------------- protocol and metadata

  /**
   * The newest protocol and metaData: the version's checksum file when it has one, else the commits
   * newest first, then the checkpoint.
   */
  def tableMeta(): TableMeta = checksumMeta().getOrElse {
    val fromCommits = newestInCommits(segment.commits)
    val found =
      if (fromCommits.complete) fromCommits
      else checkpointProtocolAndMetadata().reverse.foldLeft(fromCommits)(_ offer _)
    found.meta.getOrElse(throw Errors.noProtocolOrMetadata(table, segment.version))
  }

  /**
   * Protocol and metadata as the segment's version checksum file records them
   * ([[LogSegment.checksum]], `spark.deltareplay.replay.useChecksum`): one small read in place of
   * the commits after the checkpoint and the checkpoint's protocol and metaData columns, as Delta
   * Kernel loads a snapshot. Writers write it after the commit and never change it (PROTOCOL.md,
   * "Version Checksum File"); a reader must not depend on it, so one that cannot be read or parsed,
   * or lacks either action, is passed over (logged) like a missing one.
   *
   * Only for a segment whose commits after the checkpoint the replay reconciles on the driver (the
   * fast path, by the session's `replay.tailFastPathMaxBytes`): a commit the load no longer reads
   * is then still read before any answer, by a reader that names it when it is corrupt. Without a
   * checkpoint, or with a longer tail (read as a Spark job), the load reads the commits as before.
   */
  private def checksumMeta(): Option[TableMeta] =
    segment.checksum
      .filter { _ =>
        settings.useChecksum && segment.tailWithin(settings.tailFastPathMaxBytes)
      }
      .flatMap { file =>
        try TableMeta.fromChecksum(readText(file).mkString("\n"))
        catch {
          case NonFatal(e) =>
            logWarning(s"version checksum ${file.getPath} of $table not used, reading the log: $e")
            None
        }
      }

  /**
   * The newest protocol and metaData actions of `commits` (ascending), read newest first until both
   * are found.
   */
  def newestInCommits(commits: Seq[FileStatus]): LogReader.Newest = {
    var found = LogReader.Newest(None, None)
    val newestFirst = readTexts(commits.reverse)
    while (!found.complete && newestFirst.hasNext) {
      val (file, lines) = newestFirst.next()
      // Newest action wins within a commit too: walk its lines backwards.
      lines.reverseIterator.foreach { line =>
        if (line.contains("\"protocol\"") || line.contains("\"metaData\"")) {
          parseLine(file, line) // validates the JSON, naming the file when it is broken
          parseProtocolOrMetadataSafely(file, line).foreach(a => found = found.offer(a))
        }
      }
    }
    found
  }

  private def parseProtocolOrMetadataSafely(
      file: FileStatus,
      line: String
  ): Option[ProtocolOrMetadata.T] =
    try TableMeta.parse(line)
    catch {
      case NonFatal(e) => throw Errors.malformedAction(table, file.getPath.toString, e)
    }

  private def checkpointProtocolAndMetadata(): Seq[ProtocolOrMetadata.T] =
    segment.checkpoint.flatMap { file =>
      if (file.getPath.getName.endsWith(".json")) {
        readText(file).flatMap(line => parseProtocolOrMetadataSafely(file, line))
      } else {
        val fileSchema = footerSchema(file)
        val wanted = Seq("protocol", "metaData").filter(fileSchema.fieldNames.contains)
        if (wanted.isEmpty) Nil
        else {
          val schema = StructType(wanted.map(fileSchema(_)))
          val toJson = wanted.indices.map { i =>
            StructsToJson(
              Map.empty[String, String],
              BoundReference(i, schema(i).dataType, true),
              Some("UTC")
            )
          }
          // Only the row groups that hold a protocol or metaData action are decoded.
          val present = wanted.map {
            case "protocol" => IsNotNull("protocol.minReaderVersion")
            case _ => IsNotNull("metaData.id")
          }
          readParquet(file, schema, Seq(present.reduce[Filter](Or))) { row =>
            val found = wanted.indices.flatMap { i =>
              if (row.isNullAt(i)) None
              else {
                val json = s"""{"${wanted(i)}":${toJson(i).replacement.eval(row).toString}}"""
                parseProtocolOrMetadataSafely(file, json)
              }
            }
            if (found.isEmpty) None else Some(found)
          }.flatten
        }
      }
    }

  /**
   * [[tableMeta]], after checking that every checkpoint file of the segment can be opened, so that
   * a corrupt checkpoint is found (and skipped) before any replay starts.
   */
  def checkedMeta(): TableMeta = {
    segment.checkpoint.filterNot(_.getPath.getName.endsWith(".json")).foreach(footerSchema)
    tableMeta()
  }

  /** Protocol and metaData actions of the segment's commits, oldest first. */
  def commitProtocolAndMetadata(): Seq[ProtocolOrMetadata.T] =
    readTexts(segment.commits).flatMap { case (file, lines) =>
      lines.flatMap { line =>
        if (line.contains("\"protocol\"") || line.contains("\"metaData\"")) {
          parseLine(file, line)
          parseProtocolOrMetadataSafely(file, line)
        } else None
      }
    }.toSeq

  // ---------------------------------------------------------------- file actions

  /** Adds and removes of the commits after the checkpoint, in log order. */
  def commitActions(needStats: Boolean): Iterator[FileAction.Action] =
    readTexts(segment.commits).flatMap { case (file, lines) =>
      val version = LogFiles.commitVersionOf(file.getPath.getName)
      lines.iterator.flatMap { line =>
        val mentions = line.contains("\"add\"") || line.contains("\"remove\"")
        fileAction(file, line, version, needStats, mentions)
      }
    }

  /**
   * The add or remove of a log line (None for other actions), decoded by [[ActionLine]] where it
   * can and through the tree otherwise (which names `file` when the line is broken). Every line is
   * read whole, so a broken one is found; one that `mentions` no add or remove gives None.
   */
  private def fileAction(
      file: FileStatus,
      line: String,
      version: Long,
      needStats: Boolean,
      mentions: Boolean = true
  ): Option[FileAction.Action] =
    try ActionLine.decode(mapper.getFactory, line, version, needStats).filter(_ => mentions)
    catch {
      case ActionLine.Unusual =>
        val node = parseLine(file, line)
        if (mentions) action(file, FileAction.fromJson(node, version, needStats)) else None
    }

  /** An action decoded from `file`, a path-less action turned into an error naming the file. */
  private def action(file: FileStatus, decode: => Option[FileAction.Action]) =
    try decode
    catch {
      case FileAction.MissingPath(node) =>
        throw Errors.malformedAction(
          table,
          file.getPath.toString,
          s"an action without a path: $node"
        )
    }

  /** Adds and removes of the checkpoint (all parts, and the sidecars of a V2 checkpoint). */
  def checkpointActions(needStats: Boolean): Iterator[FileAction.Action] = {
    val version = segment.checkpointVersion.getOrElse(return Iterator.empty)
    val files = segment.checkpoint ++ sidecars()
    files.iterator.flatMap { file =>
      if (file.getPath.getName.endsWith(".json")) {
        readText(file).iterator.flatMap(l => fileAction(file, l, version, needStats))
      } else {
        val layout = CheckpointLayout.forFile(footerFacts(file), needStats)
        readParquet(file, layout.readSchema)(row => layout.toAction(version, row)).iterator
      }
    }
  }

  /**
   * Sidecar files named by a V2 checkpoint's top-level file (empty for other checkpoints); read
   * once per reader.
   */
  def sidecars(): Seq[FileStatus] = sidecarFiles

  private lazy val sidecarFiles: Seq[FileStatus] = {
    val sidecarDir = new Path(segment.logPath, "_sidecars")
    val names = segment.checkpoint.flatMap { file =>
      if (file.getPath.getName.endsWith(".json")) {
        jsonCheckpointText(file).flatMap { line =>
          val node = parseLine(file, line)
          Option(node.get("sidecar")).map(_.get("path").asText())
        }
      } else if (footerSchema(file).fieldNames.contains("sidecar")) {
        val schema = new StructType().add("sidecar", FileAction.SidecarType)
        readParquet(file, schema, Seq(IsNotNull("sidecar.path"))) { row =>
          if (row.isNullAt(0)) None else Some(row.getStruct(0, 2).getUTF8String(0).toString)
        }
      } else Nil
    }
    names.map { name =>
      val p =
        if (name.contains(":") || name.startsWith("/")) new Path(name)
        else new Path(sidecarDir, name)
      try p.getFileSystem(hadoopConf).getFileStatus(p)
      catch { case NonFatal(e) => throw Errors.corruptLogFile(table, p.toString, e) }
    }
  }

  /**
   * Whether a JSON checkpoint file of the segment may hold adds or removes: not a V2 checkpoint's
   * top-level file whose sidecars hold them all (delta-spark writes it so), which a replay then
   * need not read. A line that mentions either anywhere counts, so the answer is never a wrong no.
   */
  def jsonCheckpointHoldsFileActions(file: FileStatus): Boolean =
    jsonCheckpointText(file).exists(l => l.contains("\"add\"") || l.contains("\"remove\""))

  /** The lines of a JSON checkpoint file, read once per reader. */
  private def jsonCheckpointText(file: FileStatus): Seq[String] =
    jsonCheckpointTexts.computeIfAbsent(file.getPath, _ => readText(file))

  private val jsonCheckpointTexts =
    new java.util.concurrent.ConcurrentHashMap[Path, Seq[String]]()

  /**
   * About how many data files the segment's version has, without replaying: the rows of the
   * checkpoint's Parquet files and sidecars (from their footers; each row holds one action) plus
   * one per 512 bytes of JSON checkpoint and commits. Coarse; it only picks a planning mode.
   */
  def estimatedFiles(): Long = {
    val files = segment.checkpoint ++ (if (segment.checkpointVersion.isDefined) sidecars() else Nil)
    val (json, parquet) = files.partition(_.getPath.getName.endsWith(".json"))
    val fromParquet = parquet.map(footerFacts(_).rows).sum
    fromParquet + (json.map(_.getLen).sum + segment.commitBytes) / 512
  }

  // ---------------------------------------------------------------- Parquet on the driver

  /**
   * What the segment's log is made of, for scan metrics: its checkpoint (kind, files), how the
   * checkpoint holds statistics (typed `stats_parsed`, JSON only, or typed in part: from the
   * footers), the commits after it, and whether a version checksum file gives protocol and
   * metadata.
   */
  def layout(): String = {
    val checkpoint = segment.checkpointVersion.fold("no checkpoint") { v =>
      val files = segment.checkpoint ++ sidecars()
      val (json, parquet) = files.partition(_.getPath.getName.endsWith(".json"))
      val facts = parquet.map(footerFacts)
      val typed = facts.map(_.schema).count { s =>
        s.fields
          .find(_.name == "add")
          .exists(_.dataType match {
            case a: StructType => a.fieldNames.contains("stats_parsed")
            case _ => false
          })
      }
      val stats =
        if (parquet.isEmpty) "statistics as JSON (JSON checkpoint)"
        else if (typed == 0) "statistics as JSON only"
        else if (typed == parquet.size && facts.forall(_.statsParsedInEveryAdd)) "typed statistics"
        else "typed statistics in part"
      val sidecarCount = files.size - segment.checkpoint.size
      val parts =
        if (sidecarCount > 0) s", $sidecarCount sidecars"
        else if (segment.checkpoint.size > 1) s", ${segment.checkpoint.size} parts"
        else ""
      val kind = if (json.nonEmpty && parquet.isEmpty) "JSON " else ""
      s"${segment.checkpointKind} checkpoint v$v$parts ($kind$stats)"
    }
    val checksum = if (segment.checksum.isDefined) "checksum file" else "no checksum file"
    s"$checkpoint + ${segment.commits.size} commits; $checksum"
  }

  def footerSchema(file: FileStatus): StructType = footerFacts(file).schema

  /** The footer facts of a checkpoint Parquet file, read once per file ([[CheckpointFooters]]). */
  def footerFacts(file: FileStatus): FooterFacts =
    CheckpointFooters.facts(spark, file, settings) {
      footer(file) { reader =>
        val meta = reader.getFooter
        FooterFacts(
          meta,
          new ParquetToSparkSchemaConverter(hadoopConf).convert(meta.getFileMetaData.getSchema)
        )
      }
    }

  /**
   * `read` applied to the footer of a Parquet log file; a failure names the file. The read options
   * come from this reader's Hadoop configuration: `ParquetFileReader.open(file)` alone builds a
   * fresh `Configuration`, which parses core-default.xml and core-site.xml off the classpath on
   * every footer read, a cost a re-plan of a small table notices.
   */
  private def footer[T](file: FileStatus)(read: ParquetFileReader => T): T =
    try {
      val reader = ParquetFileReader.open(
        HadoopInputFile.fromStatus(file, hadoopConf),
        HadoopReadOptions.builder(hadoopConf).build()
      )
      try read(reader)
      finally reader.close()
    } catch {
      case NonFatal(e) => throw Errors.corruptLogFile(table, file.getPath.toString, e)
    }

  /**
   * `pick` applied to the rows of one Parquet log file read with `schema`; row groups that
   * `filters` rule out are not decoded (their statistics say so). Rows are views: `pick` copies
   * what it keeps.
   */
  private def readParquet[T](file: FileStatus, schema: StructType, filters: Seq[Filter] = Nil)(
      pick: InternalRow => Option[T]
  ): Seq[T] = {
    val read = new ParquetFileFormat().buildReaderWithPartitionValues(
      spark,
      schema,
      new StructType(),
      schema,
      filters,
      Map("returning_batch" -> "false"),
      hadoopConf
    )
    val pf = PartitionedFile(
      InternalRow.empty,
      SparkPath.fromPath(file.getPath),
      0,
      file.getLen,
      Array.empty,
      file.getModificationTime,
      file.getLen,
      Map.empty
    )
    val out = mutable.ArrayBuffer.empty[T]
    try read(pf).foreach(r => pick(r).foreach(out += _))
    catch { case NonFatal(e) => throw Errors.corruptLogFile(table, file.getPath.toString, e) }
    out.toSeq
  }

}

private[deltareplay] object LogReader {

  /** The newest protocol and metaData actions found so far, reading the log newest first. */
  final case class Newest(
      protocol: Option[TableMeta.Protocol],
      metadata: Option[TableMeta.Metadata]
  ) {
    def complete: Boolean = protocol.isDefined && metadata.isDefined

    /** With `action` unless an action of its kind was found before (that one is newer). */
    def offer(action: ProtocolOrMetadata.T): Newest = action match {
      case Left(p) if protocol.isEmpty => copy(protocol = Some(p))
      case Right(m) if metadata.isEmpty => copy(metadata = Some(m))
      case _ => this
    }

    /** The table's protocol and metadata, when both were found. */
    def meta: Option[TableMeta] = for (p <- protocol; m <- metadata) yield TableMeta(p, m)

    /** `meta` with the actions found here in place of its own. */
    def over(meta: TableMeta): TableMeta =
      metadata.foldLeft(protocol.foldLeft(meta)(_ withProtocol _))(_ withMetadata _)
  }
}
