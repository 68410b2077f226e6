package io.deltareplay.differential

import java.io.File

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types.{BinaryType, BooleanType, LongType, StructField, StructType}

/**
 * A generated column: a stable `uid` (a renamed column keeps it), its name and type, whether it
 * partitions the table, and the SQL expression of a generated column.
 */
final case class Column(
    uid: Int,
    name: String,
    kind: ColumnType,
    partition: Boolean,
    generatedAs: Option[String] = None
) {

  /** The name as one SQL identifier. */
  def q: String = Column.quote(name)
}

object Column {
  def quote(name: String): String = "`" + name.replace("`", "``") + "`"
}

/** What the generator may put into a table; the short run covers every one of them. */
object Feature {
  val CmName = "column mapping (name)"
  val CmId = "column mapping (id)"
  val Dv = "deletion vectors"
  val QuotedNames = "names that need quoting"
  val Nested = "structs, arrays and maps"
  val GeneratedPartition = "generated partition column"
  val StatsJsonOnly = "checkpoint statistics as JSON only"
  val TimeZone = "session time zone other than UTC"
  val Add = "ADD COLUMNS"
  val Drop = "DROP COLUMN"
  val Rename = "RENAME COLUMN"
  val DropThenAdd = "DROP then ADD of one name"
  val Widen = "type widening"
  val StatsColumns = "dataSkippingStatsColumns change"
  val IndexedCols = "dataSkippingNumIndexedCols change"
  val DvLater = "deletion vectors enabled part-way"
  val CmLater = "column mapping enabled part-way"
  val Update = "UPDATE"
  val Merge = "MERGE"
  val Delete = "DELETE"
  val Optimize = "OPTIMIZE"
  val Classic = "classic checkpoint"
  val MultiPart = "multi-part checkpoint"
  val V2 = "V2 checkpoint with sidecars"
  val Cleanup = "log cleanup"
  val TravelVersion = "time travel by version"
  val TravelTimestamp = "time travel by timestamp"
  val Stream = "stream batch by batch"
  val Reused = "DataFrame reused across a commit"

  /** Partition columns of each type the issue names. */
  def partition(kind: ColumnType): String = s"partition column ${kind.ddl}"

  val all: Seq[String] = Seq(
    CmName,
    CmId,
    Dv,
    QuotedNames,
    Nested,
    GeneratedPartition,
    StatsJsonOnly,
    TimeZone,
    Add,
    Drop,
    Rename,
    DropThenAdd,
    Widen,
    StatsColumns,
    IndexedCols,
    DvLater,
    CmLater,
    Update,
    Merge,
    Delete,
    Optimize,
    Classic,
    MultiPart,
    V2,
    Cleanup,
    TravelVersion,
    TravelTimestamp,
    Stream,
    Reused
  ) ++ ColumnType.partitionTypes.map(partition)
}

/** One step of a generated table's history, run through delta-spark. */
sealed trait Op {
  def describe: String

  /** The features this step exercises. */
  def features: Set[String] = Set.empty
}

object Op {

  /** Rows of `columns` (generated columns left to delta-spark) in `files` files. */
  final case class Append(columns: Seq[Column], rows: Seq[Row], files: Int) extends Op {
    def describe: String = s"append ${rows.size} rows in $files file(s) of (" +
      columns.map(_.q).mkString(", ") + "): " +
      rows.take(3).map(_.toSeq.map(Values.show).mkString("(", ", ", ")")).mkString(" ") +
      (if (rows.size > 3) " ..." else "")
  }

  /** A SQL statement on the table (`$t` stands for it). */
  final case class Sql(statement: String, override val features: Set[String]) extends Op {
    def describe: String = statement
  }

  /** MERGE of `rows` as source `s`: matched ids updated (every third deleted), others inserted. */
  final case class Merge(columns: Seq[Column], rows: Seq[Row], set: String) extends Op {
    def describe: String =
      s"MERGE INTO $$t USING (${rows.size} rows of (${columns.map(_.q).mkString(", ")})) s " +
        s"ON t.id = s.id WHEN MATCHED AND s.id % 3 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET " +
        s"$set WHEN NOT MATCHED THEN INSERT *"
    override def features: Set[String] = Set(Feature.Merge)
  }

