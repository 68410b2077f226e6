package io.deltareplay.test

import java.nio.file.{Files, Paths}
import java.nio.file.attribute.PosixFilePermissions

import org.apache.hadoop.fs.{FileContext, LocalFileSystem, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.scalatest.funsuite.AnyFunSuite

/** The test sessions' local file system leaves what Hadoop's leaves, without child processes. */
class NoForkLocalFileSystemSuite extends AnyFunSuite with SharedSparkSession {

  private def mode(p: String): String =
    PosixFilePermissions.toString(Files.getPosixFilePermissions(Paths.get(p)))

  test("files, directories and commits get Hadoop's permissions; renames and link status agree") {
    withTempDir { dir =>
      val conf = spark.sessionState.newHadoopConf()
      val root = new Path(dir.toURI)
      val fs = root.getFileSystem(conf)
      assert(fs.isInstanceOf[NoForkLocalFileSystem], fs.getClass)
      val hadoops = new RawLocalFileSystem
      hadoops.initialize(root.toUri, conf)
      for (
        (name, raw) <- Seq("ours" -> fs.asInstanceOf[LocalFileSystem].getRaw, "hadoop" -> hadoops)
      ) {
        val sub = new Path(root, s"$name/d")
        assert(raw.mkdirs(sub, new FsPermission("750")))
        raw
          .create(new Path(sub, "f"), new FsPermission("640"), true, 4096, 1, 1L << 20, null)
          .close()
        raw.create(new Path(sub, "g"), true).close()
      }
      for (p <- Seq("d", "d/f", "d/g"))
        assert(mode(s"$dir/ours/$p") === mode(s"$dir/hadoop/$p"), p)
      assert(mode(s"$dir/ours/d/f") === "rw-r-----")

      // delta-spark's log store writes commits through FileContext: create, then rename
      val fc = FileContext.getFileContext(root.toUri, conf)
      val table = s"$dir/t"
      spark.range(5).write.format("delta").save(table)
      spark.range(5, 9).write.format("delta").mode("append").save(table)
      assert(spark.read.format("delta").load(table).count() === 9)
      val commit = new Path(s"$table/_delta_log/00000000000000000001.json")
      val status = fc.getFileLinkStatus(commit)
      assert(!status.isSymlink && status.getLen === Files.size(Paths.get(commit.toUri.getPath)))
      assert(mode(commit.toUri.getPath) === mode(s"$dir/hadoop/d/g"))
      Files.createSymbolicLink(Paths.get(s"$dir/link"), Paths.get(commit.toUri.getPath))
      val link = fc.getFileLinkStatus(new Path(s"$dir/link"))
      assert(link.isSymlink && link.getSymlink.toUri.getPath === commit.toUri.getPath)
    }
  }
}
