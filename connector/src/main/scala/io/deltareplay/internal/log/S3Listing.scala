package io.deltareplay.internal.log

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FileStatus, FileSystem, FilterFileSystem, Path}
import org.apache.hadoop.fs.s3a.{S3AFileStatus, S3AFileSystem, S3AUtils}
import software.amazon.awssdk.core.exception.SdkException
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request

/**
 * The files of an S3 "directory" whose names sort after a given name: one LIST with `start-after`,
 * which Hadoop's `FileSystem` has no call for, through the S3 client of the S3A file system itself
 * (`S3AInternals`, so the endpoint, credentials and retries are S3A's). Only referenced for `s3a`
 * paths: its S3A and AWS SDK classes are needed only there.
 */
private[deltareplay] object S3Listing {

  /**
   * LIST requests sent so far in this JVM (S3A's own statistics do not see them: they go through
   * its client, not its file system calls). Per JVM, as the store's own counters are: a figure for
   * tests and benchmarks, never read by a read.
   */
  val requests = new java.util.concurrent.atomic.AtomicLong()

  /** None when `fs` is not S3A underneath. */
  private[internal] def after(fs: FileSystem, dir: Path, name: String): Option[Seq[FileStatus]] =
    unwrap(fs) match {
      case s3a: S3AFileSystem =>
        val prefix = s3a.pathToKey(dir).stripSuffix("/") + "/"
        val request = ListObjectsV2Request
          .builder()
          .bucket(s3a.getBucket)
          .prefix(prefix)
          .delimiter("/") // this directory's files, not those under its subdirectories
          .startAfter(prefix + name)
          .build()
        val client = s3a.getS3AInternals.getAmazonS3Client("delta-replay listing of a Delta log")
        try
          Some(
            client
              .listObjectsV2Paginator(request)
              .asScala
              .flatMap { page =>
                requests.incrementAndGet()
                page.contents().asScala
              }
              .map { o =>
                new S3AFileStatus(
                  o.size(),
                  o.lastModified().toEpochMilli,
                  s3a.makeQualified(new Path(dir, o.key().substring(prefix.length))),
                  s3a.getDefaultBlockSize,
                  s3a.getUsername,
                  o.eTag(),
                  null
                ): FileStatus
              }
              .toSeq
          )
        catch { case e: SdkException => throw S3AUtils.translateException("list", dir, e) }
      case _ => None
    }

  private def unwrap(fs: FileSystem): FileSystem = fs match {
    case f: FilterFileSystem => unwrap(f.getRawFileSystem)
    case other => other
  }
}
