package io.deltareplay.internal.log

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.deltareplay.internal.delta.{DeltaAdapter, TableActions}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * The protocol and metadata of one table version, as this connector uses them: its own value type
 * (delta-spark's action classes stay in [[DeltaAdapter]]). Parsed from the log's JSON with Jackson;
 * the schema keeps its column-mapping metadata (physical names, field ids).
 *
 * @param protocolJson
 *   the protocol action's JSON, for the adapter (delta-spark's checks take its own classes)
 * @param metadataJson
 *   the metaData action's JSON, likewise
 */
private[deltareplay] final case class TableMeta(
    tableId: String,
    schema: StructType,
    partitionColumns: Seq[String],
    configuration: Map[String, String],
    minReaderVersion: Int,
    minWriterVersion: Int,
    readerFeatures: Set[String],
    writerFeatures: Set[String],
    protocolJson: String,
    metadataJson: String
) extends TableActions {

  /**
   * The physical (Parquet) schema for a logical schema of this table's columns. Under `id` column
   * mapping its fields carry their Parquet field ids, by which the reader finds them; under `name`
   * mapping they carry none: columns are found by physical name, as V1 reads them, also in the
   * files written before column mapping was enabled on the table, which hold no ids (Spark's
   * Parquet reader refuses a schema with ids over a file without them).
   */
  def physicalSchema(logical: StructType): StructType =
    if (!usesColumnMapping) logical
    else {
      val physical = DeltaAdapter.physicalSchema(this, logical)
      if (columnMappingName == "id") physical else TableMeta.withoutFieldIds(physical)
    }

  /** The physical name of a top-level column (the key of partitionValues and stats). */
  def physicalName(column: String): String = FileEntry.physicalNameOf(schema(column))

  /** The same table with the protocol of `action` (a later commit's). */
  def withProtocol(action: TableMeta.Protocol): TableMeta =
    copy(
      minReaderVersion = action.minReaderVersion,
      minWriterVersion = action.minWriterVersion,
      readerFeatures = action.readerFeatures,
      writerFeatures = action.writerFeatures,
      protocolJson = action.json
    )

  /** The same table with the metadata of `action` (a later commit's). */
  def withMetadata(action: TableMeta.Metadata): TableMeta =
    copy(
      tableId = action.id,
      schema = action.schema,
      partitionColumns = action.partitionColumns,
      configuration = action.configuration,
      metadataJson = action.json
    )
}

private[deltareplay] object TableMeta {

  /** The metadata key of a Parquet field id in a Spark schema. */
  private val FieldIdKey = "parquet.field.id"

  /** `schema` without Parquet field ids, at any depth. */
  def withoutFieldIds(schema: StructType): StructType = {
    import org.apache.spark.sql.types.{ArrayType, MapType, MetadataBuilder}
    def clean(t: DataType): DataType = t match {
      case s: StructType => withoutFieldIds(s)
      case a: ArrayType => a.copy(elementType = clean(a.elementType))
      case m: MapType => m.copy(keyType = clean(m.keyType), valueType = clean(m.valueType))
      case other => other
    }
    StructType(schema.fields.map { f =>
      val metadata =
        if (!f.metadata.contains(FieldIdKey)) f.metadata
        else new MetadataBuilder().withMetadata(f.metadata).remove(FieldIdKey).build()
      f.copy(dataType = clean(f.dataType), metadata = metadata)
    })
  }

  /** A protocol action of the log. */
  final case class Protocol(
      minReaderVersion: Int,
      minWriterVersion: Int,
      readerFeatures: Set[String],
      writerFeatures: Set[String],
      json: String
  )

  /** A metaData action of the log. */
  final case class Metadata(
      id: String,
      schema: StructType,
      partitionColumns: Seq[String],
      configuration: Map[String, String],
      json: String
  )

  def apply(p: Protocol, m: Metadata): TableMeta =
    TableMeta(
      m.id,
      m.schema,
      m.partitionColumns,
      m.configuration,
      p.minReaderVersion,
      p.minWriterVersion,
      p.readerFeatures,
      p.writerFeatures,
      p.json,
      m.json
    )

  private val mapper = new ObjectMapper()

  /**
   * The protocol or metaData action of one JSON log line (None for other actions); throws on a
   * malformed one (the caller names the file).
   */
  def parse(line: String): Option[Either[Protocol, Metadata]] = {
    val node = mapper.readTree(line)
    if (node.has("protocol")) Some(Left(protocol(node.get("protocol"))))
    else if (node.has("metaData")) Some(Right(metadata(node.get("metaData"))))
    else None
  }

  /**
   * The protocol and metadata a version checksum file (`NNN.crc`, one JSON object) records; None
   * when it lacks either (both are required by the protocol, but a reader must not depend on the
   * file); throws on a malformed one.
   */
  def fromChecksum(json: String): Option[TableMeta] = {
    val node = mapper.readTree(json)
    def objectAt(name: String) = Option(node.get(name)).filter(_.isObject)
    for (p <- objectAt("protocol"); m <- objectAt("metadata"))
      yield TableMeta(protocol(p), metadata(m))
  }

  private def strings(n: JsonNode): Set[String] =
    if (n == null || n.isNull) Set.empty else n.elements().asScala.map(_.asText()).toSet

  private def protocol(p: JsonNode): Protocol =
    Protocol(
      minReaderVersion = required(p, "minReaderVersion").asInt(),
      minWriterVersion = Option(p.get("minWriterVersion")).fold(0)(_.asInt()),
      readerFeatures = strings(p.get("readerFeatures")),
      writerFeatures = strings(p.get("writerFeatures")),
      json = s"""{"protocol":$p}"""
    )

  private def metadata(m: JsonNode): Metadata = {
    val schemaString = required(m, "schemaString").asText()
    val schema =
      try DataType.fromJson(schemaString).asInstanceOf[StructType]
      catch {
        case NonFatal(e) =>
          throw new IllegalArgumentException(s"unreadable schemaString: ${e.getMessage}", e)
      }
    val configuration = Option(m.get("configuration")).filterNot(_.isNull) match {
      case Some(c) =>
        c.properties().asScala.map(e => e.getKey -> e.getValue.asText()).toMap
      case None => Map.empty[String, String]
    }
    Metadata(
      id = required(m, "id").asText(),
      schema = schema,
      partitionColumns =
        Option(m.get("partitionColumns")).toSeq.flatMap(_.elements().asScala.map(_.asText())),
      configuration = configuration,
      json = s"""{"metaData":$m}"""
    )
  }

  private def required(n: JsonNode, field: String): JsonNode =
    Option(n.get(field)).filterNot(_.isNull).getOrElse {
      throw new IllegalArgumentException(s"no $field in $n")
    }
}
