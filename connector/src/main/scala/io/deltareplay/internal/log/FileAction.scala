package io.deltareplay.internal.log

import com.fasterxml.jackson.databind.JsonNode
import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, MapData}
import org.apache.spark.sql.functions.{coalesce, col, lit, udf, when}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The file actions of the log and the rows they travel in: the one definition of their Spark
 * schemas, of the named ordinals every row access uses, of their encoders and decoders (log JSON,
 * checkpoint rows, Spark `Row` and `InternalRow`) and of the replay key. Every other file reads and
 * writes these rows through here; none reads a file-action row by a position of its own.
 */
private[deltareplay] object FileAction {

  // ------------------------------------------------------------------ the log's own layout

  /** `add` as replay reads it from commits and checkpoints. */
  val AddType: StructType = new StructType()
    .add("path", StringType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("modificationTime", LongType)
    .add("dataChange", BooleanType)
    .add("stats", StringType)
    .add("deletionVector", DvDescriptor.Type)

  /** `remove` as replay reads it. */
  val RemoveType: StructType = new StructType()
    .add("path", StringType)
    .add("deletionTimestamp", LongType)
    .add("dataChange", BooleanType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("deletionVector", DvDescriptor.Type)

  val SidecarType: StructType =
    new StructType().add("path", StringType).add("sizeInBytes", LongType)

  /** What replay reads from a commit or a checkpoint part. */
  val LogSchema: StructType = new StructType().add("add", AddType).add("remove", RemoveType)

  private object AddOrd {
    val Path: Int = AddType.fieldIndex("path")
    val PartitionValues: Int = AddType.fieldIndex("partitionValues")
    val Size: Int = AddType.fieldIndex("size")
    val ModificationTime: Int = AddType.fieldIndex("modificationTime")
    val DataChange: Int = AddType.fieldIndex("dataChange")
    val Stats: Int = AddType.fieldIndex("stats")
    val Dv: Int = AddType.fieldIndex("deletionVector")
  }

  private object RemoveOrd {
    val Path: Int = RemoveType.fieldIndex("path")
    val DataChange: Int = RemoveType.fieldIndex("dataChange")
    val PartitionValues: Int = RemoveType.fieldIndex("partitionValues")
    val Size: Int = RemoveType.fieldIndex("size")
    val Dv: Int = RemoveType.fieldIndex("deletionVector")
  }

  // ------------------------------------------------------------------ the normalised action row

  /**
   * One add or remove, tagged with its commit version (the checkpoint's version for checkpoint
   * rows): the rows of a distributed replay. `path` is as the log stores it; the replay key is
   * computed where replay needs it ([[keyUdf]], [[Action.key]]).
   */
  val Schema: StructType = new StructType()
    .add("version", LongType)
    .add("isAdd", BooleanType)
    .add("path", StringType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("modificationTime", LongType)
    .add("dataChange", BooleanType)
    .add("stats", StringType)
    .add("dv", DvDescriptor.Type)

  object Ord {
    val Version: Int = Schema.fieldIndex("version")
    val IsAdd: Int = Schema.fieldIndex("isAdd")
    val Path: Int = Schema.fieldIndex("path")
  }

  /**
   * The normalised columns of a DataFrame read with [[LogSchema]] (plus `add.stats_parsed` turned
   * into `stats`, when given): one row per add or remove.
   */
  def columns(version: Column, stats: Column, needStats: Boolean): Seq[Column] = {
    val add = col("add")
    val remove = col("remove")
    Seq(
      version.as("version"),
      add.isNotNull.as("isAdd"),
      coalesce(add("path"), remove("path")).as("path"),
      coalesce(add("partitionValues"), remove("partitionValues")).as("partitionValues"),
      coalesce(add("size"), remove("size"), lit(0L)).as("size"),
      coalesce(add("modificationTime"), lit(0L)).as("modificationTime"),
      coalesce(add("dataChange"), remove("dataChange"), lit(true)).as("dataChange"),
      (if (needStats) stats else lit(null).cast(StringType)).as("stats"),
      coalesce(add("deletionVector"), remove("deletionVector")).as("dv")
    )
  }

  /** Rows that hold an add or a remove (a log line holds one action of any kind). */
  val isFileAction: Column = col("add").isNotNull || col("remove").isNotNull

  /** [[TablePaths.key]] as a Column function: the same definition the driver uses. */
  def keyUdf(paths: TablePaths): Column => Column = {
    val f = udf((p: String) => if (p == null) null else paths.key(p))
    (c: Column) => f(c)
  }

  /** The DV part of the replay key as a Column function ([[DvDescriptor.uniqueId]]). */
  val dvKeyUdf: Column => Column = {
    val f = udf((dv: Row) => DvDescriptor.fromRow(dv).fold("")(_.uniqueId))
    (c: Column) => when(c.isNull, lit("")).otherwise(f(c))
  }

  /** One add or remove of a JSON log line (None for other actions). */
  def fromJson(
      node: JsonNode,
      version: Long,
      needStats: Boolean
  ): Option[Action] = {
    val (isAdd, body) =
      if (node.has("add")) (true, node.get("add"))
      else if (node.has("remove")) (false, node.get("remove"))
      else return None
    def field(name: String): Option[JsonNode] = Option(body.get(name)).filterNot(_.isNull)
    val path = field("path").map(_.asText()).getOrElse(throw MissingPath(node.toString))
    val pv = field("partitionValues") match {
      case Some(obj) =>
        val b = Map.newBuilder[String, String]
        obj.properties().forEach { e =>
          b += e.getKey -> (if (e.getValue.isNull) null else e.getValue.asText())
        }
        b.result()
      case None => Map.empty[String, String]
    }
    Some(
      Action(
        version = version,
        isAdd = isAdd,
        path = path,
        partitionValues = pv,
        size = field("size").map(_.asLong()).getOrElse(0L),
        modificationTime = field("modificationTime").map(_.asLong()).getOrElse(0L),
        dataChange = field("dataChange").forall(_.asBoolean(true)),
        stats = if (needStats && isAdd) field("stats").map(_.asText()).orNull else null,
        dv = field("deletionVector").map(DvDescriptor.fromJson)
      )
    )
  }

  /** A JSON add or remove without a path (the caller names the file). */
  final case class MissingPath(action: String) extends RuntimeException(action)

  /**
   * One add or remove of a checkpoint row read with `add` (optionally with `stats_parsed` as its
   * last field, see [[CheckpointLayout]]) and `remove` at ordinals 0 and 1.
   */
  def fromCheckpointRow(
      row: InternalRow,
      version: Long,
      addArity: Int,
      parsedStats: InternalRow => String
  ): Option[Action] =
    if (!row.isNullAt(0)) {
      val add = row.getStruct(0, addArity)
      val stats =
        if (!add.isNullAt(AddOrd.Stats)) add.getUTF8String(AddOrd.Stats).toString
        else parsedStats(add)
      Some(
        Action(
          version = version,
          isAdd = true,
          path = add.getUTF8String(AddOrd.Path).toString,
          partitionValues = stringMap(add, AddOrd.PartitionValues),
          size = longOr0(add, AddOrd.Size),
          modificationTime = longOr0(add, AddOrd.ModificationTime),
          dataChange = add.isNullAt(AddOrd.DataChange) || add.getBoolean(AddOrd.DataChange),
          stats = stats,
          dv = DvDescriptor.fromInternalRow(add, AddOrd.Dv)
        )
      )
    } else if (!row.isNullAt(1)) {
      val remove = row.getStruct(1, RemoveType.length)
      Some(
        Action(
          version = version,
          isAdd = false,
          path = remove.getUTF8String(RemoveOrd.Path).toString,
          partitionValues = stringMap(remove, RemoveOrd.PartitionValues),
          size = longOr0(remove, RemoveOrd.Size),
          modificationTime = 0L,
          dataChange =
            remove.isNullAt(RemoveOrd.DataChange) || remove.getBoolean(RemoveOrd.DataChange),
          stats = null,
          dv = DvDescriptor.fromInternalRow(remove, RemoveOrd.Dv)
        )
      )
    } else None

  /** The ordinal of `add.stats_parsed` in a checkpoint add struct that has it last. */
  val StatsParsedOrdinal: Int = AddType.length

  private def longOr0(r: InternalRow, i: Int): Long = if (r.isNullAt(i)) 0L else r.getLong(i)

  /** A `map<string,string>` field as a Scala map (empty when null). */
  def stringMap(r: InternalRow, i: Int): Map[String, String] =
    if (r.isNullAt(i)) Map.empty else toMap(r.getMap(i))

  def toMap(m: MapData): Map[String, String] = {
    val keys = m.keyArray()
    val values = m.valueArray()
    val b = Map.newBuilder[String, String]
    var i = 0
    while (i < m.numElements()) {
      b += keys.getUTF8String(i).toString ->
        (if (values.isNullAt(i)) null else values.getUTF8String(i).toString)
      i += 1
    }
    b.result()
  }

  def toMapData(m: Map[String, String]): MapData =
    if (m.isEmpty) null
    else {
      val (k, v) = m.toSeq.unzip
      ArrayBasedMapData(
        k.map(UTF8String.fromString).toArray[Any],
        v.map(s => if (s == null) null else UTF8String.fromString(s)).toArray[Any]
      )
    }

  /** One add or remove, as the driver-side replay handles it. */
  final case class Action(
      version: Long,
      isAdd: Boolean,
      path: String,
      partitionValues: Map[String, String],
      size: Long,
      modificationTime: Long,
      dataChange: Boolean,
      stats: String,
      dv: Option[DvDescriptor]
  ) {

    /** The replay key: (canonical path, deletion-vector unique id or ""). */
    def key(paths: TablePaths): (String, String) = (paths.key(path), dv.fold("")(_.uniqueId))

    def toLiveFile(partitionValues: Map[String, String] = this.partitionValues): LiveFile =
      LiveFile(path, partitionValues, size, modificationTime, stats, dv)
  }
}
