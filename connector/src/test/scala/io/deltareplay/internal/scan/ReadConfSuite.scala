package io.deltareplay.internal.scan

import io.deltareplay.{DeltaReplayException, DeltaReplayOptions => O}
import io.deltareplay.internal.planning.{PlanningMode, ReadPolicy}
import io.deltareplay.internal.replay.ReplayMode
import io.deltareplay.test.SharedSparkSession
import org.apache.spark.storage.StorageLevel
import org.scalatest.funsuite.AnyFunSuite

/** Settings: read option over session key over default; bad values name the key. */
class ReadConfSuite extends AnyFunSuite with SharedSparkSession {

  private def withSession[T](key: String, value: String)(body: => T): T = {
    spark.conf.set(O.SessionPrefix + key, value)
    try body
    finally spark.conf.unset(O.SessionPrefix + key)
  }

  test("defaults, then session keys, then read options (keys case-insensitive)") {
    val defaults = ReadConf(spark, Map.empty)
    assert(defaults.replayMode === ReplayMode.Auto && defaults.planningMode === PlanningMode.Auto)
    // unset, the index on the executors is kept on disk where they are the driver's JVM
    assert(spark.sparkContext.master.startsWith("local["))
    assert(defaults.indexStorageLevel === StorageLevel.DISK_ONLY)
    withSession(O.IndexStorageLevel, "MEMORY_AND_DISK") {
      assert(ReadConf(spark, Map.empty).indexStorageLevel === StorageLevel.MEMORY_AND_DISK)
    }
    assert(
      ReadConf(spark, Map("INDEX.storageLevel" -> "memory_and_disk")).indexStorageLevel ===
        StorageLevel.MEMORY_AND_DISK
    )
    assert(Seq("local", "local[2]", "local[*]").forall(ReadConf.executorsInDriver))
    assert(
      !Seq("local-cluster[2,1,1024]", "yarn", "spark://h:7077").exists(ReadConf.executorsInDriver)
    )
    assert(defaults.stateCacheBudgetBytes === Runtime.getRuntime.maxMemory() / 10)
    withSession(O.ReplayMode, "local") {
      assert(ReadConf(spark, Map.empty).replayMode === ReplayMode.Local)
      assert(
        ReadConf(spark, Map("REPLAY.MODE" -> "Distributed")).replayMode === ReplayMode.Distributed
      )
    }
    assert(
      ReadConf(spark, Map("index.storagelevel" -> "disk_only")).indexStorageLevel ===
        StorageLevel.DISK_ONLY
    )
    assert(ReadConf(spark, Map(O.SnapshotSliceFiles -> "12")).snapshotSliceFiles === 12)
  }

  test("the registry's choices of a mode setting are the names its enum parses") {
    def choices(name: String) = O.settingNamed(name).map(_.kind)
    assert(choices(O.ReplayMode) === Some(O.Kind.OneOf(ReplayMode.all.map(_.name): _*)))
    assert(choices(O.PlanningMode) === Some(O.Kind.OneOf(PlanningMode.all.map(_.name): _*)))
  }

  test("a bad value fails naming the option as passed (or the session key), the value, the rule") {
    Seq(
      O.ReplayMode -> "sometimes",
      O.PlanningMode -> "cloud",
      O.DataSkipping -> "yes",
      O.DistributedThresholdBytes -> "16MB",
      O.IndexStorageLevel -> "FAST",
      O.SnapshotSliceFiles -> "0"
    ).foreach { case (key, value) =>
      val e = intercept[DeltaReplayException](ReadConf(spark, Map(key.toUpperCase -> value)))
      assert(e.getMessage.contains(s"for ${key.toUpperCase}:"), e.getMessage)
      assert(!e.getMessage.contains(O.SessionPrefix), e.getMessage)
      assert(e.getMessage.toLowerCase.contains(value.toLowerCase), e.getMessage)
      withSession(key, value) {
        val s = intercept[DeltaReplayException](ReadConf(spark, Map.empty))
        assert(s.getMessage.contains(O.SessionPrefix + key), s.getMessage)
      }
    }
    // out of range: negative counts and sizes
    Seq(O.ReplayPartitions, O.DistributedThresholdBytes, O.PlanningExecutorsMinFiles).foreach {
      key =>
        val e = intercept[DeltaReplayException](ReadConf(spark, Map(key -> "-3")))
        assert(e.getMessage.contains("at least 0"), e.getMessage)
    }
  }

