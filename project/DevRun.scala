import java.io.File

/**
 * Hand-offs between the one sbt JVM of `./dev test` and the shell around it, through files under
 * `build/dev-test/` (`eval DevRun.signal(...)`, `eval DevRun.awaitFile(...)` in its command list):
 * the jars are published, so the Python side may start; the venv is ready, so the suites that
 * launch executors from its pyspark may run.
 */
object DevRun {

  /** Creates `path` (and its folder). */
  def signal(path: String): Unit = {
    val file = new File(path)
    file.getParentFile.mkdirs()
    file.createNewFile()
  }

  /** Waits until `path` exists; fails, naming `what`, when `failed` appears first. */
  def awaitFile(path: String, failed: String, what: String): Unit = {
    val (done, bad) = (new File(path), new File(failed))
    while (!done.exists) {
      if (bad.exists) sys.error(s"$what failed ($failed)")
      Thread.sleep(200)
    }
  }
}
