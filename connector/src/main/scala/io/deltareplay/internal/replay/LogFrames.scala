package io.deltareplay.internal.replay

import io.deltareplay.internal.log.{CheckpointLayout, FileAction, FileEntry, LogReader, LogSegment}
import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat
import org.apache.spark.sql.execution.datasources.parquet.RowSplitParquetFormat
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types.{StringType, StructType}

/**
 * Step 1 of [[DistributedReplay]]: a log segment's adds and removes as DataFrames of
 * [[FileAction.Schema]], each tagged with its version: the commits (version from the file name) and
 * the checkpoint (its parts, or a V2 checkpoint and its sidecars), the latter optionally through a
 * [[CheckpointFilter]] pushed into Parquet or read in two passes ([[CheckpointSelect]]). Log files
 * are read as exactly the listed files, never following `ignoreCorruptFiles` / `ignoreMissingFiles`
 * (a skipped log file would be a silently wrong answer). With `statsParsed` (the entry's statistics
 * type, when they are wanted typed), the frames also carry [[FileEntry.StatsParsedColumn]]: a
 * checkpoint's `stats_parsed` aligned to it, else null; `countOnly` (a count's entries,
 * [[FileEntry.countOnly]]): only `stats_parsed.numRecords` is read, the rest aligns to null.
 */