  case object Optimize extends Op {
    def describe: String = "OPTIMIZE"
    override def features: Set[String] = Set(Feature.Optimize)
  }

  /** A checkpoint: classic (one file), multi-part, or V2 with sidecars. */
  final case class Checkpoint(kind: String) extends Op {
    def describe: String = s"checkpoint ($kind)"
    override def features: Set[String] = Set(kind match {
      case "multi-part" => Feature.MultiPart
      case "v2" => Feature.V2
      case _ => Feature.Classic
    })
  }

  /** Log cleanup: commits and checkpoints older than the newest checkpoint deleted. */
  case object Cleanup extends Op {
    def describe: String = "log cleanup (files before the newest checkpoint deleted)"
    override def features: Set[String] = Set(Feature.Cleanup)
  }
}

/** The table after a step of its history: its version and columns. */
final case class Step(version: Long, columns: Seq[Column], op: Option[Op])

/**
 * A generated Delta table: its first columns, table properties, session time zone and history (each
 * step with the columns after it). Every table has a unique `id BIGINT` first; [[build]] writes it
 * with delta-spark, step by step; [[describe]] is the recipe a difference report prints.
 */
final case class TableRecipe(
    seed: Long,
    columns: Seq[Column],
    properties: Map[String, String],
    timeZone: String,
    ops: Seq[(Op, Seq[Column])]
) {

  def features: Set[String] = {
    val kinds = (columns ++ ops.flatMap(_._2)).toSet
    Set(
      Some(Feature.CmName).filter(_ => properties.get(Cm).contains("name")),
      Some(Feature.CmId).filter(_ => properties.get(Cm).contains("id")),
      Some(Feature.Dv).filter(_ => properties.get(DvKey).contains("true")),
      Some(Feature.QuotedNames).filter(_ =>
        kinds.exists(c =>
          c.q != s"`${c.name}`" ||
            !c.name.forall(ch => ch.isLetterOrDigit || ch == '_')
        )
      ),
      Some(Feature.Nested).filter(_ => kinds.exists(_.kind.nested)),
      Some(Feature.GeneratedPartition).filter(_ => kinds.exists(_.generatedAs.isDefined)),
      Some(Feature.StatsJsonOnly)
        .filter(_ => properties.get("delta.checkpoint.writeStatsAsStruct").contains("false")),
      Some(Feature.TimeZone).filter(_ => timeZone != "UTC")
    ).flatten ++ kinds.filter(c => c.partition && c.generatedAs.isEmpty).map { c =>
      Feature.partition(c.kind)
    } ++ ops.flatMap(_._1.features)
  }

  private val Cm = "delta.columnMapping.mode"
  private val DvKey = "delta.enableDeletionVectors"

  /** The schema of rows of `cols` (an append's; `id` first, generated columns left out). */
  def schemaOf(cols: Seq[Column]): StructType =
    StructType(StructField("id", LongType, nullable = false) +: cols.map { c =>
      StructField(c.name, c.kind.dataType)
    })

  def createSql(path: String): String = {
    val cols = ("id BIGINT NOT NULL" +: columns.map { c =>
      s"${c.q} ${c.kind.ddl}" + c.generatedAs.fold("")(g => s" GENERATED ALWAYS AS ($g)")
    }).mkString(", ")
    val parts = columns.filter(_.partition)
    val partitioned =
      if (parts.isEmpty) "" else parts.map(_.q).mkString(" PARTITIONED BY (", ", ", ")")
    val props = properties.map { case (k, v) => s"'$k' = '$v'" }.mkString(", ")
    s"CREATE TABLE delta.`$path` ($cols) USING delta$partitioned TBLPROPERTIES ($props)"
  }

  /**
   * Writes the table step by step, calling `after` with each step once it is committed (the reads
   * of one session between changes); returns the steps that were written. A step delta-spark
   * refuses ends the history there.
   */
  def build(spark: SparkSession, path: String)(after: Step => Unit): Seq[Step] = {
    def version() = org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).update().version
    spark.sql(createSql(path)).collect()
    val first = Step(version(), columns, None)
    after(first)
    val steps = Seq.newBuilder[Step] += first
    val it = ops.iterator
    var refused = false
    while (!refused && it.hasNext) {
      val (op, cols) = it.next()
      try {
        apply(spark, path, op)
        val step = Step(version(), cols, Some(op))
        steps += step
        after(step)
      } catch {
        case scala.util.control.NonFatal(e)
            if !e.isInstanceOf[org.scalatest.exceptions.TestFailedException] =>
          System.err.println(
            s"differential: seed $seed: '${op.describe}' not written: " +
              e.getMessage.take(300)
          )
          refused = true
      }
    }
    steps.result()
  }

  private def apply(spark: SparkSession, path: String, op: Op): Unit = op match {
    case Op.Append(cols, rows, files) =>
      spark
        .createDataFrame(rows.asJava, schemaOf(cols.filter(_.generatedAs.isEmpty)))
        .repartition(files)
        .write
        .format("delta")
        .mode("append")
        .save(path)
    case Op.Sql(statement, _) => spark.sql(statement.replace("$t", s"delta.`$path`")).collect()
    case m @ Op.Merge(cols, rows, set) =>
      val view = s"dr_merge_${math.abs(seed)}"
      spark
        .createDataFrame(rows.asJava, schemaOf(cols.filter(_.generatedAs.isEmpty)))
        .createOrReplaceTempView(view)
      try
        spark
          .sql(
            s"MERGE INTO delta.`$path` t USING $view s ON t.id = s.id " +
              s"WHEN MATCHED AND s.id % 3 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET $set " +
              "WHEN NOT MATCHED THEN INSERT " +
              cols.filter(_.generatedAs.isEmpty).map(_.q).mkString("(id, ", ", ", ")") +
              cols
                .filter(_.generatedAs.isEmpty)
                .map(c => s"s.${c.q}")
                .mkString(" VALUES (s.id, ", ", ", ")")
          )
          .collect()
      finally spark.catalog.dropTempView(view)
      val _ = m
    case Op.Optimize => spark.sql(s"OPTIMIZE delta.`$path`").collect()
    case Op.Checkpoint(kind) =>
      val log = org.apache.spark.sql.delta.DeltaLog.forTable(spark, path)
      kind match {
        case "multi-part" =>
          spark.conf.set("spark.databricks.delta.checkpoint.partSize", "2")
          try log.checkpoint()
          finally spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
        case "v2" =>
          spark.sql(
            s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')"
          )
          spark.conf.set("spark.databricks.delta.checkpoint.partSize", "2")
          try org.apache.spark.sql.delta.DeltaLog.forTable(spark, path).checkpoint()
          finally spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
        case _ => log.checkpoint()
      }
    case Op.Cleanup =>
      // as delta-spark's metadata cleanup leaves a log: everything before the newest checkpoint
      val logDir = new File(path, "_delta_log")
      // a log file's version: its name's first 20 digits (Hadoop's ".name.crc" files go with it)
      def version(f: File): Option[Long] = {
        val n = f.getName.stripPrefix(".")
        if (n.length > 20 && n.take(20).forall(_.isDigit)) Some(n.take(20).toLong) else None
      }
      val files = logDir.listFiles().toSeq
      val newest = files.filter(_.getName.contains(".checkpoint.")).flatMap(version).maxOption
      newest.foreach(cp => files.filter(f => version(f).exists(_ < cp)).foreach(_.delete()))
      org.apache.spark.sql.delta.DeltaLog.clearCache()
  }

  def describe(path: String): String =
    (Seq(s"-- table (seed $seed, session time zone $timeZone)", createSql(path)) ++
      ops.map("-- " + _._1.describe.replace("$t", s"delta.`$path`"))).mkString("\n")
}

