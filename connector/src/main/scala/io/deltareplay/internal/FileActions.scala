package io.deltareplay.internal

import org.apache.spark.sql.types._

/** A deletion vector descriptor, as the log stores it. */
private[deltareplay] case class DvDescriptor(
    storageType: String,
    pathOrInlineDv: String,
    offset: Option[Int],
    sizeInBytes: Int,
    cardinality: Long
) {

  /** The protocol's unique id of this deletion vector (part of a file's replay key). */
  def uniqueId: String = offset match {
    case Some(o) => s"$storageType$pathOrInlineDv@$o"
    case None => s"$storageType$pathOrInlineDv"
  }
}

/**
 * A data file live at the version read: what planning and reading need, and nothing else.
 *
 * @param path
 *   as the log stores it: relative to the table (URL-encoded) or absolute
 * @param partitionValues
 *   by physical partition column name, serialized as strings
 * @param stats
 *   the JSON statistics, only when a filter can use them
 */
private[deltareplay] case class LiveFile(
    path: String,
    partitionValues: Map[String, String],
    size: Long,
    modificationTime: Long,
    stats: String,
    dv: Option[DvDescriptor]
)

/** The Spark schemas used to read file actions out of commits and checkpoints. */
private[deltareplay] object FileActions {

  val DvType: StructType = new StructType()
    .add("storageType", StringType)
    .add("pathOrInlineDv", StringType)
    .add("offset", IntegerType)
    .add("sizeInBytes", IntegerType)
    .add("cardinality", LongType)

  val AddType: StructType = new StructType()
    .add("path", StringType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("modificationTime", LongType)
    .add("dataChange", BooleanType)
    .add("stats", StringType)
    .add("deletionVector", DvType)

  val RemoveType: StructType = new StructType()
    .add("path", StringType)
    .add("deletionTimestamp", LongType)
    .add("dataChange", BooleanType)
    .add("partitionValues", MapType(StringType, StringType))
    .add("size", LongType)
    .add("deletionVector", DvType)

  val SidecarType: StructType = new StructType()
    .add("path", StringType)
    .add("sizeInBytes", LongType)

  /** What replay reads from a commit or a checkpoint part. */
  val ReadSchema: StructType = new StructType()
    .add("add", AddType)
    .add("remove", RemoveType)
    .add("sidecar", SidecarType)
}
