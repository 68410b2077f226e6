package io.deltareplay.internal.scan

import java.util
import java.util.Locale

import scala.jdk.CollectionConverters._

import io.deltareplay.Errors
import io.deltareplay.internal.delta.DeltaAdapter
import io.deltareplay.internal.log.{TableMeta, TableSnapshot}
import io.deltareplay.internal.read.FileMetadata
import org.apache.spark.sql.SparkSession
import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.connector.catalog.{
  MetadataColumn,
  SupportsMetadataColumns,
  TableCapability
}
import org.apache.spark.sql.connector.expressions.{Expressions, Transform}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitioningAwareFileIndex}
import org.apache.spark.sql.execution.datasources.v2.FileTable
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A Delta table read by this connector, at one snapshot.
 *
 * @param timeTravel
 *   whether the read asked for this version (`versionAsOf`, `timestampAsOf`). Any other read is
 *   resolved anew whenever a plan holding it is normalized ([[RouteDeltaReads]] swaps in the newest
 *   snapshot, one per table per query), as delta-spark reads the newest version at every execution
 *   of a DataFrame that does not travel in time. Its equality ignores the version then: a
 *   `cache()`d read keeps serving what it cached after a commit from elsewhere, as delta-spark's
 *   cached reads do (its file index compares equal across versions), until it is refreshed, and
 *   delta-spark's own commands find it to re-cache after their commits (the plan they name, their
 *   target, is normalized to this connector's relation of the same table).
 * @param analyzed
 *   the table's metadata when the DataFrame was created (its columns); a newer version is read only
 *   when delta-spark's rule would read it (`DeltaAdapter.readCompatible`)
 * @param unreadable
 *   why this read cannot go on (the table became unreadable, or its schema changed in a way the
 *   DataFrame cannot read): raised when a query asks it for a scan, never while a plan is only
 *   normalized (as delta-spark's commands do to find cached plans after they commit)
 */
private[deltareplay] class DeltaReplayTable(
    spark: SparkSession,
    val snapshot: TableSnapshot,
    val options: Map[String, String],
    val conf: ReadConf,
    val timeTravel: Boolean,
    val analyzed: TableMeta,
    val unreadable: Option[Throwable]
) extends FileTable(
      spark,
      new CaseInsensitiveStringMap(java.util.Collections.emptyMap[String, String]()),
      Seq(snapshot.table),
      None
    )
    with SupportsMetadataColumns {

  def this(
      spark: SparkSession,
      snapshot: TableSnapshot,
      options: Map[String, String],
      conf: ReadConf,
      timeTravel: Boolean
  ) = this(spark, snapshot, options, conf, timeTravel, snapshot.meta, None)

  override def name(): String = s"delta-replay.`${snapshot.table}`@v${snapshot.version}"

  override lazy val schema: StructType = snapshot.schema

  /** Not used: the schema is the log's ([[schema]]). */
  override lazy val dataSchema: StructType = snapshot.schema

  /**
   * What Spark asks of a table of files, answered from the log ([[DeltaReplayFileIndex]]): the
   * table's root, by which `spark.catalog.refreshByPath` finds a cached read of it, and its live
   * files, which `Dataset.inputFiles` lists.
   */
  override lazy val fileIndex: PartitioningAwareFileIndex = new DeltaReplayFileIndex(spark, this)

  override def inferSchema(files: Seq[FileStatus]): Option[StructType] = Some(snapshot.schema)

  override def formatName: String = "delta"

  /**
   * Spark would write into a table of files with this format where no writer is planned (an INSERT
   * into a view over this read): writes go through delta-spark, so it refuses ([[ReadOnlyFormat]]).
   */
  override def fallbackFileFormat: Class[_ <: FileFormat] = classOf[ReadOnlyFormat]

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    throw Errors.readOnly(snapshot.table)

  override def partitioning: Array[Transform] =
    snapshot.partitionColumns
      .map(c => Expressions.identity(DeltaReplayScan.quoted(c)): Transform)
      .toArray

  override def properties: util.Map[String, String] = snapshot.meta.configuration.asJava

  override def capabilities: util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)

  /** `_metadata`, as Spark's file sources offer it ([[FileMetadata]]). */
  override def metadataColumns(): Array[MetadataColumn] = Array(new MetadataColumn {
    override def name(): String = FileMetadata.Column
    override def dataType(): DataType = FileMetadata.typeOf(snapshot.meta)
    override def isNullable: Boolean = false
  })

  override def newScanBuilder(opts: CaseInsensitiveStringMap): ScanBuilder = {
    unreadable.foreach(e => throw e)
    new DeltaReplayScanBuilder(spark, snapshot, settingsWith(opts.asScala.toMap))
  }

  /** This read at `newest`, for one query, with the settings `newConf`. */
  def resolvedTo(newest: TableSnapshot, newConf: ReadConf): DeltaReplayTable = {
    val broken =
      if (
        DeltaAdapter.readCompatible(newConf.sparkSettings.checkSchemaOnRead, analyzed, newest.meta)
      )
        None
      else {
        val changes = DeltaReplayTable.changes(analyzed.schema, newest.meta.schema)
        Some(Errors.schemaChangedSinceAnalysis(newest.table, newest.version, changes))
      }
    new DeltaReplayTable(spark, newest, options, newConf, timeTravel, analyzed, broken)
  }

  /** This read, failing with `e` when a query asks it for a scan. */
  def failedWith(e: Throwable): DeltaReplayTable =
    new DeltaReplayTable(spark, snapshot, options, conf, timeTravel, analyzed, Some(e))

  /**
   * The read's settings: those resolved where it was loaded, or, when a scan is built with options
   * the load did not have, those of all its options (checked as the load's were).
   */
  private def settingsWith(scanOptions: Map[String, String]): ReadConf = {
    val known = options.keySet.map(_.toLowerCase(Locale.ROOT))
    val extra = scanOptions.filter { case (k, _) =>
      val key = k.toLowerCase(Locale.ROOT)
      !known(key) && !io.deltareplay.DeltaReplayOptions.PathOptions(key)
    }
    if (extra.isEmpty) conf else ReadConf(spark, options ++ extra)
  }

  /** The table, the version when the read travels in time, and the read's settings. */
  private def identity: (String, Option[Long], Map[String, String]) =
    (
      snapshot.table,
      if (timeTravel) Some(snapshot.version) else None,
      DeltaReplayTable.settings(options)
    )

  override def equals(o: Any): Boolean = o match {
    case t: DeltaReplayTable => t.identity == identity
    case _ => false
  }

  override def hashCode(): Int = identity.hashCode()

  override def toString: String = name()
}