/**
 * Random tables with histories that change them: columns of every kind (nested ones too, names that
 * need quoting), partitions of every type the issue names and a generated one, deletion vectors,
 * column mapping, checkpoints of every kind, log cleanup; schema changes between reads (ADD, DROP,
 * RENAME, DROP then ADD of one name, type widening, statistics settings, deletion vectors or column
 * mapping enabled part-way), UPDATE, MERGE, DELETE, OPTIMIZE.
 */
object Tables {

  /** Table settings the generator decides first (a profile of the short run may force them). */
  final case class Shape(
      columnMapping: String, // none, name, id
      deletionVectors: Boolean,
      quotedNames: Boolean,
      nested: Boolean,
      partitions: Seq[ColumnType],
      generatedPartition: Boolean,
      statsJsonOnly: Boolean,
      timeZone: String,
      steps: Int,
      include: Seq[String] = Nil
  )

  /** The steps drawn at random, as often as listed. */
  private val Actions: IndexedSeq[String] = (Seq.fill(5)("append") ++ Seq(
    Feature.Delete,
    Feature.Delete,
    Feature.Update,
    Feature.Merge,
    Feature.Optimize,
    "checkpoint",
    "checkpoint",
    Feature.Cleanup,
    Feature.Add,
    Feature.Drop,
    Feature.DropThenAdd,
    Feature.Rename,
    Feature.Widen,
    Feature.IndexedCols,
    Feature.StatsColumns,
    Feature.DvLater,
    Feature.CmLater
  )).toIndexedSeq

