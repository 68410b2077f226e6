package io.deltareplay.internal.log

import scala.util.Random

import io.deltareplay.internal.index.{KeyHash, KeyHasher}
import io.deltareplay.test.SharedSparkSession
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.Row
import org.apache.spark.sql.delta.DeltaInternals
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The replay key and the file a log path names are delta-spark's, on the driver and as a Column; DV
 * unique ids are delta-spark's.
 */
class TablePathsSuite extends AnyFunSuite with SharedSparkSession {

  private val conf = new Configuration()
  private val root = new Path("file:/data/my table #1")
  private val paths = TablePaths(root, FileSystem.getDefaultUri(conf))

  private val tricky = Seq(
    "part-00000-1a2b.snappy.parquet",
    "p=1/part-00000.snappy.parquet",
    "p=a%20b/part-0.parquet",
    "k=p%252F%2520%253D%25251/part-0.parquet",
    "p%3D1/x.parquet",
    "caf%C3%A9/%F0%9F%98%80.parquet",
    "./a/../b.parquet",
    "a//b.parquet",
    "/data/elsewhere/part-1.parquet",
    "/data/my%20table%20%231/part-2.parquet",
    "file:/data/elsewhere/part-3.parquet",
    "file:///data/elsewhere/part-4.parquet",
    "s3a://bucket/t/part-5.parquet",
    "hdfs://nn:8020/t/p=x/part-6.parquet",
    "deletion_vector_1.bin",
    "with+plus/and~tilde.parquet"
  )

  private def generated(n: Int, seed: Long): Seq[String] = {
    val r = new Random(seed)
    val alphabet = "abcXYZ019-_.=/%+~:@ " ++ "é😀Ａ"
    Seq
      .fill(n) {
        val raw = Seq.fill(1 + r.nextInt(20))(alphabet(r.nextInt(alphabet.length))).mkString
        // log paths are URL-encoded: encode what a URI path cannot hold as it is
        new Path(null, null, raw.replace(":", "_")).toUri.toString
      }
      .filter(p => p.nonEmpty && !p.endsWith("/")) // a file path never ends with a slash
  }

  test("the key and the absolute path are delta-spark's, for tricky and generated paths") {
    val roots = Seq(root, new Path("file:///data/t"), new Path("s3a://bucket/a b/t"))
    for (r <- roots; p <- tricky ++ generated(2000, 7)) {
      val paths = TablePaths(r, FileSystem.getDefaultUri(conf))
      assert(paths.key(p) === DeltaInternals.canonicalPath(p, conf), p)
      val expected = DeltaInternals.absolutePath(r, DeltaInternals.canonicalPath(p, conf))
      assert(paths.absolute(p) === expected.toUri.toString, s"$r $p")
    }
  }

  test("the fast path for plain relative paths gives the general rule's answer") {
    val plain = generated(5000, 11).filter(TablePaths.isPlainRelative) ++
      Seq("part-0.parquet", "p=1/q=2/part-0.c000.snappy.parquet", "a.b/c")
    assert(plain.size > 50)
    plain.foreach(p => assert(paths.key(p) === new Path(new java.net.URI(p)).toUri.toString, p))
    Seq("./a", "a/..", "../a", "/a", "a/", "a//b", "a b", "a%20b", "a:b", "").foreach { p =>
      assert(!TablePaths.isPlainRelative(p), p)
    }
  }

  test("a key from a row's bytes, and its hash, are the key's, for tricky and generated paths") {
    val hasher = new KeyHasher(paths)
    val dvs = Seq("", "uab^-aqEH.-t@S}K{vb[*k^@1", "iwi5b=000010000siXQKl0rr9", "p😀")
    for ((raw, i) <- (tricky ++ generated(3000, 5)).zipWithIndex) {
      val bytes = org.apache.spark.unsafe.types.UTF8String.fromString(raw)
      val p = bytes.toString // as a row gives it (a lone UTF-16 surrogate has no UTF-8 form)
      // the bytes in the middle of a larger buffer, as a row's string points into the row
      val utf8 = bytes.getBytes
      val framed = Array[Byte](47, 47) ++ utf8 ++ Array[Byte](47)
      val inRow = org.apache.spark.unsafe.types.UTF8String.fromBytes(framed, 2, utf8.length)
      assert(TablePaths.isPlainRelative(inRow) === TablePaths.isPlainRelative(p), p)
      assert(paths.key(inRow).toString === paths.key(p), p)
      assert((paths.key(inRow) eq inRow) === TablePaths.isPlainRelative(p), p)
      val dv = dvs(i % dvs.size)
      assert(hasher.of(bytes, dv) === KeyHash.of(paths.key(p), dv), s"$p $dv")
    }
  }

  test("the Column key and the driver key agree, paths and DV ids alike") {
    val dvs = Seq(
      DvDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", Some(1), 36, 2L),
      DvDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 40, 3L),
      DvDescriptor("p", "s3a://b/t/deletion_vector_x.bin", Some(0), 20, 1L)
    )
    dvs.foreach { d =>
      assert(
        d.uniqueId ===
          DeltaInternals.dvUniqueId(
            d.storageType,
            d.pathOrInlineDv,
            d.offset,
            d.sizeInBytes,
            d.cardinality
          )
      )
    }
    val rows = (tricky ++ generated(300, 3)).zipWithIndex.map { case (p, i) =>
      Row(p, if (i % 4 == 0) null else dvs(i % dvs.size).toRow)
    }
    val schema = new StructType().add("path", StringType).add("dv", DvDescriptor.Type)
    val df = spark.createDataFrame(java.util.Arrays.asList(rows: _*), schema)
    val keyed = df
      .select(
        col("path"),
        col("dv"),
        FileAction.keyUdf(paths)(col("path")).as("k"),
        FileAction.dvKeyUdf(col("dv")).as("d")
      )
      .collect()
    assert(keyed.length === rows.length)
    keyed.foreach { r =>
      val dv = DvDescriptor.fromRow(r.getAs[Row]("dv"))
      assert(r.getAs[String]("k") === paths.key(r.getAs[String]("path")))
      assert(r.getAs[String]("d") === dv.fold("")(_.uniqueId))
    }
  }
}
