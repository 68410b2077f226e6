package io.deltareplay

import java.io.File
import java.net.ServerSocket

import io.deltareplay.internal.IndexCache
import io.deltareplay.test.{DeltaOracle, S3Proxy}
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.delta.DeltaLog
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

/**
 * Delta tables on an object store, read as users read them: delta-spark writes them to `s3a://` on
 * a real S3-compatible server (s3proxy on 127.0.0.1, started by `scripts/s3proxy.sh`) and this
 * connector reads them through S3A, against delta-spark V1 on the same table at the same version.
 * Bad stores (wrong keys, a missing bucket, an unreachable endpoint, a server stopped between
 * planning and reading) fail with an error naming the path and the setting to fix, never with part
 * of an answer.
 *
 * Kept short (it runs in `./dev test`): one server, a handful of small tables. S3A is pointed at
 * the server with per-bucket keys (`fs.s3a.bucket.<b>.*`) so no other suite of the JVM changes.
 */
class ObjectStoreSuite extends AnyFunSuite with DeltaOracle {

  private val bucket = "delta-replay"
  private val flakyBucket = "flaky" // served by a second instance that a test stops
  private var server: S3Proxy = _
  private var flaky: S3Proxy = _
  private var data: File = _
  private val touched = scala.collection.mutable.Set.empty[String]

  private def hadoopConf = spark.sparkContext.hadoopConfiguration

  private def setHadoop(settings: Map[String, String]): Unit = settings.foreach { case (k, v) =>
    touched += k
    hadoopConf.set(k, v)
  }