  test(
    "every setting has a default, a session key, and is a read option (session-only ones excepted)"
  ) {
    val keys = O.Settings.map(_.name).toSet
    assert(keys.map(_.toLowerCase).size === keys.size) // one spelling each
    assert(
      O.KnownReadOptions === O.Settings
        .filter(s => s.scope == O.Scope.ReadAndSession || s.scope == O.Scope.Read)
        .map(_.name.toLowerCase)
        .toSet ++ Set("path", "paths")
    )
    assert(
      O.Settings.filter(_.scope == O.Scope.Session).map(_.name).toSet ===
        Set(
          O.Enabled,
          O.RouteAtLoad,
          O.PrefetchTail,
          O.UseChecksum,
          O.ShareHadoopConf,
          O.CheckpointRowSplits
        )
    )
    // every setting with a default accepts it
    O.Settings.foreach(s => s.default.foreach(d => assert(s.kind.accepts(d), s)))
    assert(
      O.EnabledKey === "spark.deltareplay.enabled" && O.PlanningModeKey === "spark.deltareplay.planning.mode"
    )
    // each key as a read option reaches its field
    val set = ReadConf(
      spark,
      Map(
        O.DistributedThresholdBytes -> "5",
        O.ReplayPartitions -> "6",
        O.TailFastPathMaxBytes -> "7",
        O.TailBroadcastMaxBytes -> "11",
        O.DataSkipping -> "FALSE",
        O.StateCache -> "false",
        O.StateCacheMaxBytes -> "8",
        O.StateMaxTailBytes -> "9",
        O.MetadataAggregates -> "false",
        O.CheckpointTwoPass -> "false",
        O.PlanningMode -> " Executors ",
        O.PlanningExecutorsMinFiles -> "10",
        O.PlanningScratchDir -> " /scratch/x "
      )
    )
    assert(
      (set.distributedThresholdBytes, set.replayPartitions, set.tailFastPathMaxBytes) === ((
        5L,
        6,
        7L
      ))
    )
    assert(set.tailBroadcastMaxBytes === 11L)
    assert(
      !set.dataSkipping && !set.stateCache && !set.metadataAggregates && !set.checkpointTwoPass
    )
    assert(
      (set.stateCacheBudgetBytes, set.stateMaxTailBytes, set.executorsMinFiles) === ((8L, 9L, 10L))
    )
    assert(set.planningMode === PlanningMode.Executors && set.scratchDir === "/scratch/x")
    // the read option wins over the session key
    withSession(O.DataSkipping, "false") {
      assert(!ReadConf(spark, Map.empty).dataSkipping)
      assert(ReadConf(spark, Map(O.DataSkipping -> "true")).dataSkipping)
    }
  }

  test("more bad values: whole numbers and booleans name the key") {
    Seq(
      O.StateCacheMaxBytes -> "lots",
      O.PlanningExecutorsMinFiles -> "1e6",
      O.ReplayPartitions -> "1.5",
      O.StateCache -> "maybe",
      O.MetadataAggregates -> "1"
    ).foreach { case (key, value) =>
      val e = intercept[DeltaReplayException.BadOption](ReadConf(spark, Map(key -> value)))
      assert(e.getMessage.contains(s"for $key:") && e.getMessage.contains(value), e.getMessage)
    }
    withSession(O.PlanningMode, "cloud") {
      val e = intercept[DeltaReplayException.BadOption](ReadConf(spark, Map.empty))
      assert(
        e.getMessage.contains(O.PlanningModeKey) && e.getMessage.contains(
          "auto, driver or executors"
        )
      )
    }
  }

  test("executor planning's default scratch directory must be reachable from every executor") {
    def reachable(master: String, userSet: Boolean, scheme: String) =
      ReadPolicy.scratchReachable(master, userSet, scheme)
    // the default on a local disk: fine while executors share this machine
    assert(reachable("local[2]", userSet = false, "file"))
    assert(reachable("local-cluster[2,1,1024]", userSet = false, "file"))
    // refused on a cluster, unless the default file system is shared or the user chose the dir
    assert(!reachable("spark://host:7077", userSet = false, "file"))
    assert(!reachable("yarn", userSet = false, "file"))
    assert(reachable("yarn", userSet = false, "hdfs"))
    assert(reachable("k8s://https://api:443", userSet = true, "file"))
  }

