// delta-replay: one module, the DataSourceV2 read connector.
// Dependency versions live here; python/delta_replay/versions.py repeats them for the
// Python side. The project's own version is the other way round: its one source is
// VERSION in python/delta_replay/versions.py (wheel, __version__ and this jar).

// The versions below are the default Spark line's (4.2); `build/sbt -Dspark.line=4.1 ...` (or
// DELTAREPLAY_SPARK=4.1) builds for another line: project/SparkLines.scala.
val scala213 = "2.13.18" // the scala-library inside pyspark 4.2.0
val sparkVersion = "4.2.0"
// delta-spark 4.4.1 is on PyPI; on Maven Central the newest build for Spark 4.0, 4.1 and 4.2 is 4.4.0.
val deltaVersion = "4.4.0"
val scalatestVersion = "3.2.19"
// Provided (compiled against, never packaged: a session reading s3a:// brings its own): S3A at the
// Hadoop version bundled with pyspark 4.2.0, with the AWS SDK v2 modules S3A uses instead of the
// 686 MB `bundle`. The connector's S3 log listing (S3Listing) calls them; the object-store tests run
// on them.
val hadoopVersion = "3.5.0"
val awsSdkVersion = "2.35.4" // the SDK version hadoop-aws 3.5.0 is built against
// (scripts/s3proxy.sh reads hadoopVersion and awsSdkVersion from these lines)

// The line this session builds: the default, or the one asked for.
val defaultSparkLine =
  SparkLines.SparkLine("4.2", sparkVersion, scala213, hadoopVersion, awsSdkVersion)
val sparkLine = SparkLines.current(defaultSparkLine)

ThisBuild / organization := "io.deltareplay"
ThisBuild / version := {
  val source = (ThisBuild / baseDirectory).value / "python" / "delta_replay" / "versions.py"
  val pep440 = """(?m)^VERSION = "([^"]+)"""".r
    .findFirstMatchIn(IO.read(source))
    .map(_.group(1))
    .getOrElse(sys.error(s"no VERSION line in $source"))
  pep440.replaceFirst("""\.dev\d+$""", "-SNAPSHOT") // Maven's spelling of a dev version
}
ThisBuild / scalaVersion := sparkLine.scala
ThisBuild / resolvers := Seq(Resolver.DefaultMavenRepository)

// Forked test JVMs, their settings and grouping: project/TestJvms.scala.
Global / concurrentRestrictions := TestJvms.concurrentRestrictions

lazy val connector = (project in file("connector"))
  .settings(
    name := s"delta-replay-spark_${sparkLine.name}",
    moduleName := name.value, // as written: sbt's default would spell 4.2 as 4-2
    // a line other than the default builds beside it, so switching lines recompiles neither
    target := {
      val default = baseDirectory.value / "target"
      if (sparkLine == defaultSparkLine) default else default / s"spark-${sparkLine.name}"
    },
    // the sources that differ between lines (io.deltareplay.internal.compat.SparkShim)
    Compile / unmanagedSourceDirectories +=
      (Compile / sourceDirectory).value / s"scala-spark-${sparkLine.name}",
    Test / unmanagedSourceDirectories +=
      (Test / sourceDirectory).value / s"scala-spark-${sparkLine.name}",
    // scalafmt checks and formats the other lines' own folders too (the build's check runs on the
    // default line only, so the lanes need no format check of their own)
    Seq(Compile, Test).flatMap { config =>
      def otherDirs = Def.setting {
        (SparkLines.older :+ defaultSparkLine).filter(_ != sparkLine).map { l =>
          (config / sourceDirectory).value / s"scala-spark-${l.name}"
        }
      }
      Seq(
        config / scalafmt / unmanagedSourceDirectories ++= otherDirs.value.filter(_.isDirectory),
        config / scalafmt / unmanagedSources ++= otherDirs.value.flatMap(d => (d ** "*.scala").get)
      )
    },
    // on a line other than the default, the lane's suites and their helpers only (`./dev test`
    // runs those there; -Dspark.line.tests=all compiles every suite): SparkLines.laneSources
    Test / sources := {
      val all = (Test / sources).value
      if (sparkLine == defaultSparkLine) all
      else SparkLines.laneSources(all, (Test / scalaSource).value)
    },
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkLine.spark % Provided,
      "org.apache.spark" %% "spark-core" % sparkLine.spark % Provided,
      "org.apache.spark" %% "spark-catalyst" % sparkLine.spark % Provided,
      ("io.delta" % s"delta-spark_${sparkLine.name}_2.13" % deltaVersion)
        .excludeAll(ExclusionRule("org.apache.spark")),
      "org.scalatest" %% "scalatest" % scalatestVersion % Test,
      ("org.apache.hadoop" % "hadoop-aws" % sparkLine.hadoop % Provided)
        .excludeAll(
          ExclusionRule("software.amazon.awssdk", "bundle"),
          ExclusionRule("org.apache.hadoop", "hadoop-common"),
          ExclusionRule("org.wildfly.openssl")
        )
    ) ++ Seq("s3", "s3-transfer-manager", "sts", "apache-client").map { m =>
      ("software.amazon.awssdk" % m % sparkLine.awsSdk % Provided)
        .excludeAll(
          // Spark ships these (netty, SLF4J, commons-*); Apache HttpClient comes with them here.
          ExclusionRule("io.netty"),
          ExclusionRule("org.slf4j"),
          ExclusionRule("commons-codec"),
          ExclusionRule("commons-logging")
        )
    },
    // the scala-library of the line's pyspark, which its sessions run on (delta-spark_4.0_2.13
    // 4.4.0 asks for 2.13.17; pyspark 4.0 ships 2.13.16)
    dependencyOverrides += "org.scala-lang" % "scala-library" % sparkLine.scala,
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
    // The version the jar reports (DeltaReplay.version, SQL delta_replay_version()).
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "io" / "deltareplay" / "version.properties"
      IO.write(out, s"version=${version.value}\n")
      Seq(out)
    }.taskValue,
    TestJvms.settings,
    // The lanes of `./dev test` on the other lines (docs/development.md, "Spark lines"): only the
    // lane's suites run (the differential folder compiled for one of them holds others:
    // SparkLines.laneRuns; the default line skips the lanes' own, laneOnly), in one JVM per line:
    // one session start, and the whole run is CPU-bound (two JVMs a line, one running the
    // differential: 6 min 15 s of CPU for both lanes, one JVM: 5 min 17 s, 2026-12-05)
    Test / testOptions += Tests.Filter { suite =>
      if (SparkLines.allTests) true
      else if (sparkLine == defaultSparkLine) !SparkLines.laneOnly(suite)
      else SparkLines.laneRuns(suite)
    },
    Test / testGrouping := {
      val groups = (Test / testGrouping).value
      if (sparkLine == defaultSparkLine || SparkLines.allTests) groups
      else Seq(Tests.Group("lane", groups.flatMap(_.tests), groups.head.runPolicy))
    },
    publishMavenStyle := true,
    Compile / packageDoc / publishArtifact := false,
    pomIncludeRepository := (_ => false)
  )

lazy val root = (project in file("."))
  .aggregate(connector)
  .settings(publish / skip := true, publishLocal / skip := true, publishM2 / skip := true)
