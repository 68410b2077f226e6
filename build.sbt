// delta-replay: one module, the DataSourceV2 read connector.
// Dependency versions live here; python/delta_replay/_versions.py repeats them for the
// Python side. The project's own version is the other way round: its one source is
// VERSION in python/delta_replay/_versions.py (wheel, __version__ and this jar).

val scala213 = "2.13.18" // the scala-library inside pyspark 4.2.0
val sparkVersion = "4.2.0"
// delta-spark 4.4.1 is on PyPI; on Maven Central the newest build for Spark 4.2 is 4.4.0.
val deltaVersion = "4.4.0"
val scalatestVersion = "3.2.19"

ThisBuild / organization := "io.deltareplay"
ThisBuild / version := {
  val source = (ThisBuild / baseDirectory).value / "python" / "delta_replay" / "_versions.py"
  val pep440 = """(?m)^VERSION = "([^"]+)"""".r
    .findFirstMatchIn(IO.read(source))
    .map(_.group(1))
    .getOrElse(sys.error(s"no VERSION line in $source"))
  pep440.replaceFirst("""\.dev\d+$""", "-SNAPSHOT") // Maven's spelling of a dev version
}
ThisBuild / scalaVersion := scala213
ThisBuild / resolvers := Seq(Resolver.DefaultMavenRepository)

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
      "org.scalatest" %% "scalatest" % scalatestVersion % Test
    ),
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
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
    Test / fork := true,
    Test / parallelExecution := false,
    Test / testForkedParallel := false,
    Test / envVars := Map(
      "SPARK_HOME" -> sparkHome.value.getAbsolutePath,
      "SPARK_SCALA_VERSION" -> "2.13",
      "SPARK_LOCAL_IP" -> "127.0.0.1"
    ),
    Test / javaOptions ++= jdk17Opens ++ Seq(
      "-Xmx4g",
      "-Xss4m",
      "-XX:+UseG1GC",
      "-Dfile.encoding=UTF-8",
      "-Dspark.ui.enabled=false",
      "-Dspark.sql.shuffle.partitions=4",
      "-Dspark.ui.showConsoleProgress=false",
      s"-Dspark.sql.warehouse.dir=${(target.value / "spark-warehouse").getAbsolutePath}",
      s"-Dderby.system.home=${(target.value / "derby").getAbsolutePath}",
      s"-Dlog4j2.configurationFile=${(Test / resourceDirectory).value / "log4j2-test.properties"}"
    ),
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
    // One JVM holds one SparkContext: every *ClusterSuite (and *SmallHeapSuite) forks into its own JVM,
    // everything else shares one JVM (and one SparkSession).
    Test / testGrouping := {
      val tests = (Test / definedTests).value
      val opts = (Test / javaOptions).value.toVector
      val env = (Test / envVars).value
      def group(name: String, ts: Seq[TestDefinition]) =
        Tests.Group(
          name,
          ts,
          Tests.SubProcess(ForkOptions().withRunJVMOptions(opts).withEnvVars(env))
        )
      // *SmallHeapSuite: own JVM with a 1 GB heap (driver-memory bounds).
      def smallHeap(name: String, ts: Seq[TestDefinition]) = Tests.Group(
        name,
        ts,
        Tests.SubProcess(
          ForkOptions()
            .withRunJVMOptions(opts.filterNot(_.startsWith("-Xmx")) :+ "-Xmx1g")
            .withEnvVars(env)
        )
      )
      val (cluster, rest) = tests.partition(_.name.endsWith("ClusterSuite"))
      val (small, local) = rest.partition(_.name.endsWith("SmallHeapSuite"))
      val localGroup = if (local.isEmpty) Nil else Seq(group("local", local))
      localGroup ++ cluster.map(t => group(t.name, Seq(t))) ++ small.map(t =>
        smallHeap(t.name, Seq(t))
      )
    },
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    publishMavenStyle := true,
    Compile / packageDoc / publishArtifact := false,
    pomIncludeRepository := (_ => false)
  )

lazy val root = (project in file("."))
  .aggregate(connector)
  .settings(publish / skip := true, publishLocal / skip := true, publishM2 / skip := true)
