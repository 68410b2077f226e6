package io.deltareplay.internal.log

import scala.jdk.CollectionConverters._

import io.deltareplay.internal.session.{BoundedLru, SessionState}
import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.hadoop.metadata.{ColumnPath, ParquetMetadata}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

/**
 * What replay takes from the footer of a checkpoint Parquet file (or sidecar): its Spark schema,
 * its row count, whether every add row in it carries `add.stats_parsed`, and which fields of
 * `add.partitionValues_parsed` every add row has a value in.
 *
 * The last two are proved from the footer's column statistics, never assumed: `add.path` is null
 * exactly in the rows that are not adds, so when in every row group a leaf below `add` has no more
 * nulls than `add.path`, every add has a value there (a null leaf counts as null at whichever level
 * the null is). For `add.stats_parsed.numRecords`: a read that needs statistics then never needs
 * the JSON `add.stats` column, the widest of a checkpoint (more than half of the bytes of a
 * delta-spark checkpoint with statistics), and does not decode it. For a field of
 * `add.partitionValues_parsed`: a filter on that partition column can read the typed value instead
 * of the `add.partitionValues` map ([[io.deltareplay.internal.replay.CheckpointFilter]]). Row
 * groups without null counts prove nothing.
 */
private[deltareplay] final case class FooterFacts(
    schema: StructType,
    rows: Long,
    statsParsedInEveryAdd: Boolean,
    partitionParsedInEveryAdd: StructType = new StructType()
)

private[deltareplay] object FooterFacts {
  private val AddPath = ColumnPath.get("add", "path")
  private val ParsedRecords =
    ColumnPath.get("add", CheckpointLayout.StatsParsedField, "numRecords")
  def apply(footer: ParquetMetadata, schema: StructType): FooterFacts = {
    val blocks = footer.getBlocks.asScala.toSeq
    val partitionParsed = CheckpointLayout
      .structField(schema, "add")
      .flatMap(CheckpointLayout.structField(_, CheckpointLayout.PartitionParsedField))
    FooterFacts(
      schema,
      blocks.map(_.getRowCount).sum,
      blocks.forall(inEveryAdd(_, ParsedRecords)),
      // (a field that is not a leaf has no column of its path, so no null count: never proven)
      StructType(partitionParsed.toSeq.flatMap(_.fields).filter { f =>
        val path = ColumnPath.get("add", CheckpointLayout.PartitionParsedField, f.name)
        blocks.nonEmpty && blocks.forall(inEveryAdd(_, path))
      })
    )
  }

  /** Whether the leaf at `path` has a value in every add row of `block` (by its null count). */
  private def inEveryAdd(
      block: org.apache.parquet.hadoop.metadata.BlockMetaData,
      path: ColumnPath
  ): Boolean = {
    def nulls(path: ColumnPath): Option[Long] =
      block.getColumns.asScala.find(_.getPath == path).flatMap { c =>
        Option(c.getStatistics).filter(_.isNumNullsSet).map(_.getNumNulls)
      }
    (for (adds <- nulls(AddPath); leaf <- nulls(path)) yield leaf <= adds).getOrElse(false)
  }
}

/**
 * The [[FooterFacts]] of recently read checkpoint files, kept per SparkSession: a cold read opens
 * the checkpoint's footer for its protocol and metadata, its size estimate, its sidecars and its
 * read schema, one GET each on an object store. Checkpoint files are written once, so a file is
 * known by path, length, modification time and ETag ([[MetaCache.FileId]]).
 * `spark.deltareplay.replay.stateCache.enabled=false` turns it off with the other caches.
 */
private[deltareplay] object CheckpointFooters {
  val MaxFiles = 256

  private val cacheOf = new SessionState.Part[BoundedLru[MetaCache.FileId, FooterFacts]](
    "checkpoint footers",
    () => new BoundedLru[MetaCache.FileId, FooterFacts](MaxFiles, Long.MaxValue, _ => 1L),
    size = _.size.toLong
  )

  /** The facts of `file`: kept ones, or `read()` (kept when caching is on). */
  def facts(spark: SparkSession, file: FileStatus, settings: LogSettings)(
      read: => FooterFacts
  ): FooterFacts = {
    if (!settings.stateCache) return read
    cacheOf(spark).getOrRead(MetaCache.FileId(file))(read)
  }
}
