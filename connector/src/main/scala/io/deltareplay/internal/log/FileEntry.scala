package io.deltareplay.internal.log

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.deltareplay.SparkBridge
import org.apache.spark.sql.types._

/**
 * The typed form of a live file, the row planning reads: partition values as the table's types and
 * the statistics parsed into typed min, max and null counts. One definition of how the log's
 * strings become values, shared by every place that evaluates them: partition pruning, data
 * skipping, aggregates from statistics and the split's partition row, on the driver and in Spark
 * jobs alike.
 *
 *   - Partition values are cast from their string form as delta-spark casts them: a non-ANSI cast
 *     whatever the session's ANSI setting (so an empty string of a non-string column is null),
 *     timestamps in the session time zone unless the string carries one.
 *   - Statistics are parsed from their JSON with Spark's own JSON reader into the types of the
 *     columns (as delta-spark parses them), keyed by physical names.
 *
 * Layout ([[schema]]): `path` (as the log stores it), `size`, `modificationTime`, `dv`, `partition`
 * (a struct of the partition columns, logical names), `stats` (a struct: `numRecords`,
 * `tightBounds`, `minValues`, `maxValues`, `nullCount`).
 *
 * `countOnly`: the same layout with only `numRecords` read out of a statistics JSON (the token
 * reader of [[StatsFromJson]], the rest of the document skipped) and the other statistics null,
 * unknown; of a checkpoint's typed statistics only `numRecords` is read
 * ([[CheckpointLayout.forFile]]). For a `count(*)` answered from statistics and nothing else: such
 * entries never plan a scan nor enter the session's index cache (a bound left null skips nothing,
 * so they would be correct but slow).
 */
