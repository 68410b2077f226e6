package io.deltareplay.internal.log

import java.net.URI

import io.deltareplay.Errors

/**
 * Recognises the object-store failures a user fixes with a setting, not with the table: denied
 * credentials, a bucket (or container) that does not exist, an endpoint that cannot be reached. The
 * file-system clients (S3A, ABFS, GCS) report them as different exception types, often after their
 * own retries; the cause chain is matched by class name and message, because their classes are not
 * on this connector's classpath.
 */
private[deltareplay] sealed trait StoreFailure

private[deltareplay] object StoreFailure {
  case object AccessDenied extends StoreFailure
  case object NoBucket extends StoreFailure
  case object Unreachable extends StoreFailure

  private val deniedCodes =
    Seq("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "(403)", "status code: 403")
  private val unreachableTypes = Set(
    "java.net.ConnectException",
    "java.net.NoRouteToHostException",
    "java.net.UnknownHostException",
    "java.net.SocketTimeoutException",
    "org.apache.hadoop.net.ConnectTimeoutException",
    "org.apache.http.conn.HttpHostConnectException",
    "org.apache.http.conn.ConnectTimeoutException",
    "org.apache.http.NoHttpResponseException"
  )

  /** What went wrong in `e` (or one of its causes), if it is a store failure of a known kind. */
  def classify(e: Throwable): Option[StoreFailure] = {
    val chain = Errors.causes(e).toSeq
    def named(t: Throwable, simple: String) = t.getClass.getSimpleName == simple
    def says(t: Throwable, words: Seq[String]) =
      Option(t.getMessage).exists(m => words.exists(w => m.contains(w)))
    if (chain.exists(t => named(t, "UnknownStoreException") || says(t, Seq("NoSuchBucket"))))
      Some(NoBucket)
    else if (
      chain.exists(t =>
        named(t, "AccessDeniedException") || named(t, "AbfsAuthorizationException") ||
          says(t, deniedCodes)
      )
    ) Some(AccessDenied)
    else if (
      chain.exists(t =>
        unreachableTypes.contains(t.getClass.getName) ||
          says(t, Seq("Connection refused", "Unable to execute HTTP request"))
      )
    ) Some(Unreachable)
    else None
  }

  /**
   * Whether `path` is on a remote store (not the local disk, HDFS or a path without a scheme), so
   * that a local permission error is never reported as a store's credentials.
   */
  def isRemoteStore(path: String): Boolean =
    scala.util.Try(new URI(path)).toOption.flatMap(u => Option(u.getScheme)) match {
      case None | Some("file") | Some("hdfs") | Some("viewfs") => false
      case Some(_) => true
    }

  /** The settings that fix `failure` for the file system of `path`, for the message. */
  def settings(path: String, failure: StoreFailure): String = {
    val uri = scala.util.Try(new URI(path)).toOption
    val scheme = uri.flatMap(u => Option(u.getScheme)).getOrElse("")
    val bucket = uri.flatMap(u => Option(u.getHost)).getOrElse("<bucket>")
    scheme match {
      case "s3a" =>
        failure match {
          case AccessDenied =>
            "fs.s3a.access.key and fs.s3a.secret.key (or fs.s3a.aws.credentials.provider; " +
              s"for this bucket only: fs.s3a.bucket.$bucket.access.key and .secret.key)"
          case NoBucket =>
            s"the bucket name in the path ($bucket) and fs.s3a.endpoint (for this bucket only: " +
              s"fs.s3a.bucket.$bucket.endpoint)"
          case Unreachable =>
            s"fs.s3a.endpoint (for this bucket only: fs.s3a.bucket.$bucket.endpoint) and " +
              "fs.s3a.connection.ssl.enabled; the retries are set by fs.s3a.retry.limit and " +
              "fs.s3a.attempts.maximum"
        }
      case "s3" | "s3n" =>
        s"the path's scheme: use s3a:// with hadoop-aws (fs.s3a.* settings), not $scheme://"
      case "abfs" | "abfss" | "wasb" | "wasbs" =>
        "fs.azure.account.auth.type and fs.azure.account.key.<account> or the OAuth settings " +
          "fs.azure.account.oauth2.* for the storage account in the path"
      case "gs" =>
        "fs.gs.auth.type and its credentials settings (fs.gs.auth.*), and fs.gs.project.id"
      case other =>
        s"the credentials and endpoint settings of the $other:// file system"
    }
  }
}
