package io.deltareplay.test

import java.io.File
import java.nio.file.Files

import scala.sys.process._

/**
 * A real s3proxy server on 127.0.0.1, started and stopped by `scripts/s3proxy.sh` (which fetches
 * its jar through Maven once). `data` is its filesystem-nio2 base directory: a second instance
 * given the same directory serves the same buckets.
 */
final class S3Proxy private (val dir: File, val endpoint: String, val pid: Long) {
  val accessKey: String = S3Proxy.AccessKey
  val secretKey: String = S3Proxy.SecretKey

  def port: Int = new java.net.URI(endpoint).getPort

  @volatile private var stopped = false

  /** Stops the server and deletes its instance directory (and its data, unless shared). */
  def stop(): Unit = synchronized {
    if (!stopped) {
      stopped = true
      S3Proxy.run("stop", dir)
      dir.getParentFile.delete()
    }
  }

  // The server runs in its own session: stop it even when the test JVM ends without afterAll.
  private val hook = new Thread(() => scala.util.Try(stop()))
  Runtime.getRuntime.addShutdownHook(hook)
}

object S3Proxy {
  val AccessKey = "delta-replay-test-key"
  val SecretKey = "delta-replay-test-secret"

  private def root: File = new File(
    sys.props.getOrElse(
      "deltareplay.test.root",
      throw new IllegalStateException("deltareplay.test.root is not set: run through sbt")
    )
  )

  private def script: String = new File(root, "scripts/s3proxy.sh").getAbsolutePath

  private def run(cmd: String, dir: File, env: (String, String)*): String = {
    val err = new StringBuilder
    val out = new StringBuilder
    val logger = ProcessLogger(l => out.append(l).append('\n'), l => err.append(l).append('\n'))
    val rc = Process(Seq(script, cmd, dir.getAbsolutePath), root, env: _*).!(logger)
    if (rc != 0) {
      throw new IllegalStateException(
        s"scripts/s3proxy.sh $cmd ${dir.getAbsolutePath} exited with $rc:\n$out$err"
      )
    }
    out.toString
  }

  /**
   * Starts an instance in a new temporary directory with `buckets` created; `data` shares another
   * instance's base directory; `latency` as S3PROXY_LATENCY (e.g. "cloud").
   */
  def start(
      buckets: Seq[String],
      data: Option[File] = None,
      latency: Option[String] = None
  ): S3Proxy = {
    val dir = new File(Files.createTempDirectory("delta-replay-s3proxy").toFile, "instance")
    val env = Seq(
      "S3PROXY_BUCKETS" -> buckets.mkString(","),
      "S3PROXY_ACCESS_KEY" -> AccessKey,
      "S3PROXY_SECRET_KEY" -> SecretKey
    ) ++ data.map(d => "S3PROXY_DATA" -> d.getAbsolutePath) ++ latency.map("S3PROXY_LATENCY" -> _)
    val line = run("start", dir, env: _*).linesIterator.find(_.startsWith("endpoint=")).getOrElse {
      throw new IllegalStateException("scripts/s3proxy.sh start printed no endpoint line")
    }
    val fields = line.split(' ').map(_.split("=", 2)).collect { case Array(k, v) => k -> v }.toMap
    new S3Proxy(dir, fields("endpoint"), fields("pid").toLong)
  }

  /** The Hadoop keys that point S3A at `server` for `bucket` only (per-bucket settings). */
  def s3aSettings(
      bucket: String,
      endpoint: String,
      secret: String = SecretKey
  ): Map[String, String] =
    Map(
      "endpoint" -> endpoint,
      "endpoint.region" -> "us-east-1",
      "path.style.access" -> "true",
      "connection.ssl.enabled" -> "false",
      "aws.credentials.provider" -> "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
      "access.key" -> AccessKey,
      "secret.key" -> secret
    ).map { case (k, v) => s"fs.s3a.bucket.$bucket.$k" -> v }
}