private[deltareplay] object DeltaReplayTable {

  /** A read's options without the table's path (which the snapshot names), keys in lower case. */
  def settings(options: Map[String, String]): Map[String, String] =
    options.collect {
      case (k, v) if !io.deltareplay.DeltaReplayOptions.PathOptions(k.toLowerCase(Locale.ROOT)) =>
        k.toLowerCase(Locale.ROOT) -> v
    }

  /**
   * How `newest` differs from `analyzed` for a reader of `analyzed`'s columns: the columns dropped
   * or retyped, else (column mapping) those now stored under another physical name.
   */
  def changes(analyzed: StructType, newest: StructType): Seq[String] = {
    val now = newest.fields.map(f => f.name.toLowerCase(Locale.ROOT) -> f).toMap
    val typed = analyzed.fields.toSeq.flatMap { f =>
      now.get(f.name.toLowerCase(Locale.ROOT)) match {
        case None => Some(s"${f.name} ${f.dataType.simpleString} is gone")
        case Some(n) if n.dataType != f.dataType =>
          Some(s"${f.name} is ${n.dataType.simpleString}, not ${f.dataType.simpleString}")
        case Some(n) if n.nullable && !f.nullable => Some(s"${f.name} may now hold nulls")
        case _ => None
      }
    }
    if (typed.nonEmpty) typed
    else {
      val moved = analyzed.fields.toSeq.filter { f =>
        now.get(f.name.toLowerCase(Locale.ROOT)).exists(n => n.metadata != f.metadata)
      }
      if (moved.nonEmpty) moved.map(f => s"${f.name} is stored under another physical column")
      else Seq("the columns were changed (a nested field dropped, retyped or renamed)")
    }
  }
}