  test("a read's option reaches every component it names: the load's caches, replay, the index") {
    withTempDir { dir =>
      val path = new java.io.File(dir, "t").getAbsolutePath
      (0 until 4).foreach { i =>
        spark
          .range(i * 10, i * 10 + 10)
          .write
          .format("delta")
          .mode("append")
          .option("delta.checkpointInterval", "3")
          .save(path)
      }
      def entries = io.deltareplay.internal.session.SessionState.of(spark).entries
      def cached = entries.filter(_._2 > 0).keySet
      def read(options: Map[String, String]) =
        spark.read.format("delta-replay").options(options).load(path).where("id > 5").collect()
      io.deltareplay.internal.session.SessionState.clear(spark)
      val e = intercept[DeltaReplayException.BadOption](read(Map(O.PrefetchTail -> "false")))
      assert(e.getMessage.contains(O.PrefetchTailKey), e.getMessage)
      withSession(O.PrefetchTail, "false")(read(Map(O.StateCache -> "false")))
      // nothing kept: not the protocol and metadata of the load, not the commit texts or the
      // checkpoint's footers it read, not the index (the session keys say the opposite)
      assert(cached.isEmpty, entries)
      read(Map.empty)
      assert(
        Set("protocol and metadata", "checkpoint footers", "snapshot indexes").subsetOf(cached),
        entries
      )
      // the same option as a session key reaches them too
      io.deltareplay.internal.session.SessionState.clear(spark)
      withSession(O.StateCache, "false")(read(Map.empty))
      assert(cached.isEmpty, entries)
    }
  }

  test("Spark's and delta-spark's own settings are taken at the load and kept for the read") {
    val keys = Seq(
      "spark.sql.files.maxPartitionBytes" -> "4096",
      "spark.sql.files.openCostInBytes" -> "512",
      "spark.sql.files.minPartitionNum" -> "3",
      "spark.sql.shuffle.partitions" -> "7",
      "spark.sql.caseSensitive" -> "true",
      "spark.sql.session.timeZone" -> "Asia/Kolkata",
      "spark.databricks.delta.createDataFrame.dropNullColumns" -> "true",
      "spark.databricks.delta.checkLatestSchemaOnRead" -> "false"
    )
    val before = ReadConf(spark, Map.empty).sparkSettings
    // the shared session's own values come back after (unset would leave Spark's defaults, such
    // as 200 shuffle partitions, to the suites after this one in the JVM)
    val saved = keys.map { case (k, _) => k -> spark.conf.getOption(k) }
    val taken =
      try {
        keys.foreach { case (k, v) => spark.conf.set(k, v) }
        ReadConf(spark, Map.empty).sparkSettings
      } finally
        saved.foreach {
          case (k, Some(v)) => spark.conf.set(k, v)
          case (k, None) => spark.conf.unset(k)
        }
    saved.foreach { case (k, v) => assert(spark.conf.getOption(k) === v, k) }
    assert(
      (taken.maxPartitionBytes, taken.openCostInBytes, taken.minPartitions) === ((4096L, 512L, 3))
    )
    assert(taken.shufflePartitions === 7 && taken.caseSensitive && taken.timeZone == "Asia/Kolkata")
    assert(taken.dropNullColumns && !taken.checkSchemaOnRead)
    assert(!before.dropNullColumns && before.checkSchemaOnRead && !before.caseSensitive)
    // Spark's rule for split sizes, over the settings taken
    assert(taken.maxSplitBytes(3000L) === 1000L) // spread over the 3 minimum partitions
    assert(taken.maxSplitBytes(900L) === 512L) // never below the open cost
    assert(taken.maxSplitBytes(1L << 20) === 4096L) // never above maxPartitionBytes
    // the SQL conf handed to Spark's Parquet reader is the load's, not the session's now
    assert(taken.sql.filesMaxPartitionBytes === 4096L)
    assert(spark.sessionState.conf.filesMaxPartitionBytes !== 4096L)
    // equality (a scan's, for exchange reuse) is by the typed settings, not the conf's identity
    assert(ReadConf(spark, Map.empty).sparkSettings === ReadConf(spark, Map.empty).sparkSettings)
  }
}