private[deltareplay] final case class FileEntry(
    tableSchema: StructType,
    partitionColumns: Seq[String],
    timeZone: String,
    countOnly: Boolean = false
) {
  import FileEntry._

  /** The partition columns, logical names and the table's types. */
  val partitionSchema: StructType =
    StructType(partitionColumns.map(c => tableSchema(c).copy(metadata = Metadata.empty)))

  /** Physical name of each partition column (the key of `partitionValues`). */
  val partitionPhysicalNames: Seq[String] =
    partitionColumns.map(c => physicalNameOf(tableSchema(c)))

  private val dataFields: Seq[StructField] =
    tableSchema.fields.toSeq.filterNot(f => partitionColumns.contains(f.name))

  /** The statistics struct, keyed by physical names as the log writes them. */
  val statsSchema: StructType = new StructType()
    .add(NumRecords, LongType)
    .add(TightBounds, BooleanType)
    .add(MinValues, boundsStruct(dataFields))
    .add(MaxValues, boundsStruct(dataFields))
    .add(NullCount, nullCountStruct(dataFields))

  val schema: StructType = new StructType()
    .add("path", StringType)
    .add("size", LongType)
    .add("modificationTime", LongType)
    .add("dv", DvDescriptor.Type)
    .add("partition", partitionSchema)
    .add("stats", statsSchema)

  object Ord extends Serializable {
    val Path: Int = schema.fieldIndex("path")
    val Size: Int = schema.fieldIndex("size")
    val ModificationTime: Int = schema.fieldIndex("modificationTime")
    val Dv: Int = schema.fieldIndex("dv")
    val Partition: Int = schema.fieldIndex("partition")
    val Stats: Int = schema.fieldIndex("stats")
  }

  /** The replay key (canonical path, DV unique id) of an entry row. */
  def key(paths: TablePaths, r: InternalRow): (String, String) =
    (
      paths.key(r.getUTF8String(Ord.Path).toString),
      DvDescriptor.fromInternalRow(r, Ord.Dv).fold("")(_.uniqueId)
    )

  /** Attributes of [[schema]]: the input of predicates built over entries. */
  val attributes: Seq[AttributeReference] =
    schema.fields.toSeq.map(f => AttributeReference(f.name, f.dataType, f.nullable)())

  def attribute(name: String): AttributeReference = attributes(schema.fieldIndex(name))

  /** The expressions that turn a [[LiveFile.Schema]] row (bound by ordinal) into an entry. */
  def fromLiveFile: Seq[Expression] = {
    def in(ordinal: Int): BoundReference = {
      val f = LiveFile.Schema(ordinal)
      BoundReference(ordinal, f.dataType, f.nullable)
    }
    Seq(
      in(LiveFile.Ord.Path),
      Coalesce(Seq(in(LiveFile.Ord.Size), Literal(0L))),
      Coalesce(Seq(in(LiveFile.Ord.ModificationTime), Literal(0L))),
      in(LiveFile.Ord.Dv),
      partitionFrom(in(LiveFile.Ord.PartitionValues)),
      if (countOnly) numRecordsOnly(in(LiveFile.Ord.Stats))
      else StatsJsonToStruct(in(LiveFile.Ord.Stats), statsSchema, timeZone)
    )
  }

  /** The statistics struct of a `countOnly` entry: `numRecords` from `json`, the rest null. */
  private def numRecordsOnly(json: Expression): Expression = {
    val read = StatsFromJson(json, Seq(Seq(NumRecords)), Seq(LongType), timeZone, remember = false)
    CreateNamedStruct(statsSchema.fields.toSeq.flatMap { f =>
      val value =
        if (f.name == NumRecords) GetStructField(read, 0, Some(NumRecords))
        else Literal(null, f.dataType)
      Seq(Literal(f.name), value)
    })
  }

  /** Turns [[LiveFile]] rows into entries on the driver (one reusable projection; not shared). */
  def projector(): LiveFile => InternalRow = {
    val project = UnsafeProjection.create(fromLiveFile)
    (f: LiveFile) => project(f.toInternalRow).copy()
  }

  /**
   * [[fromLiveFile]] as DataFrame columns over a [[LiveFile.Schema]] DataFrame; with `typedStats`,
   * the frame also has [[FileEntry.StatsParsedColumn]] (statistics already typed, from a
   * checkpoint's `stats_parsed`), used where it is not null.
   */
  def columnsFromLiveFile(typedStats: Boolean): Seq[Column] = {
    val byName = fromLiveFile.map(_.transform { case b: BoundReference =>
      UnresolvedAttributeOf(LiveFile.Schema(b.ordinal).name)
    })
    val withTyped =
      if (!typedStats) byName
      else
        byName.init :+ Coalesce(Seq(UnresolvedAttributeOf(StatsParsedColumn), byName.last))
    withTyped.zip(schema.fieldNames).map { case (e, n) => SparkBridge.column(Alias(e, n)()) }
  }

  /**
   * The `partition` struct of an entry from a file action's `partitionValues` map; a column for
   * which `typed` (given its physical name and type) has an expression takes that instead.
   */
  def partitionFrom(
      values: Expression,
      typed: (String, DataType) => Option[Expression] = (_, _) => None
  ): Expression =
    if (partitionSchema.isEmpty) Literal.create(InternalRow.empty, partitionSchema)
    else
      CreateNamedStruct(
        partitionSchema.fields.toSeq.zip(partitionPhysicalNames).flatMap { case (f, physical) =>
          Seq(
            Literal(f.name),
            typed(physical, f.dataType).getOrElse(
              castPartitionValue(GetMapValue(values, Literal(physical)), f.dataType)
            )
          )
        }
      )

  /** A partition value string cast as delta-spark casts it. */
  private def castPartitionValue(raw: Expression, dataType: DataType): Expression =
    if (dataType == StringType) raw else Cast(raw, dataType, Some(timeZone), EvalMode.LEGACY)

  /**
   * Reads the partition values of a row that holds the `partition` struct at `structOrdinal` (an
   * entry, or a row embedding one) into rows of `readSchema` (some partition columns).
   */
  def partitionRowReader(
      readSchema: StructType,
      structOrdinal: Int = Ord.Partition
  ): InternalRow => InternalRow = {
    val ordinals = readSchema.fieldNames.map(n => partitionSchema.fieldIndex(n))
    val types = partitionSchema.fields.map(_.dataType)
    if (ordinals.isEmpty) (_: InternalRow) => InternalRow.empty
    else
      (entry: InternalRow) => {
        val p = entry.getStruct(structOrdinal, partitionSchema.length)
        val out = new GenericInternalRow(ordinals.length)
        var i = 0
        while (i < ordinals.length) {
          // copied: a reader's row may reuse its buffers for the next row
          out.update(
            i,
            if (p.isNullAt(ordinals(i))) null
            else InternalRow.copyValue(p.get(ordinals(i), types(ordinals(i))))
          )
          i += 1
        }
        out
      }
  }

  /** min/max of the columns whose bounds statistics can be trusted, by physical name. */
  private def boundsStruct(fields: Seq[StructField]): StructType =
    StructType(fields.flatMap { f =>
      val physical = physicalNameOf(f)
      f.dataType match {
        case s: StructType =>
          val inner = boundsStruct(s.fields.toSeq)
          if (inner.isEmpty) None else Some(StructField(physical, inner))
        case t if hasBounds(f) => Some(StructField(physical, t))
        case _ => None
      }
    })

  private def nullCountStruct(fields: Seq[StructField]): StructType =
    StructType(fields.flatMap { f =>
      val physical = physicalNameOf(f)
      f.dataType match {
        case s: StructType => Some(StructField(physical, nullCountStruct(s.fields.toSeq)))
        case _: ArrayType | _: MapType | _: VariantType => None
        case _ => Some(StructField(physical, LongType))
      }
    })
}