  /** Fails fast: one attempt, short timeouts (the unreachable-endpoint cases). */
  private def failFast(b: String): Map[String, String] = Map(
    "attempts.maximum" -> "1",
    "retry.limit" -> "1",
    "retry.interval" -> "10ms",
    "retry.throttle.limit" -> "1",
    "connection.establish.timeout" -> "1s",
    "connection.timeout" -> "2s",
    "connection.request.timeout" -> "2s"
  ).map { case (k, v) => s"fs.s3a.bucket.$b.$k" -> v }

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    server = S3Proxy.start(Seq(bucket, flakyBucket))
    data = new File(server.dir, "data")
    setHadoop(S3Proxy.s3aSettings(bucket, server.endpoint))
    // per-table scratch of executor planning on the store, not on a local disk
    spark.conf.set("spark.deltareplay.planning.scratchDir", s"s3a://$bucket/scratch")
  }

  override protected def afterAll(): Unit =
    try {
      spark.conf.unset("spark.deltareplay.planning.scratchDir")
      touched.foreach(k => hadoopConf.unset(k))
      FileSystem.closeAll() // drop the cached S3A clients of this suite's buckets
      Option(flaky).foreach(_.stop())
      Option(server).foreach(_.stop())
    } finally super.afterAll()

  private var tableNo = 0
  private def newTable(name: String): String = {
    tableNo += 1
    s"s3a://$bucket/$name-$tableNo"
  }

  private def fs(path: String): FileSystem = new Path(path).getFileSystem(hadoopConf)

  private def logNames(path: String): Seq[String] =
    fs(path).listStatus(new Path(path, "_delta_log")).map(_.getPath.getName).toSeq

  private def append(path: String, from: Int, to: Int, props: Map[String, String] = Map.empty) =
    spark
      .range(from, to)
      .selectExpr("id", "cast(id % 4 as string) as p", "concat('v-', id) as v")
      .repartition(2)
      .write
      .format("delta")
      .mode("append")
      .partitionBy("p")
      .options(props)
      .save(path)

  test("partitioned table with deletion vectors: every mode, time travel, live files = V1") {
    val path = newTable("dv")
    val props = Map("delta.enableDeletionVectors" -> "true", "delta.checkpointInterval" -> "2")
    (0 until 3).foreach(i => append(path, i * 50, (i + 1) * 50, props)) // v0-v2, checkpoint at v2
    spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0").collect() // v3: deletion vectors
    append(path, 200, 230) // v4
    assert(logNames(path).exists(_.endsWith(".checkpoint.parquet")), logNames(path))
    val dvFiles = fs(path).listStatus(new Path(path)).map(_.getPath.getName)
    assert(dvFiles.exists(_.startsWith("deletion_vector_")), dvFiles.toSeq)

    val all = assertSameAsV1(path)
    assert(all("local").table.startsWith("s3a://"), all("local"))
    assertSameAsV1(path, query = _.where("p = '1' AND id >= 100"), modes = Seq("distributed"))
    // time travel: commits only (before the checkpoint), and the DELETE's version
    assertSameAsV1(path, version = Some(1), modes = Seq("local"))
    assertSameAsV1(path, version = Some(3), modes = Seq("distributed"))
    assertLiveFilesMatch(path, 4)
  }

  test("executor planning keeps its manifests under a scratch directory on the store") {
    val path = newTable("planning")
    (0 until 3).foreach(i => append(path, i * 40, (i + 1) * 40))
    val scratch = new Path(s"s3a://$bucket/scratch/${spark.sparkContext.applicationId}")
    withReplayMode("executors") {
      val df = ours(path).where("id % 3 = 0")
      assert(sorted(df) === sorted(v1(path).where("id % 3 = 0")))
      val scan = deltaReplayScans(df).head
      assert(scan.metrics.planning.startsWith("executors"), scan.metrics)
      val it = fs(scratch.toString).listFiles(scratch, true)
      val found = Seq.newBuilder[String]
      while (it.hasNext) found += it.next().getPath.toString
      val manifests = found.result().filter(_.endsWith(".parquet"))
      assert(manifests.nonEmpty, s"no manifest under $scratch")
      assert(manifests.forall(_.startsWith(s"s3a://$bucket/scratch/")), manifests)
    }
  }

  test("multi-part checkpoint and V2 checkpoint with sidecars") {
    val multi = newTable("multipart")
    withConf("spark.databricks.delta.checkpoint.partSize" -> "2") {
      (0 until 2).foreach(i => append(multi, i * 30, (i + 1) * 30))
      DeltaLog.forTable(spark, multi).checkpoint()
    }
    append(multi, 500, 510)
    val parts = logNames(multi).filter(_.matches("""\d{20}\.checkpoint\.\d{10}\.\d{10}\.parquet"""))
    assert(parts.size > 1, logNames(multi))
    val m = assertSameAsV1(multi)
    assert(m("local").logSegment.contains("multi-part checkpoint"), m("local").logSegment)

    val v2 = newTable("v2")
    append(v2, 0, 20)
    spark.sql(s"ALTER TABLE delta.`$v2` SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')")
    withConf("spark.databricks.delta.checkpoint.partSize" -> "2") {
      append(v2, 20, 40)
      DeltaLog.forTable(spark, v2).checkpoint()
    }
    append(v2, 600, 610)
    val sidecars = fs(v2).listStatus(new Path(v2, "_delta_log/_sidecars"))
    assert(sidecars.length > 1, s"no sidecars were written: ${sidecars.toSeq}")
    val mv2 = assertSameAsV1(v2)
    assert(mv2("local").logSegment.contains("v2 checkpoint"), mv2("local").logSegment)
    assertLiveFilesMatch(v2, latestVersion(v2))
  }

  test("streaming source: AvailableNow, a commit, AvailableNow again; rows equal V1") {
    val path = newTable("stream")
    (0 until 3).foreach(i => append(path, i * 10, (i + 1) * 10))
    withTempDir { ckpt =>
      val seen = new java.util.concurrent.ConcurrentLinkedQueue[String]()
      def drain(): Int = {
        val q = spark.readStream
          .format("delta")
          .option("maxFilesPerTrigger", "4")
          .load(path)
          .writeStream
          .foreachBatch { (df: DataFrame, _: Long) =>
            sorted(df).foreach(seen.add)
            ()
          }
          .option("checkpointLocation", ckpt.getAbsolutePath)
          .trigger(Trigger.AvailableNow())
          .start()
        try {
          q.awaitTermination()
          val desc = q.recentProgress.flatMap(_.sources.map(_.description)).toSeq
          assert(desc.nonEmpty && desc.forall(_.contains("DeltaReplayMicroBatchStream")), desc)
          q.recentProgress.count(_.numInputRows > 0)
        } finally q.stop()
      }
      def rows = seen.toArray(Array.empty[String]).toSeq.sorted
      assert(drain() > 1, "the initial snapshot came in one batch: maxFilesPerTrigger ignored")
      assert(rows === sorted(v1(path)))
      append(path, 100, 120)
      assert(drain() >= 1)
      assert(rows === sorted(v1(path)))
      assert(rows.size === 50)
    }
  }

  /** The S3A request counters of this suite's bucket: (LIST, HEAD, GET). */
  private def requests(): (Long, Long, Long) = {
    val stats = fs(s"s3a://$bucket/").getStorageStatistics
    def get(k: String): Long = Option(stats.getLong(k)).map(_.longValue).getOrElse(0L)
    (
      get("object_list_request") + get("object_continue_list_request"),
      get("object_metadata_request"),
      get("action_http_get_request")
    )
  }

  test("requests per first read: this connector in each mode next to V1") {
    val path = newTable("requests")
    withConf("spark.databricks.delta.checkpointInterval" -> "5") {
      (0 until 6).foreach(i => append(path, i * 20, (i + 1) * 20))
    }
    def measure(read: => DataFrame): (Long, Long, Long) = {
      DeltaLog.clearCache()
      IndexCache.clear(spark)
      val before = requests()
      read.where("id >= 40").collect()
      val after = requests()
      (after._1 - before._1, after._2 - before._2, after._3 - before._3)
    }
    val rows = Seq("V1" -> measure(v1(path))) ++ replayModes.map { mode =>
      s"delta-replay $mode" -> withReplayMode(mode)(measure(ours(path)))
    }
    val table = rows.map { case (who, (l, h, g)) =>
      f"$who%-24s LIST $l%3d  HEAD $h%3d  GET $g%3d  total ${l + h + g}%3d"
    }
    info(s"S3A requests of a first filtered read (${logNames(path).size} log files):")
    table.foreach(info(_))
    println(("requests per first read:" +: table).mkString("\n  "))
    val (v1List, _, _) = rows.head._2
    val (localList, _, localGet) = rows(1)._2
    assert(v1List > 0 && localGet > 0, rows)
    // one listing of _delta_log per read on the driver, no more than V1's
    assert(localList <= v1List, rows)
  }

  private def expectStoreError(path: String, settings: String*)(read: => Any): String = {
    val started = System.nanoTime()
    val e = intercept[Exception](read)
    val seconds = (System.nanoTime() - started) / 1e9
    val msg = causeMessages(e)
    assert(msg.contains("[delta-replay] Cannot read"), msg)
    assert(msg.contains(path.stripSuffix("/")), msg)
    settings.foreach(s => assert(msg.contains(s), msg))
    assert(
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists {
        case _: DeltaReplayException.StoreAccess => true
        case _ => false
      },
      s"not a StoreAccess error: $msg"
    )
    assert(seconds < 60, f"took $seconds%.1f s to fail")
    msg
  }

  test("wrong keys: a clear error naming the path and the credential settings") {
    val path = newTable("keys")
    append(path, 0, 10)
    val locked = "locked"
    // The same server and data, reached under another bucket name with a wrong secret.
    setHadoop(S3Proxy.s3aSettings(locked, server.endpoint, secret = "not-the-secret"))
    val lockedPath = path.replace(s"s3a://$bucket/", s"s3a://$locked/")
    val msg = expectStoreError(lockedPath, "fs.s3a.access.key", "fs.s3a.secret.key") {
      ours(lockedPath).collect()
    }
    assert(msg.contains("denied"), msg)
  }

  test("a missing bucket: a clear error naming the bucket and fs.s3a.endpoint") {
    val missing = "no-such-bucket"
    setHadoop(S3Proxy.s3aSettings(missing, server.endpoint) ++ failFast(missing))
    val path = s"s3a://$missing/t"
    val msg = expectStoreError(path, "fs.s3a.endpoint", missing)(ours(path).collect())
    assert(msg.contains("does not exist"), msg)
    assert(!msg.contains("is not a Delta table"), msg)
  }

  test("an unreachable endpoint fails fast naming fs.s3a.endpoint") {
    val closed = "closed"
    val port = {
      val s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress);
      try s.getLocalPort
      finally s.close()
    }
    setHadoop(S3Proxy.s3aSettings(closed, s"http://127.0.0.1:$port") ++ failFast(closed))
    val path = s"s3a://$closed/t"
    val msg = expectStoreError(path, "fs.s3a.endpoint", "fs.s3a.retry.limit")(ours(path).collect())
    assert(msg.contains("cannot be reached"), msg)
  }

  test("the server stopped between planning and reading: an error, never part of the answer") {
    // A second instance on the same data serves the flaky bucket; it is stopped mid-read.
    flaky = S3Proxy.start(Seq(flakyBucket), data = Some(data))
    setHadoop(S3Proxy.s3aSettings(flakyBucket, flaky.endpoint) ++ failFast(flakyBucket))
    val path = s"s3a://$flakyBucket/t"
    (0 until 2).foreach(i => append(path, i * 10, (i + 1) * 10))
    withReplayMode("local") {
      val df = ours(path)
      val scan = deltaReplayScans(df).head // planned: the log was read
      assert(scan.metrics.liveFiles > 0)
      flaky.stop()
      flaky = null
      val msg = expectStoreError(path, "fs.s3a.endpoint")(df.collect())
      assert(msg.contains("cannot be reached"), msg)
    }
  }
}
