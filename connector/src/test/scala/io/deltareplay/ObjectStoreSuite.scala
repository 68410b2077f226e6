package io.deltareplay

import java.io.File
import java.net.ServerSocket

import io.deltareplay.internal.index.IndexCache
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
      // Close this suite's S3A clients (only those: closing all would run other file systems'
      // deleteOnExit), then drop its settings.
      touched.map(_.split('.')(3)).foreach { b =>
        scala.util.Try(FileSystem.get(new java.net.URI(s"s3a://$b/"), hadoopConf).close())
      }
      touched.foreach(k => hadoopConf.unset(k))
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

  /**
   * Partitioned, deletion vectors, a classic checkpoint: v0-v2 appends, v3 a DELETE writing
   * deletion vectors (checkpoint at v3), v4 an append. Shared by the tests that read it.
   */
  private lazy val dvTable: String = {
    val path = newTable("dv")
    val props = Map("delta.enableDeletionVectors" -> "true", "delta.checkpointInterval" -> "3")
    (0 until 3).foreach(i => append(path, i * 50, (i + 1) * 50, props))
    spark.sql(s"DELETE FROM delta.`$path` WHERE id % 7 = 0").collect()
    append(path, 200, 230)
    path
  }

  test("partitioned table with deletion vectors: every mode, time travel, live files = V1") {
    val path = dvTable
    assert(logNames(path).exists(_.endsWith(".checkpoint.parquet")), logNames(path))
    val dvFiles = fs(path).listStatus(new Path(path)).map(_.getPath.getName)
    assert(dvFiles.exists(_.startsWith("deletion_vector_")), dvFiles.toSeq)

    val all = assertSameAsV1(path)
    assert(all("local").table.startsWith("s3a://"), all("local"))
    assertSameAsV1(path, query = _.where("p = '1' AND id >= 100"), modes = Seq("distributed"))
    // time travel: commits only (before the checkpoint), and the checkpoint's version (the DELETE)
    assertSameAsV1(path, version = Some(1), modes = Seq("local"))
    assertSameAsV1(path, version = Some(3), modes = Seq("distributed"))
    assertLiveFilesMatch(path, 4)
  }

  test("executor planning keeps its manifests under a scratch directory on the store") {
    val path = dvTable
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

  test("a multi-part checkpoint, then a V2 checkpoint with sidecars, on one table") {
    val path = newTable("checkpoints")
    withConf("spark.databricks.delta.checkpoint.partSize" -> "2") {
      (0 until 2).foreach(i => append(path, i * 30, (i + 1) * 30)) // v0, v1
      DeltaLog.forTable(spark, path).checkpoint() // multi-part at v1
      spark.sql(s"ALTER TABLE delta.`$path` SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')")
      append(path, 100, 120) // v3
      DeltaLog.forTable(spark, path).checkpoint() // V2 with sidecars at v3
    }
    append(path, 500, 510) // v4
    val parts = logNames(path).filter(_.matches("""\d{20}\.checkpoint\.\d{10}\.\d{10}\.parquet"""))
    assert(parts.size > 1, logNames(path))
    val sidecars = fs(path).listStatus(new Path(path, "_delta_log/_sidecars"))
    assert(sidecars.length > 1, s"no sidecars were written: ${sidecars.toSeq}")

    val latest = assertSameAsV1(path)
    assert(latest("local").logSegment.contains("v2 checkpoint"), latest("local").logSegment)
    val v2 = assertSameAsV1(path, version = Some(2), modes = Seq("local", "distributed"))
    assert(v2("local").logSegment.contains("multi-part checkpoint"), v2("local").logSegment)
    assertLiveFilesMatch(path, 4)
  }

  test("streaming source: AvailableNow, a commit, AvailableNow again; rows equal V1") {
    val path = newTable("stream")
    (0 until 3).foreach(i => append(path, i * 10, (i + 1) * 10))
    withTempDir { ckpt =>
      val seen = new java.util.concurrent.ConcurrentLinkedQueue[Seq[Any]]()
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
      def rows = seen.toArray(Array.empty[Seq[Any]]).toSeq.sortBy(_.mkString("|"))
      assert(drain() > 1, "the initial snapshot came in one batch: maxFilesPerTrigger ignored")
      assert(rows === sorted(v1(path)))
      append(path, 100, 120)
      assert(drain() >= 1)
      assert(rows === sorted(v1(path)))
      assert(rows.size === 50)
    }
  }

  /**
   * Requests this suite's S3A client made so far, from its IOStatistics: LIST, HEAD, GET and the
   * total (every request the SDK executed, as counted by S3A's auditing). S3A 3.5 reads through the
   * analytics stream, whose GETs are not all in `action_http_get_request`, so GETs are the total
   * less the other kinds. The listings the connector sends through S3A's S3 client itself
   * ([[io.deltareplay.internal.log.S3Listing]], a LIST from a key on) are not in these statistics:
   * they are added from its own count.
   */
  private def requests(): Map[String, Long] = {
    val io = fs(s"s3a://$bucket/")
      .asInstanceOf[org.apache.hadoop.fs.statistics.IOStatisticsSource]
      .getIOStatistics
      .counters()
    def get(k: String): Long = Option(io.get(k)).map(_.longValue).getOrElse(0L)
    val list = get("object_list_request") + get("object_continue_list_request")
    val head = get("object_metadata_request")
    val writes = get("object_put_request") + get("object_delete_request") +
      get("object_bulk_delete_request") + get("multipart_upload_started")
    val total = get("audit_request_execution")
    val ours = _root_.io.deltareplay.internal.log.S3Listing.requests.get()
    Map(
      "LIST" -> (list + ours),
      "HEAD" -> head,
      "GET" -> (total - list - head - writes),
      "PUT/DELETE" -> writes,
      "total" -> (total + ours)
    )
  }

  test("requests per first read: this connector in each mode next to V1") {
    val path = dvTable
    def measure(read: => DataFrame): Map[String, Long] = {
      DeltaLog.clearCache()
      IndexCache.clear(spark)
      // A new S3A client: counters and the analytics stream's block cache start empty, so a read
      // is not served from what the previous reader fetched.
      fs(path).close()
      val before = requests()
      val started = System.nanoTime()
      read.where("id >= 40").collect()
      val ms = (System.nanoTime() - started) / 1000000
      val after = requests()
      after.map { case (k, v) => k -> (v - before(k)) } + ("ms" -> ms)
    }
    val rows = Seq("V1" -> measure(v1(path))) ++ replayModes.map { mode =>
      s"delta-replay $mode" -> withReplayMode(mode)(measure(ours(path)))
    }
    val kinds = Seq("LIST", "HEAD", "GET", "PUT/DELETE", "total")
    val table = rows.map { case (who, n) =>
      f"$who%-24s " + kinds.map(k => f"$k ${n(k)}%3d").mkString("  ") + f"  (${n("ms")}%5d ms)"
    }
    // With S3PROXY_LATENCY set (e.g. "cloud") the server adds per-request latency: the times
    // are then those of a cloud-like store (printed, never asserted).
    val latency = sys.env.get("S3PROXY_LATENCY").filter(_.nonEmpty).fold("")(l => s", latency $l")
    info(s"S3A requests of a first filtered read (${logNames(path).size} log files$latency):")
    table.foreach(info(_))
    val oracle = rows.head._2
    val local = rows(1)._2
    assert(oracle("LIST") > 0 && oracle("GET") > 0 && local("GET") > 0, rows)
    // one listing of _delta_log per read on the driver, no more than V1's
    assert(local("LIST") <= oracle("LIST"), rows)
    // Planned on the driver, a first read asks about as much of the store as V1's (the same log
    // and data files; a 10% margin so a HEAD more or less is not a failure). Executor planning
    // adds its manifests' writes and reads, and the Cleaner's deletes of older plans' manifests
    // may fall in its window: printed, not asserted.
    Seq(rows(1), rows(2)).foreach { case (who, n) =>
      assert(n("total") <= oracle("total") * 11 / 10, s"$who: $rows")
    }
  }

  test(
    "requests of a re-plan after one commit: one listing and the new commit, not the tail again"
  ) {
    // A checkpoint at v2 and three commits after it that hold no protocol or metaData.
    val path = newTable("replan")
    (0 until 3).foreach(i => append(path, i * 10, (i + 1) * 10))
    DeltaLog.forTable(spark, path).checkpoint()
    (3 until 6).foreach(i => append(path, i * 10, (i + 1) * 10))
    assert(logNames(path).exists(_.endsWith("02.checkpoint.parquet")), logNames(path))
    // `id = -1` matches no file's statistics: the read is planning only, no data file is read.
    def replan(): Map[String, Long] = {
      ours(path).where("id = -1").collect() // this version planned, index and metadata cached
      append(path, 1000, 1010)
      val before = requests()
      assert(ours(path).where("id = -1").collect().isEmpty)
      val after = requests()
      after.map { case (k, v) => k -> (v - before(k)) }
    }
    IndexCache.clear(spark)
    val cached = replan()
    val uncached = withConf("spark.deltareplay.replay.stateCache.enabled" -> "false")(replan())
    info(s"re-plan after one commit, cache on:  $cached")
    info(s"re-plan after one commit, cache off: $uncached")
    // The DataFrame's load lists _delta_log once; its planning (which reads the newest version
    // again, as V1 does) asks only whether the load's newest commit is unchanged and the next one
    // absent (two HEADs, TableSnapshot.newest); the new commit is read once, for the metadata, and
    // the index roll-forward finds it in memory (CommitTexts), opened with its listed status.
    // Without the caches both loads read the three older commits and the checkpoint again, and
    // the replay reads them a third time.
    assert(cached("LIST") == 1, cached)
    assert(cached("HEAD") <= 2, cached)
    assert(cached("GET") <= 4 && cached("GET") < uncached("GET"), s"$cached; uncached $uncached")
    assertSameAsV1(path, modes = Seq("auto"))
  }

  private def expectStoreError(path: String, settings: String*)(read: => Any): String = {
    val started = System.nanoTime()
    val e = intercept[Exception](read)
    val seconds = (System.nanoTime() - started) / 1e9
    val msg = causeMessages(e)
    assert(msg.contains("[DELTA_REPLAY_STORE_ACCESS] Cannot read"), msg)
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