private[deltareplay] object FileEntry {

  /** A live-file frame's typed statistics, when a replay read them from `stats_parsed`. */
  val StatsParsedColumn = "_statsParsed"

  /**
   * `e` (of type `from`, a checkpoint's `stats_parsed`) as `to` (an entry's statistics struct):
   * fields matched by name, a field of another type or missing read as null (no bound).
   */
  def align(e: Expression, from: DataType, to: DataType): Expression = (from, to) match {
    case (f: StructType, t: StructType) =>
      val fields = t.fields.toSeq.flatMap { tf =>
        val value = f.fields.indexWhere(_.name == tf.name) match {
          case -1 => Literal(null, tf.dataType)
          case i => align(GetStructField(e, i, Some(tf.name)), f(i).dataType, tf.dataType)
        }
        Seq(Literal(tf.name), value)
      }
      if (fields.isEmpty) Literal(null, t)
      else If(IsNull(e), Literal(null, t), CreateNamedStruct(fields))
    case (a, b) if a == b => e
    case _ => Literal(null, to)
  }

  /** The entry layout of a table (its schema with column-mapping metadata). */
  def apply(meta: TableMeta, timeZone: String): FileEntry =
    FileEntry(meta.schema, meta.partitionColumns, timeZone)

  val NumRecords = "numRecords"
  val TightBounds = "tightBounds"
  val MinValues = "minValues"
  val MaxValues = "maxValues"
  val NullCount = "nullCount"

  /** A field's physical name (column mapping), or its name. */
  def physicalNameOf(f: StructField): String =
    if (f.metadata.contains(PhysicalNameKey)) f.metadata.getString(PhysicalNameKey) else f.name

  private val PhysicalNameKey = "delta.columnMapping.physicalName"

  /**
   * Whether min/max statistics of this column can bound its values: a type Delta collects bounds
   * for and compares in an order Spark shares (numbers, dates, timestamps, strings in UTF-8 binary
   * order), and no type change in the table's history (older files would carry bounds of the old
   * type).
   */
  def hasBounds(f: StructField): Boolean = {
    val typeChanged = f.metadata.contains("delta.typeChanges")
    !typeChanged && (f.dataType match {
      case _: NumericType | DateType | TimestampType | TimestampNTZType => true
      case s: StringType => s.collationId == StringType.collationId
      case _ => false
    })
  }

  /** An unresolved reference to a top-level column (resolved by name against a DataFrame). */
  private object UnresolvedAttributeOf {
    def apply(name: String): Expression =
      org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute.quoted(name)
  }
}