private[replay] final class LogFrames(
    spark: SparkSession,
    segment: LogSegment,
    reader: LogReader,
    conf: ReplaySettings,
    needStats: Boolean,
    statsParsed: Option[StructType],
    countOnly: Boolean = false
) {

  /**
   * Rows of checkpoint files read in two passes ([[CheckpointSelect]]): rows whose filter columns
   * the first pass read, and rows decoded whole.
   */
  lazy val selectedRead = spark.sparkContext.longAccumulator("delta-replay: rows filtered")
  lazy val selectedDecoded =
    spark.sparkContext.longAccumulator("delta-replay: rows decoded")

  /**
   * The checkpoint's files (its parts, or a V2 checkpoint and its sidecars, named once): the JSON
   * ones that may hold adds or removes (a V2 top-level file whose sidecars hold them all adds
   * nothing, and would send a narrowed read of [[DistributedReplay]] to a DataFrame), and the
   * Parquet ones by footer layout (read together).
   */
  lazy val (checkpointJson, checkpointByLayout) = {
    val (json, parquet) =
      (segment.checkpoint ++ reader.sidecars()).partition(_.getPath.getName.endsWith(".json"))
    val byLayout =
      parquet.groupBy(f => CheckpointLayout.forFile(reader.footerFacts(f), needStats, countOnly))
    (json.filter(reader.jsonCheckpointHoldsFileActions), byLayout)
  }

  /** Log files read exactly (no globbing, no file skipped); Parquet split by rows, not groups. */
  private def read(format: String, schema: StructType, files: Seq[FileStatus]): DataFrame = {
    val strict = Map("ignoreCorruptFiles" -> "false", "ignoreMissingFiles" -> "false")
    val (fileFormat, options) = format match {
      case "json" => (new JsonFileFormat, strict + ("mode" -> "FAILFAST"))
      case _ =>
        (new RowSplitParquetFormat(conf.checkpointRowSplits, conf.log.sparkSettings.sql), strict)
    }
    SparkBridge.readFiles(spark, fileFormat, schema, files, options)
  }

  /** Adds and removes of the commits, version from the file name. */
  def commitActions(): DataFrame = {
    if (segment.commits.isEmpty) return emptyActions()
    val raw = read("json", FileAction.LogSchema, segment.commits)
    val version = regexp_extract(col("_metadata.file_path"), "(\\d{20})\\.json$", 1).cast("long")
    normalize(raw, version, col("add.stats"))
  }

  /**
   * Adds and removes of the checkpoint parts, or of a V2 checkpoint and its sidecars; with
   * `filter`, only the adds it may keep (and whatever else it lets through), read with it pushed
   * into Parquet.
   */
  def checkpointActions(filter: Option[CheckpointFilter] = None): DataFrame = {
    val version = segment.checkpointVersion.getOrElse(return emptyActions())
    val json = checkpointJson
    val fromJson =
      if (json.isEmpty) Nil
      else {
        val raw = filtered(read("json", FileAction.LogSchema, json), FileAction.AddType, filter)
        Seq(normalize(raw, lit(version), col("add.stats")))
      }
    val fromParquet = checkpointByLayout.map { case (layout, fs) =>
      val parsedField = s"add.${CheckpointLayout.StatsParsedField}"
      // adds only; their JSON statistics only where a row may lack the typed ones
      val fields = layout.addFields(needStats, statsParsed)
      val twoPass =
        if (conf.checkpointTwoPass) filter.flatMap(_.column(fields, layout.statsParsedInEveryAdd))
        else None
      val raw = twoPass match {
        case Some(f) =>
          // the filter over the fields the selection reads: a statistic only the left-out JSON
          // holds is unknown there (may match)
          CheckpointSelect
            .select(spark, fs, fields, f, conf, selectedRead, selectedDecoded)
            .frame(spark)
            .where(f)
            .select(col("add"), lit(null).cast(FileAction.RemoveType).as("remove"))
        case _ =>
          filtered(
            read("parquet", layout.readSchema, fs),
            layout.addType,
            filter,
            layout.statsParsedInEveryAdd
          )
      }
      (layout.hasStatsParsed, statsParsed) match {
        case (true, Some(target)) =>
          // typed statistics as they are: no JSON written or parsed
          val parsedType = layout
            .readSchema("add")
            .dataType
            .asInstanceOf[StructType]
            .apply(CheckpointLayout.StatsParsedField)
            .dataType
          val aligned = SparkBridge.column(
            FileEntry.align(SparkBridge.expression(col(parsedField)), parsedType, target)
          )
          // the JSON only where a row has no typed statistics; not read when none lacks them
          val json =
            if (layout.statsParsedInEveryAdd) lit(null).cast(StringType)
            else when(aligned.isNull, col("add.stats"))
          normalize(raw, lit(version), json, aligned)
        case (true, None) =>
          normalize(raw, lit(version), coalesce(col("add.stats"), to_json(col(parsedField))))
        case _ => normalize(raw, lit(version), col("add.stats"))
      }
    }
    (fromJson ++ fromParquet).reduceOption(_ unionByName _).getOrElse(emptyActions())
  }

  private def filtered(
      raw: DataFrame,
      addType: StructType,
      filter: Option[CheckpointFilter],
      parsedInEveryAdd: Boolean = false
  ): DataFrame =
    filter.flatMap(_.column(addType, parsedInEveryAdd)).fold(raw)(raw.where)

  private def normalize(
      raw: DataFrame,
      version: Column,
      stats: Column,
      parsed: Column = null
  ): DataFrame = {
    val typed = statsParsed.map { t =>
      (if (parsed == null) lit(null).cast(t) else parsed).as(FileEntry.StatsParsedColumn)
    }
    raw
      .where(FileAction.isFileAction)
      .select(FileAction.columns(version, stats, needStats) ++ typed: _*)
  }

  private def emptyActions(): DataFrame =
    spark.createDataFrame(
      spark.sparkContext.emptyRDD[Row],
      statsParsed.fold(FileAction.Schema)(t =>
        FileAction.Schema.add(FileEntry.StatsParsedColumn, t)
      )
    )
}

private[deltareplay] object LogFrames {

  /** Rows read by the log scans of an executed plan (their numOutputRows metrics). */
  def scannedRows(plan: SparkPlan): Long = {
    def scans(p: SparkPlan): Seq[FileSourceScanExec] = p match {
      case a: AdaptiveSparkPlanExec => scans(a.executedPlan)
      case q: QueryStageExec => scans(q.plan)
      case s: FileSourceScanExec => Seq(s)
      case other => other.children.flatMap(scans) ++ other.subqueries.flatMap(scans)
    }
    // a log file read twice in one plan (the tail, windowed and broadcast as keys) counts once
    scans(plan)
      .groupBy(_.relation.location.inputFiles.toSeq.sorted)
      .values
      .map(_.flatMap(_.metrics.get("numOutputRows")).map(_.value).foldLeft(0L)(math.max))
      .sum
  }
}