  val TimeZones: Seq[String] = Seq("UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham")

  def randomShape(r: Random): Shape = Shape(
    columnMapping = Seq("none", "none", "name", "id")(r.nextInt(4)),
    deletionVectors = r.nextBoolean(),
    quotedNames = r.nextInt(3) == 0,
    nested = r.nextInt(3) == 0,
    partitions = r.shuffle(ColumnType.partitionTypes).take(r.nextInt(3)),
    generatedPartition = r.nextInt(5) == 0,
    statsJsonOnly = r.nextInt(4) == 0,
    timeZone = TimeZones(r.nextInt(TimeZones.size)),
    steps = 4 + r.nextInt(6)
  )

  /** Names: plain, or (with `quoted`) with spaces, dots, `;`, `=`, backticks where allowed. */
  private def names(r: Random, quoted: Boolean, cm: Boolean): Iterator[String] = {
    // without column mapping delta-spark refuses " ,;{}()\n\t=" in names
    val odd = if (cm) Seq("c d", "e.f", "g;h=", "i`j", "k,l") else Seq("e.f", "i`j")
    Iterator
      .from(0)
      .map(i => if (quoted && r.nextInt(2) == 0) s"${odd(r.nextInt(odd.size))}$i" else s"c$i")
  }

  /**
   * A generator seeded by `seed` mixed (SplitMix64's finalizer). `java.util.Random`'s first draws
   * of nearby seeds agree: its seed is scrambled by a multiply whose effect on the high bits moves
   * slowly, so `nextInt(4)` of `new Random(s)` was the same for thousands of consecutive `s`, and
   * every table of a fuzz run (consecutive seeds) got the same column mapping choice (none, in
   * every run until 2026-11-28).
   */
  def random(seed: Long): Random = {
    var z = seed + 0x9e3779b97f4a7c15L
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    new Random(z ^ (z >>> 31))
  }

