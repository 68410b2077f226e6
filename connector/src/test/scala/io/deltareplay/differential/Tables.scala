package io.deltareplay.differential

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/** A generated column: its name and type, and whether it partitions the table. */
final case class Column(name: String, kind: ColumnType, partition: Boolean)

/** One step of a generated table's history, run through delta-spark. */
sealed trait Op {
  def describe: String
}

object Op {
  final case class Append(rows: Seq[Row], files: Int) extends Op {
    def describe: String = s"append ${rows.size} rows in $files file(s): " +
      rows.take(3).map(_.toSeq.map(Values.show).mkString("(", ", ", ")")).mkString(" ") +
      (if (rows.size > 3) " ..." else "")
  }
  final case class Delete(where: String) extends Op {
    def describe: String = s"DELETE WHERE $where"
  }
  final case class Update(set: String, where: String) extends Op {
    def describe: String = s"UPDATE SET $set WHERE $where"
  }
  case object Optimize extends Op { def describe: String = "OPTIMIZE" }
  case object Checkpoint extends Op { def describe: String = "checkpoint" }
}

/**
 * A generated Delta table: its columns, table properties and history. Every table has a unique `id
 * BIGINT` first; [[build]] writes it with delta-spark; [[describe]] is the recipe a difference
 * report prints.
 */
final case class TableRecipe(
    seed: Long,
    columns: Seq[Column],
    properties: Map[String, String],
    ops: Seq[Op]
) {
  def schema: StructType =
    StructType(StructField("id", LongType, nullable = false) +: columns.map { c =>
      StructField(c.name, c.kind.dataType)
    })

  def partitionColumns: Seq[String] = columns.filter(_.partition).map(_.name)

  def createSql(path: String): String = {
    val cols = ("id BIGINT NOT NULL" +: columns.map(c => s"${c.name} ${c.kind.ddl}")).mkString(", ")
    val parts =
      if (partitionColumns.isEmpty) ""
      else partitionColumns.mkString(" PARTITIONED BY (", ", ", ")")
    val props = properties.map { case (k, v) => s"'$k' = '$v'" }.mkString(", ")
    s"CREATE TABLE delta.`$path` ($cols) USING delta$parts TBLPROPERTIES ($props)"
  }

  /** Writes the table; returns the version after each op (the versions time travel may read). */
  def build(spark: SparkSession, path: String): Seq[Long] = {
    spark.sql(createSql(path)).collect()
    ops.map { op =>
      op match {
        case Op.Append(rows, files) =>
          spark
            .createDataFrame(rows.asJava, schema)
            .repartition(files)
            .write
            .format("delta")
            .mode("append")
            .save(path)
        case Op.Delete(where) => spark.sql(s"DELETE FROM delta.`$path` WHERE $where").collect()
        case Op.Update(set, where) =>
          spark.sql(s"UPDATE delta.`$path` SET $set WHERE $where").collect()
        case Op.Optimize => spark.sql(s"OPTIMIZE delta.`$path`").collect()
        case Op.Checkpoint =>
          org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).checkpoint()
      }
      org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).update().version
    }
  }

  def describe(path: String): String =
    (s"-- table (seed $seed)" +: createSql(path) +: ops.map("-- " + _.describe)).mkString("\n")
}

/** Random tables: a few columns of every kind, partitions, DVs, column mapping, checkpoints. */
object Tables {

  def generate(seed: Long): TableRecipe = {
    val r = new Random(seed)
    val dataTypes = r.shuffle(ColumnType.all).take(3 + r.nextInt(4))
    val partitionTypes = r.shuffle(ColumnType.partitionTypes).take(r.nextInt(3))
    val columns =
      dataTypes.zipWithIndex.map { case (t, i) => Column(s"c$i", t, partition = false) } ++
        partitionTypes.zipWithIndex.map { case (t, i) => Column(s"p$i", t, partition = true) }
    val properties = Map.newBuilder[String, String]
    properties += "delta.checkpointInterval" -> (2 + r.nextInt(4)).toString
    if (r.nextBoolean()) properties += "delta.enableDeletionVectors" -> "true"
    r.nextInt(4) match {
      case 0 => properties += "delta.columnMapping.mode" -> "name"
      case 1 => properties += "delta.columnMapping.mode" -> "id"
      case _ =>
    }
    if (r.nextInt(4) == 0) properties += "delta.dataSkippingNumIndexedCols" -> "2"
    if (r.nextInt(4) == 0) properties += "delta.checkpoint.writeStatsAsJson" -> "false"
    var nextId = 0L
    val pools = columns.map(c => c -> Values.pool(c.kind, r)).toMap
    def rows(n: Int): Seq[Row] = Seq.fill(n) {
      nextId += 1
      Row.fromSeq(nextId +: columns.map { c =>
        // partition columns take few distinct values, so files share them
        val v = if (c.partition) Values.pick(pools(c).take(4), r) else Values.pick(pools(c), r)
        if (r.nextInt(8) == 0) null else v
      })
    }
    val ops = Seq.newBuilder[Op]
    ops += Op.Append(rows(5 + r.nextInt(20)), 1 + r.nextInt(3))
    (0 until 2 + r.nextInt(5)).foreach { _ =>
      r.nextInt(10) match {
        case 0 | 1 | 2 | 3 => ops += Op.Append(rows(1 + r.nextInt(15)), 1 + r.nextInt(2))
        case 4 | 5 => ops += Op.Delete(s"id % ${2 + r.nextInt(5)} = ${r.nextInt(2)}")
        case 6 =>
          val c = columns(r.nextInt(columns.size))
          val v = Values.pick(pools(c), r)
          ops += Op.Update(s"${c.name} = ${c.kind.literal(v)}", s"id % 3 = ${r.nextInt(3)}")
        case 7 => ops += Op.Optimize
        case _ => ops += Op.Checkpoint
      }
    }
    TableRecipe(seed, columns, properties.result(), ops.result())
  }
}

/** Values of generated columns: pools mixing edge values and random ones, and their display. */
object Values {
  def pool(kind: ColumnType, r: Random): IndexedSeq[Any] =
    (kind.edges ++ Seq.fill(6)(kind.random(r))).toIndexedSeq

  def pick(pool: IndexedSeq[Any], r: Random): Any = pool(r.nextInt(pool.size))

  def show(v: Any): String = v match {
    case null => "null"
    case b: Array[Byte] => b.mkString("0x[", ",", "]")
    case s: String => s"'$s'"
    case other => other.toString
  }
}
