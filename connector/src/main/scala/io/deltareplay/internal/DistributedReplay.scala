package io.deltareplay.internal

import scala.collection.mutable

import org.apache.spark.sql.{Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types.StructType

/**
 * The replay rules of [[Replay]] as a Spark job on the executors.
 *
 * Step 1: read the checkpoint (parts or V2 sidecars) and the commits after it as one DataFrame of
 * adds and removes, each tagged with its version. Step 2: key each row by (canonical path, DV
 * unique id). Step 3, either
 *   - fast path (a checkpoint and a commit tail of at most `tailFastPathMaxBytes`): reconcile the
 *     tail on the driver, broadcast the keys it touched, and keep the checkpoint adds whose key it
 *     did not touch (a broadcast anti join: map-side, no shuffle), plus the tail's winning adds; or
 *   - window path: repartition by key, keep the newest row per key (version desc, add first), drop
 *     keys whose winner is a remove.
 * Step 4: only the columns planning needs (stats only when asked) travel to the driver.
 */
private[deltareplay] class DistributedReplay(
    spark: SparkSession,
    segment: LogSegment,
    conf: ReadConf,
    needStats: Boolean
) {
  private val reader = new LogReader(spark, segment)
  private val tableUri = Replay.tableUri(segment)

  /** (live files, mode label, actions replayed, tasks run). */
  def run(): (Array[LiveFile], String, Long, Int) = {
    val ((files, actions, mode), tasks) =
      DistributedReplay.inJobGroup(
        spark,
        s"delta-replay: replay ${segment.table} v${segment.version}"
      ) {
        if (useFastPath) fastPath() else windowPath()
      }
    (files, mode, actions, tasks)
  }

  /** The label of the path [[run]] or [[liveFrame]] takes. */
  def modeLabel: String =
    if (useFastPath) "distributed (map-side filter)" else "distributed (keyed window)"

  private def useFastPath: Boolean =
    segment.checkpointVersion.isDefined && segment.commitBytes <= conf.tailFastPathMaxBytes

  /** The checkpoint adds the tail did not touch (a DataFrame), and the tail reconciled. */
  private def fastPathParts(): (DataFrame, LocalReplay.Reconciler) = {
    val tail = new LocalReplay.Reconciler(tableUri)
    tail.applyInOrder(reader.commitActions(needStats))
    val touched = {
      val rows = new java.util.ArrayList[Row](tail.winners.size())
      tail.winners.keySet().forEach { case (k, dv) => rows.add(Row(k, dv)) }
      spark.createDataFrame(rows, new StructType().add("key", "string").add("dvKey", "string"))
    }
    val checkpointAdds = keyed(checkpointActions()).where(col("isAdd"))
    val survivors =
      if (tail.winners.isEmpty) checkpointAdds
      else checkpointAdds.join(broadcast(touched), Seq("key", "dvKey"), "left_anti")
    (survivors, tail)
  }

  private def tailLive(tail: LocalReplay.Reconciler): Seq[LiveFile] = {
    val interner = new Replay.Interner
    val out = mutable.ArrayBuffer.empty[LiveFile]
    tail.winners.values().forEach { a =>
      if (a.isAdd) out += a.copy(partitionValues = interner(a.partitionValues)).toLiveFile
    }
    out.toSeq
  }

  private def windowLive(): DataFrame = {
    val all = keyed(checkpointActions().unionByName(commitActions()))
    val partitions =
      if (conf.replayPartitions > 0) conf.replayPartitions
      else spark.sessionState.conf.numShufflePartitions
    val newestFirst = Window.partitionBy("key", "dvKey").orderBy(desc("version"), desc("isAdd"))
    all
      .repartition(partitions, col("key"), col("dvKey"))
      .withColumn("_rank", row_number().over(newestFirst))
      .where(col("_rank") === 1 && col("isAdd"))
  }

  private def fastPath(): (Array[LiveFile], Long, String) = {
    val (survivors, tail) = fastPathParts()
    val (collected, scanned) = collect(survivors)
    (collected ++ tailLive(tail), scanned + tail.count, modeLabel)
  }

  private def windowPath(): (Array[LiveFile], Long, String) = {
    val (files, scanned) = collect(windowLive())
    (files, scanned, modeLabel)
  }

  /**
   * The live files as a DataFrame that stays on the executors (columns path, partitionValues, size,
   * modificationTime, dv, and stats when `withStats`; paths as the log stores them), with the
   * number of commit actions reconciled on the driver to build it (the fast path's tail; 0 on the
   * window path). Rows its log scans read show in [[scannedRows]] of its plan once it has run.
   */
  def liveFrame(withStats: Boolean = false): (DataFrame, Long) = {
    val names = Seq("path", "partitionValues", "size", "modificationTime", "dv") ++
      (if (withStats) Seq("stats") else Nil)
    val columns = names.map(col)
    if (!useFastPath) (windowLive().select(columns: _*), 0L)
    else {
      val (survivors, tail) = fastPathParts()
      val tailRows = tailLive(tail).map { f =>
        val dv = f.dv
          .map(d =>
            Row(
              d.storageType,
              d.pathOrInlineDv,
              d.offset.map(Int.box).orNull,
              d.sizeInBytes,
              d.cardinality
            )
          )
          .orNull
        val values = Seq(f.path, f.partitionValues, f.size, f.modificationTime, dv) ++
          (if (withStats) Seq(f.stats) else Nil)
        Row.fromSeq(values)
      }
      val schema = {
        val base = new StructType()
          .add("path", "string")
          .add("partitionValues", "map<string,string>")
          .add("size", "long")
          .add("modificationTime", "long")
          .add("dv", FileActions.DvType)
        if (withStats) base.add("stats", "string") else base
      }
      val tailFrame = spark.createDataFrame(java.util.Arrays.asList(tailRows: _*), schema)
      (survivors.select(columns: _*).unionByName(tailFrame), tail.count)
    }
  }

  // ------------------------------------------------------------------ step 1 and 2

  private val outputColumns =
    Seq("version", "isAdd", "path", "partitionValues", "size", "modificationTime", "stats", "dv")

  /** Adds and removes of the commits, version from the file name. */
  private def commitActions(): DataFrame = {
    if (segment.commits.isEmpty) return emptyActions()
    val schema = new StructType()
      .add("add", FileActions.AddType)
      .add("remove", FileActions.RemoveType)
    val raw = spark.read
      .schema(schema)
      .option("mode", "FAILFAST")
      .json(segment.commits.map(_.getPath.toString): _*)
    val version = regexp_extract(col("_metadata.file_path"), "(\\d{20})\\.json$", 1).cast("long")
    normalize(raw, version, col("add.stats"))
  }

  /** Adds and removes of the checkpoint parts, or of a V2 checkpoint and its sidecars. */
  private def checkpointActions(): DataFrame = {
    val version = segment.checkpointVersion.getOrElse(return emptyActions())
    val files = segment.checkpoint ++ reader.sidecars()
    val (json, parquet) = files.partition(_.getPath.getName.endsWith(".json"))
    val fromJson = json.map { f =>
      val schema =
        new StructType().add("add", FileActions.AddType).add("remove", FileActions.RemoveType)
      normalize(
        spark.read.schema(schema).option("mode", "FAILFAST").json(f.getPath.toString),
        lit(version),
        col("add.stats")
      )
    }
    // Parquet files with the same footer layout are read together.
    val byLayout = parquet.groupBy(f => CheckpointSchema.forFile(reader.footerSchema(f), needStats))
    val fromParquet = byLayout.map { case (layout, fs) =>
      val raw = spark.read.schema(layout.readSchema).parquet(fs.map(_.getPath.toString): _*)
      val stats =
        if (layout.hasStatsParsed) coalesce(col("add.stats"), to_json(col("add.stats_parsed")))
        else col("add.stats")
      normalize(raw, lit(version), stats)
    }
    (fromJson ++ fromParquet).reduceOption(_ unionByName _).getOrElse(emptyActions())
  }

  private def normalize(raw: DataFrame, version: Column, stats: Column): DataFrame =
    raw
      .where(col("add").isNotNull || col("remove").isNotNull)
      .select(
        version.as("version"),
        col("add").isNotNull.as("isAdd"),
        coalesce(col("add.path"), col("remove.path")).as("path"),
        coalesce(col("add.partitionValues"), col("remove.partitionValues")).as("partitionValues"),
        coalesce(col("add.size"), col("remove.size")).as("size"),
        col("add.modificationTime").as("modificationTime"),
        (if (needStats) stats else lit(null).cast("string")).as("stats"),
        coalesce(col("add.deletionVector"), col("remove.deletionVector")).as("dv")
      )

  private def emptyActions(): DataFrame = {
    val schema = new StructType()
      .add("version", "long")
      .add("isAdd", "boolean")
      .add("path", "string")
      .add("partitionValues", "map<string,string>")
      .add("size", "long")
      .add("modificationTime", "long")
      .add("stats", "string")
      .add("dv", FileActions.DvType)
    spark.createDataFrame(spark.sparkContext.emptyRDD[org.apache.spark.sql.Row], schema)
  }

  /** Adds the replay key columns (rule 1). */
  private def keyed(actions: DataFrame): DataFrame = {
    val absolute = col("path").rlike("^[a-zA-Z][a-zA-Z0-9+.-]*:")
    val key = when(absolute, col("path")).otherwise(concat(lit(tableUri + "/"), col("path")))
    val dv = col("dv")
    val dvKey = when(dv.isNull, lit("")).otherwise(
      concat(
        dv("storageType"),
        dv("pathOrInlineDv"),
        when(dv("offset").isNull, lit("")).otherwise(concat(lit("@"), dv("offset").cast("string")))
      )
    )
    actions.withColumn("key", key).withColumn("dvKey", dvKey)
  }

  // ------------------------------------------------------------------ step 4

  /** Collects the live rows as [[LiveFile]]s; also returns the rows the log scans read. */
  private def collect(live: DataFrame): (Array[LiveFile], Long) = {
    val projected = live.select(outputColumns.drop(2).map(col): _*)
    val qe = projected.queryExecution
    val rows = DistributedReplay.logErrors(segment)(qe.executedPlan.executeCollect())
    val interner = new Replay.Interner
    val files = rows.map(r => toLiveFile(r, interner))
    (files, DistributedReplay.scannedRows(qe.executedPlan))
  }

  private def toLiveFile(r: InternalRow, interner: Replay.Interner): LiveFile =
    LiveFile(
      path = r.getUTF8String(0).toString,
      partitionValues =
        if (r.isNullAt(1)) Map.empty else interner(CheckpointSchema.toMap(r.getMap(1))),
      size = if (r.isNullAt(2)) 0L else r.getLong(2),
      modificationTime = if (r.isNullAt(3)) 0L else r.getLong(3),
      stats = if (r.isNullAt(4)) null else r.getUTF8String(4).toString,
      dv = CheckpointSchema.dv(r, 5)
    )

}

private[deltareplay] object DistributedReplay {

  /** Runs `body` in a fresh delta-replay job group; returns its result and the tasks it ran. */
  def inJobGroup[T](spark: SparkSession, description: String)(body: => T): (T, Int) = {
    val group = Replay.newJobGroup()
    val sc = spark.sparkContext
    val priorGroup = sc.getLocalProperty("spark.jobGroup.id")
    val priorDescription = sc.getLocalProperty("spark.job.description")
    sc.setJobGroup(group, description)
    try {
      val result = body
      val tasks = sc.statusTracker
        .getJobIdsForGroup(group)
        .toSeq
        .flatMap { job =>
          sc.statusTracker.getJobInfo(job).toSeq.flatMap(_.stageIds().toSeq)
        }
        .flatMap(stage => sc.statusTracker.getStageInfo(stage).map(_.numTasks()))
        .sum
      (result, tasks)
    } finally {
      sc.setLocalProperty("spark.jobGroup.id", priorGroup)
      sc.setLocalProperty("spark.job.description", priorDescription)
    }
  }

  /**
   * Runs a job over the log of `segment`, turning a failure into an error that names the log; an
   * error of ours raised in a task (it already names what failed) comes through as it is.
   */
  def logErrors[T](segment: LogSegment)(job: => T): T =
    try job
    catch {
      case e: org.apache.spark.SparkException =>
        ours(e).foreach(own => throw own)
        val range = segment.checkpointVersion.fold("commits")(v => s"checkpoint $v and commits")
        throw Errors.corruptLogFile(
          segment.table,
          s"the log ($range up to ${segment.version})",
          Option(e.getCause).getOrElse(e)
        )
    }

  private def ours(e: Throwable): Option[Errors.DeltaReplayException] =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst { case d: Errors.DeltaReplayException => d }

  /** Rows read by the log scans of an executed plan (their numOutputRows metrics). */
  def scannedRows(plan: SparkPlan): Long = {
    def scans(p: SparkPlan): Seq[FileSourceScanExec] = p match {
      case a: AdaptiveSparkPlanExec => scans(a.executedPlan)
      case q: QueryStageExec => scans(q.plan)
      case s: FileSourceScanExec => Seq(s)
      case other => other.children.flatMap(scans) ++ other.subqueries.flatMap(scans)
    }
    scans(plan).flatMap(_.metrics.get("numOutputRows")).map(_.value).sum
  }
}