  def generate(seed: Long, shape: Option[Shape] = None): TableRecipe = {
    val r = random(seed)
    val s = shape.getOrElse(randomShape(r))
    val cm = s.columnMapping != "none"
    val name = names(r, s.quotedNames, cm)
    var uid = 0
    def column(kind: ColumnType, partition: Boolean, generated: Option[String] = None) = {
      uid += 1
      Column(uid, name.next(), kind, partition, generated)
    }
    val leafTypes = r.shuffle(ColumnType.all).take(3 + r.nextInt(3))
    val nestedTypes = if (s.nested) r.shuffle(ColumnType.nestedTypes).take(2) else Nil
    val data = (leafTypes ++ nestedTypes).map(t => column(t, partition = false))
    val parts = s.partitions.map(t => column(t, partition = true))
    val generated =
      if (!s.generatedPartition) Nil
      else Seq(column(ColumnType.Long_, partition = true, Some("id % 3")))
    val columns = data ++ parts ++ generated
    val properties = Map.newBuilder[String, String]
    properties += "delta.checkpointInterval" -> (3 + r.nextInt(4)).toString
    if (s.deletionVectors) properties += "delta.enableDeletionVectors" -> "true"
    if (cm) properties += "delta.columnMapping.mode" -> s.columnMapping
    if (s.statsJsonOnly) properties += "delta.checkpoint.writeStatsAsStruct" -> "false"
    if (r.nextInt(3) == 0) properties += "delta.enableTypeWidening" -> "true"
    val props = properties.result()

    // the history, with the columns after each step (a schema change updates `current` before
    // its step is added, so the step's queries name the columns the table has after it)
    var current = columns
    var nextId = 0L
    var cmOn = cm
    var dvOn = s.deletionVectors
    var widening = props.get("delta.enableTypeWidening").contains("true")
    var checkpoints = 0
    var v2 = false
    val pools = scala.collection.mutable.Map.empty[Int, IndexedSeq[Any]]
    def pool(c: Column) = pools.getOrElseUpdate(c.uid, Values.pool(c.kind, r))
    def row(id: Long): Row = Row.fromSeq(id +: current.filter(_.generatedAs.isEmpty).map { c =>
      // partition columns take few distinct values, so files share them
      val v = if (c.partition) Values.pick(pool(c).take(4), r) else Values.pick(pool(c), r)
      if (r.nextInt(8) == 0) null else v
    })
    def rows(n: Int): Seq[Row] = Seq.fill(n) { nextId += 1; row(nextId) }
    // a MERGE source: a few ids the table may hold (distinct), and one new
    def mergeRows(): Seq[Row] =
      r.shuffle((1L to nextId).toVector).take(3).map(row) ++ rows(1)
    def leaf(c: Column) = !c.kind.nested && c.generatedAs.isEmpty
    val ops = Seq.newBuilder[(Op, Seq[Column])]
    def add(op: Op): Unit = ops += op -> current
    def sql(statement: String, features: String*): Unit = add(Op.Sql(statement, features.toSet))
    // a TIMESTAMP_NTZ column added later needs the table feature first (CREATE enables it itself)
    var ntz = columns.exists(_.kind.ddl.contains("TIMESTAMP_NTZ"))
    def ntzFor(kind: ColumnType): Unit =
      if (!ntz && kind.ddl.contains("TIMESTAMP_NTZ")) {
        sql("ALTER TABLE $t SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")
        ntz = true
      }
    // a drawn checkpoint is V2 only where the shape asks for no classic kind (V2 stays V2)
    val randomKinds =
      if (s.include.exists(Set(Feature.Classic, Feature.MultiPart))) Seq("classic", "multi-part")
      else Seq("classic", "multi-part", "v2")
    add(Op.Append(current, rows(5 + r.nextInt(15)), 1 + r.nextInt(3)))
    // the steps: drawn at random, with the ones the shape asks for put in, in their order
    val drawn = Seq.fill(s.steps)(Actions(r.nextInt(Actions.size)))
    val plan = s.include.foldLeft(drawn) { (acc, a) =>
      val at = acc.lastIndexWhere(s.include.contains) + 1
      val pos = at + r.nextInt(acc.size - at + 1)
      acc.take(pos) ++ Seq(a, "append") ++ acc.drop(pos)
    }
    plan.foreach { action =>
      val data = current.filter(c => !c.partition && c.generatedAs.isEmpty)
      action match {
        case "append" => add(Op.Append(current, rows(1 + r.nextInt(12)), 1 + r.nextInt(2)))
        case Feature.Delete =>
          sql(s"DELETE FROM $$t WHERE id % ${2 + r.nextInt(4)} = ${r.nextInt(2)}", Feature.Delete)
        case Feature.Update =>
          val c = current.filter(leaf)(r.nextInt(current.count(leaf)))
          val v = Values.pick(pool(c), r)
          sql(
            s"UPDATE $$t SET ${c.q} = ${c.kind.literal(v)} WHERE id % 3 = ${r.nextInt(3)}",
            Feature.Update
          )
        case Feature.Merge =>
          val set = data.filter(leaf).take(2).map(c => s"t.${c.q} = s.${c.q}")
          // delta-spark's MERGE cannot resolve a column whose name holds a dot (`e.f3`): the
          // history would end there
          if (set.nonEmpty && !current.exists(_.name.contains(".")))
            add(Op.Merge(current, mergeRows(), set.mkString(", ")))
        case Feature.Optimize => add(Op.Optimize)
        case Feature.Classic | Feature.MultiPart | Feature.V2 | "checkpoint" =>
          checkpoints += 1
          // once the table takes V2 checkpoints, every checkpoint is one
          val kind =
            if (v2 || action == Feature.V2) "v2"
            else if (action == Feature.MultiPart) "multi-part"
            else if (action == Feature.Classic) "classic"
            else randomKinds(r.nextInt(randomKinds.size))
          v2 = kind == "v2"
          add(Op.Checkpoint(kind))
        case Feature.Cleanup if checkpoints > 0 => add(Op.Cleanup)
        case Feature.Add | Feature.Cleanup =>
          val kind = r.shuffle(ColumnType.all ++ ColumnType.nestedTypes.take(1)).head
          val c = column(kind, partition = false)
          ntzFor(kind)
          current = current :+ c
          sql(s"ALTER TABLE $$t ADD COLUMNS (${c.q} ${kind.ddl})", Feature.Add)
        case Feature.Drop if cmOn && data.size > 1 =>
          val c = data(r.nextInt(data.size))
          current = current.filterNot(_.uid == c.uid)
          sql(s"ALTER TABLE $$t DROP COLUMN ${c.q}", Feature.Drop)
        case Feature.DropThenAdd if cmOn && data.size > 1 =>
          // the same name again: a new column (new physical name and id, no values yet)
          val c = data(r.nextInt(data.size))
          current = current.filterNot(_.uid == c.uid)
          sql(s"ALTER TABLE $$t DROP COLUMN ${c.q}", Feature.Drop)
          val again = { uid += 1; c.copy(uid = uid) }
          current = current :+ again
          sql(s"ALTER TABLE $$t ADD COLUMNS (${again.q} ${c.kind.ddl})", Feature.DropThenAdd)
        case Feature.Rename if cmOn && data.nonEmpty =>
          val c = data(r.nextInt(data.size))
          val renamed = c.copy(name = name.next())
          current = current.map(x => if (x.uid == c.uid) renamed else x)
          sql(s"ALTER TABLE $$t RENAME COLUMN ${c.q} TO ${renamed.q}", Feature.Rename)
        case Feature.Widen =>
          data.filter(c => leaf(c) && c.kind.widened.isDefined) match {
            case Nil => ()
            case candidates =>
              val c = candidates(r.nextInt(candidates.size))
              if (!widening) {
                sql("ALTER TABLE $t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
                widening = true
              }
              val to = c.kind.widened.get
              ntzFor(to)
              current = current.map(x => if (x.uid == c.uid) x.copy(kind = to) else x)
              pools(c.uid) = pool(c).map(v => if (v == null) null else c.kind.widen(v))
              sql(s"ALTER TABLE $$t CHANGE COLUMN ${c.q} TYPE ${to.ddl}", Feature.Widen)
          }
        case Feature.IndexedCols =>
          sql(
            s"ALTER TABLE $$t SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = " +
              s"'${1 + r.nextInt(3)}')",
            Feature.IndexedCols
          )
        case Feature.StatsColumns =>
          // delta-spark refuses statistics columns of types it does not skip on
          val skippable = data.filter(c =>
            leaf(c) && c.kind.dataType != BooleanType && c.kind.dataType != BinaryType
          )
          val cols = r.shuffle(skippable).take(2).map(_.q)
          if (cols.nonEmpty) {
            sql(
              s"ALTER TABLE $$t SET TBLPROPERTIES ('delta.dataSkippingStatsColumns' = " +
                s"'${cols.mkString(",").replace("'", "\\'")}')",
              Feature.StatsColumns
            )
          }
        case Feature.DvLater if !dvOn =>
          sql(
            "ALTER TABLE $t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
            Feature.DvLater
          )
          dvOn = true
        case Feature.CmLater if !cmOn =>
          sql(
            "ALTER TABLE $t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', " +
              "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')",
            Feature.CmLater
          )
          cmOn = true
        case _ => add(Op.Append(current, rows(1 + r.nextInt(8)), 1))
      }
    }
    TableRecipe(seed, columns, props, s.timeZone, ops.result())
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
    case r: Row => r.toSeq.map(show).mkString("{", ", ", "}")
    case m: scala.collection.Map[_, _] =>
      m.toSeq.map { case (k, x) => s"${show(k)}->${show(x)}" }.sorted.mkString("map(", ", ", ")")
    case s: scala.collection.Seq[_] => s.map(show).mkString("[", ", ", "]")
    case other => other.toString
  }
}
