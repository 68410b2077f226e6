package io.deltareplay.internal.log

import java.io.{FileNotFoundException, IOException}
import java.net.ConnectException
import java.nio.file.AccessDeniedException

import io.deltareplay.DeltaReplayException
import io.deltareplay.Errors
import org.scalatest.funsuite.AnyFunSuite

/**
 * Which failures become a [[DeltaReplayException.StoreAccess]] and what it names, without a server
 * (ObjectStoreSuite checks the same against a real one through S3A).
 */
class StoreFailureSuite extends AnyFunSuite {

  private def wrapped(e: Throwable) = new IOException("getFileStatus failed", e)

  test("store failures are recognised through the cause chain") {
    assert(
      StoreFailure.classify(wrapped(new AccessDeniedException("x"))) === Some(
        StoreFailure.AccessDenied
      )
    )
    assert(
      StoreFailure.classify(
        new IOException("S3Exception: ... (Status Code: 403) SignatureDoesNotMatch")
      ) ===
        Some(StoreFailure.AccessDenied)
    )
    assert(
      StoreFailure.classify(
        new FileNotFoundException("NoSuchBucket: the bucket does not exist")
      ) ===
        Some(StoreFailure.NoBucket)
    )
    assert(
      StoreFailure.classify(wrapped(new ConnectException("Connection refused"))) === Some(
        StoreFailure.Unreachable
      )
    )
    assert(StoreFailure.classify(new FileNotFoundException("s3a://b/t/x.parquet")) === None)
    assert(StoreFailure.classify(new IOException("checksum error")) === None)
  }

  test("only remote stores: a local permission error stays what it is") {
    val denied = wrapped(new AccessDeniedException("/data/t/_delta_log"))
    assert(Errors.storeFailure("file:/data/t", "file:/data/t", denied) === None)
    assert(Errors.storeFailure("/data/t", "/data/t", denied) === None)
    assert(Errors.storeFailure("hdfs://nn/t", "hdfs://nn/t", denied) === None)
    val e = Errors.storeFailure("s3a://lake/t", "s3a://lake/t/part-0.parquet", denied).get
    assert(e.isInstanceOf[DeltaReplayException.StoreAccess])
    assert(e.getCondition === "DELTA_REPLAY_STORE_ACCESS")
    assert(
      e.getMessage.contains("s3a://lake/t (reading s3a://lake/t/part-0.parquet)"),
      e.getMessage
    )
    assert(e.getMessage.contains("fs.s3a.bucket.lake.access.key"), e.getMessage)
    assert(e.getCause eq denied)
  }

  test("the settings named per file system") {
    assert(
      StoreFailure
        .settings("s3a://b1/t", StoreFailure.NoBucket)
        .contains("fs.s3a.bucket.b1.endpoint")
    )
    assert(
      StoreFailure.settings("s3a://b1/t", StoreFailure.Unreachable).contains("fs.s3a.retry.limit")
    )
    assert(StoreFailure.settings("s3://b1/t", StoreFailure.AccessDenied).contains("use s3a://"))
    assert(
      StoreFailure
        .settings("abfss://c@acct.dfs.core.windows.net/t", StoreFailure.AccessDenied)
        .contains("fs.azure.account")
    )
    assert(StoreFailure.settings("gs://b/t", StoreFailure.AccessDenied).contains("fs.gs.auth"))
  }
}
