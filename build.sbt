// delta-replay: one module, the DataSourceV2 read connector.
// Dependency versions live here; python/delta_replay/versions.py repeats them for the
// Python side. The project's own version is the other way round: its one source is
// VERSION in python/delta_replay/versions.py (wheel, __version__ and this jar).

val scala213 = "2.13.18" // the scala-library inside pyspark 4.2.0
val sparkVersion = "4.2.0"
// delta-spark 4.4.1 is on PyPI; on Maven Central the newest build for Spark 4.2 is 4.4.0.
val deltaVersion = "4.4.0"
val scalatestVersion = "3.2.19"
// Provided (compiled against, never packaged: a session reading s3a:// brings its own): S3A at the
// Hadoop version bundled with pyspark 4.2.0, with the AWS SDK v2 modules S3A uses instead of the
// 686 MB `bundle`. The connector's S3 log listing (S3Listing) calls them; the object-store tests run
// on them.
val hadoopVersion = "3.5.0"
val awsSdkVersion = "2.35.4" // the SDK version hadoop-aws 3.5.0 is built against

ThisBuild / organization := "io.deltareplay"
ThisBuild / version := {
  val source = (ThisBuild / baseDirectory).value / "python" / "delta_replay" / "versions.py"
  val pep440 = """(?m)^VERSION = "([^"]+)"""".r
    .findFirstMatchIn(IO.read(source))
    .map(_.group(1))
    .getOrElse(sys.error(s"no VERSION line in $source"))
  pep440.replaceFirst("""\.dev\d+$""", "-SNAPSHOT") // Maven's spelling of a dev version
}
ThisBuild / scalaVersion := scala213
ThisBuild / resolvers := Seq(Resolver.DefaultMavenRepository)

// Forked test JVMs running at once (see Test / testGrouping): 2 on this 2-core machine kind;
// DELTAREPLAY_TEST_LANES=N changes it. sbt's default restrictions hold forked test groups to one
// at a time, and a rule added to them cannot loosen that: the list is given whole.
Global / concurrentRestrictions := Seq(
  Tags.limitAll(math.max(2, java.lang.Runtime.getRuntime.availableProcessors)),
  Tags.limit(Tags.ForkedTestGroup, sys.env.get("DELTAREPLAY_TEST_LANES").map(_.toInt).getOrElse(2)),
  Tags.exclusiveGroup(Tags.Clean)
)

// JDK 17 module openings Spark needs (the same list Spark's launcher adds).
val jdk17Opens = Seq(
  "java.base/java.lang",
  "java.base/java.lang.invoke",
  "java.base/java.lang.reflect",
  "java.base/java.io",
  "java.base/java.net",
  "java.base/java.nio",
  "java.base/java.util",
  "java.base/java.util.concurrent",
  "java.base/java.util.concurrent.atomic",
  "java.base/jdk.internal.ref",
  "java.base/sun.nio.ch",
  "java.base/sun.nio.cs",
  "java.base/sun.security.action",
  "java.base/sun.util.calendar"
).map(p => s"--add-opens=$p=ALL-UNNAMED") ++ Seq(
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
)

/** The pyspark installation that local-cluster executors are launched from. */
val sparkHome =
  settingKey[File]("SPARK_HOME for local-cluster test executors (the pyspark package)")

