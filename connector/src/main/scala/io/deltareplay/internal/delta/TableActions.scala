package io.deltareplay.internal.delta

import java.util.Locale

import org.apache.spark.sql.types.StructType

/**
 * What the adapter reads of one table version: its protocol and metadata as the log holds them (the
 * log room's `TableMeta` is one). delta-spark's checks take its own action classes, which the
 * adapter parses from the two actions' JSON.
 */
private[deltareplay] trait TableActions {
  def schema: StructType
  def partitionColumns: Seq[String]
  def configuration: Map[String, String]
  def minReaderVersion: Int
  def readerFeatures: Set[String]
  def writerFeatures: Set[String]

  /** The protocol action's JSON. */
  def protocolJson: String

  /** The metaData action's JSON. */
  def metadataJson: String

  /** `none`, `name` or `id` (the `delta.columnMapping.mode` table property). */
  def columnMappingName: String =
    configuration.getOrElse("delta.columnMapping.mode", "none").toLowerCase(Locale.ROOT)

  def usesColumnMapping: Boolean = columnMappingName != "none"
}

/** What the adapter reads of a deletion vector's descriptor (the log room's `DvDescriptor`). */
private[deltareplay] trait DvFields {
  def storageType: String
  def pathOrInlineDv: String
  def offset: Option[Int]
  def sizeInBytes: Int
  def cardinality: Long
}