lazy val connector = (project in file("connector"))
  .settings(
    name := "delta-replay-spark",
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-core" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % Provided,
      ("io.delta" % "delta-spark_4.2_2.13" % deltaVersion)
        .excludeAll(ExclusionRule("org.apache.spark")),
      "org.scalatest" %% "scalatest" % scalatestVersion % Test,
      ("org.apache.hadoop" % "hadoop-aws" % hadoopVersion % Provided)
        .excludeAll(
          ExclusionRule("software.amazon.awssdk", "bundle"),
          ExclusionRule("org.apache.hadoop", "hadoop-common"),
          ExclusionRule("org.wildfly.openssl")
        )
    ) ++ Seq("s3", "s3-transfer-manager", "sts", "apache-client").map { m =>
      ("software.amazon.awssdk" % m % awsSdkVersion % Provided)
        .excludeAll(
          // Spark ships these (netty, SLF4J, commons-*); Apache HttpClient comes with them here.
          ExclusionRule("io.netty"),
          ExclusionRule("org.slf4j"),
          ExclusionRule("commons-codec"),
          ExclusionRule("commons-logging")
        )
    },
    scalacOptions ++= Seq(
      "-deprecation",
      "-feature",
      "-unchecked",
      "-release",
      "17",
      // dead code: unused imports, private members, locals, implicits and @nowarn annotations
      "-Wunused:imports,privates,locals,implicits,nowarn"
    ),
    javacOptions ++= Seq("--release", "17"),
    sparkHome := {
      val fromEnv = sys.env.get("SPARK_HOME").map(file)
      fromEnv.getOrElse {
        val venv = (ThisBuild / baseDirectory).value / ".venv" / "lib"
        val found = Option(venv.listFiles()).toSeq.flatten
          .map(_ / "site-packages" / "pyspark")
          .find(_.isDirectory)
        found.getOrElse(venv / "python3.11" / "site-packages" / "pyspark")
      }
    },
    // The version the jar reports (DeltaReplay.version, SQL delta_replay_version()).
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "io" / "deltareplay" / "version.properties"
      IO.write(out, s"version=${version.value}\n")
      Seq(out)
    }.taskValue,
    Test / fork := true,
    Test / testForkedParallel := false,
    Test / envVars := Map(
      "SPARK_HOME" -> sparkHome.value.getAbsolutePath,
      "SPARK_SCALA_VERSION" -> "2.13",
      "SPARK_LOCAL_IP" -> "127.0.0.1"
    ),
    Test / javaOptions ++= jdk17Opens ++ Seq(
      "-Xmx4g",
      "-Xss4m",
      // The parallel collector, not G1: on 2 cores G1's concurrent work competes with the tests
      // for CPU. Measured on five suites (31 tests, two lanes): 218 s with G1, 168 s with this,
      // 177 s with the serial collector. Executors of local-cluster suites get the same flag
      // (SparkSessions.testJvmOptions).
      "-XX:+UseParallelGC",
      "-Dfile.encoding=UTF-8",
      "-Dspark.ui.enabled=false",
      "-Dspark.sql.shuffle.partitions=4",
      "-Dspark.ui.showConsoleProgress=false",
      s"-Dspark.sql.warehouse.dir=${(target.value / "spark-warehouse").getAbsolutePath}",
      s"-Dderby.system.home=${(target.value / "derby").getAbsolutePath}",
      s"-Dlog4j2.configurationFile=${(Test / resourceDirectory).value / "log4j2-test.properties"}",
      // the checkout, for suites that start a project script (scripts/s3proxy.sh)
      s"-Ddeltareplay.test.root=${(ThisBuild / baseDirectory).value.getAbsolutePath}"
    ),
    // Seeded property suites (DataSkippingSuite, BinnerSuite): DELTAREPLAY_TEST_SEED=N replays a
    // printed seed, DELTAREPLAY_TEST_TABLES=N widens DataSkippingSuite's run.
    Test / javaOptions ++= sys.env.toSeq.collect {
      case (k, v) if k.startsWith("DELTAREPLAY_TEST_") =>
        s"-Ddeltareplay.test.${k.stripPrefix("DELTAREPLAY_TEST_").toLowerCase}=$v"
    },
    // Executors of local-cluster suites run in other JVMs launched from SPARK_HOME;
    // they get our classes, the test classes and the non-Spark jars (delta, scalatest).
    Test / javaOptions += {
      val sparkJars =
        Option((sparkHome.value / "jars").listFiles()).toSeq.flatten.map(_.getName).toSet
      val cp = (Test / fullClasspath).value.files.filter { f =>
        f.isDirectory || !sparkJars.contains(f.getName)
      }
      s"-Ddeltareplay.test.executorClasspath=${cp.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator)}"
    },
    // One JVM holds one SparkContext: the *ClusterSuites share one JVM (and its local-cluster
    // session), each *SmallHeapSuite gets its own, and the other suites share two JVMs (one
    // `local[2]` session each), split by their measured run times. Each JVM gets its own
    // warehouse and Derby directories, so catalog tables of suites running at the same time
    // never meet. Few JVMs, because the run keeps both cores busy and its time is its CPU
    // seconds: every JVM compiles Spark's and delta-spark's hot code again (a 40 s suite in its
    // own JVM spent 57 s of CPU in the JIT compilers) and starts its own session; with six
    // shared JVMs and one per cluster suite the Scala side took 1,662 s.
    Test / testGrouping := {
      val tests = (Test / definedTests).value
      val opts = (Test / javaOptions).value.toVector
      val env = (Test / envVars).value
      val scratch = target.value
      def jvm(name: String, heap: Option[String]) = {
        val own = opts
          .filterNot(o => o.startsWith("-Dspark.sql.warehouse.dir=") || o.startsWith("-Dderby."))
          .filterNot(o => heap.isDefined && o.startsWith("-Xmx")) ++ heap.toSeq ++ Seq(
          s"-Dspark.sql.warehouse.dir=${(scratch / "spark-warehouse" / name).getAbsolutePath}",
          s"-Dderby.system.home=${(scratch / "derby" / name).getAbsolutePath}"
        )
        Tests.SubProcess(ForkOptions().withRunJVMOptions(own).withEnvVars(env))
      }
      val (cluster, rest) = tests.partition(_.name.endsWith("ClusterSuite"))
      // *SmallHeapSuite: own JVM with a 1 GB heap (driver-memory bounds).
      val (small, local) = rest.partition(_.name.endsWith("SmallHeapSuite"))
      // Seconds per suite from the JUnit reports of two clean-clone runs (two JVMs at a time
      // beside the Python side; expressions interpreted, SparkSessions.interpreted): `local-1`
      // takes batch reads (410-435), the snapshot index (115-235), executor planning (155-160),
      // the correctness findings (155-200), the differential test's first half, replay rules,
      // errors, metadata aggregates and the metadata cache (~380); `local-2` the rest: streaming
      // (280-340), the object store (125-135), the differential test's second half, routing and
      // the unit suites (~400). sbt starts forked groups in no set order, so `local-1` is about
      // as long as `local-2`, the cluster JVM (~250 s as three JVMs) and the small-heap one
      // (~110 s) together: whichever starts first, the two lanes end close together.
      val first = Set(
        "DifferentialSuite",
        "SnapshotIndexSuite",
        "BatchReadSuite",
        "CorrectnessSuite",
        "ExecutorPlanningSuite",
        "ReplayRulesSuite",
        "ErrorsSuite",
        "MetadataAggregatesSuite",
        "MetaCacheSuite"
      )
      val (one, two) = local.partition(t => first(t.name.split('.').last))
      Seq("local-1" -> one, "local-2" -> two, "cluster" -> cluster)
        .collect { case (name, ts) if ts.nonEmpty => Tests.Group(name, ts, jvm(name, None)) } ++
        small.map(t => Tests.Group(t.name, Seq(t), jvm(t.name, Some("-Xmx1g"))))
    },
    // Forked JVMs run side by side (two at a time: Global / concurrentRestrictions above). A
    // suite drives Spark from one thread most of the time, so a second lane uses the second core.
    Test / parallelExecution := true,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    publishMavenStyle := true,
    Compile / packageDoc / publishArtifact := false,
    pomIncludeRepository := (_ => false)
  )

lazy val root = (project in file("."))
  .aggregate(connector)
  .settings(publish / skip := true, publishLocal / skip := true, publishM2 / skip := true)
