package io.deltareplay.internal.log

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[ActionLine]] gives, for every line it decodes, the action the tree decoding
 * ([[FileAction.fromJson]]) gives, and leaves every line it cannot decode the same way to the tree
 * ([[ActionLine.Unusual]]). delta-spark's own commits (statistics, deletion vectors from DELETE,
 * UPDATE and MERGE, OPTIMIZE's and REORG's removes) it decodes line by line itself:
 * DeletionVectorReadSuite.
 */
class ActionLineSuite extends AnyFunSuite {
  import ActionLineSuite._

  test("odd lines: decoded as the tree decodes them, or left to it") {
    val dv =
      """{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":34,"cardinality":2}"""
    val decoded = Seq(
      """{"add":{"path":"a","size":1,"path":"b","modificationTime":5,"dataChange":false}}""",
      """{"add":{"path":"a","partitionValues":null,"size":null,"stats":null,"tags":{"x":[1]}}}""",
      """{"add":{"path":"a","partitionValues":{"p":null,"q":"1","q":"2"},"stats":"{}"}}""",
      s"""{"remove":{"path":"a","deletionVector":$dv,"extendedFileMetadata":true}}""",
      """{"add":{"path":"a","deletionVector":{"storageType":"i","pathOrInlineDv":"x",""" +
        """"sizeInBytes":3,"cardinality":1,"maxRowIndex":9}}}""",
      """{"add":{"path":"a","deletionVector":null}}""",
      """{"commitInfo":{"operation":"WRITE","add":{"path":5}}}""",
      """{"add":{"path":"a"},"add":{"path":"b","size":3}}""",
      """{"add":{"path":"a"}} trailing""",
      """{"txn":{"appId":"x","version":3}}"""
    )
    val leftToTree = Seq(
      """{"add":{"path":"a"},"remove":{"path":"a"}}""",
      """{"add":{"path":7}}""",
      """{"add":{"path":"a","size":"12"}}""",
      """{"add":{"path":"a","size":1.5}}""",
      """{"add":{"path":"a","size":123456789012345678901234567890}}""",
      """{"add":{"path":"a","dataChange":"false"}}""",
      """{"add":{"path":"a","stats":{"numRecords":1}}}""",
      """{"add":{"path":"a","partitionValues":{"p":1}}}""",
      """{"add":{"path":"a","deletionVector":{"storageType":"u","pathOrInlineDv":"x"}}}""",
      """{"add":{"path":"a","deletionVector":{"storageType":"u","pathOrInlineDv":"x",""" +
        """"sizeInBytes":3000000000,"cardinality":1}}}""",
      """{"add":{"size":3}}""",
      """{"add":null}""",
      """[{"add":{"path":"a"}}]""",
      """{"add":{"path":"a","size":1""",
      """{"add":{"path":"a",}}"""
    )
    assertDecodedAsTree(decoded)
    for (line <- leftToTree) assert(streamed(line, needStats = true).isEmpty, line)
  }
}

object ActionLineSuite extends org.scalatest.Assertions {
  private val mapper = new ObjectMapper()

  private def tree(line: String, needStats: Boolean): Option[FileAction.Action] =
    FileAction.fromJson(mapper.readTree(line), 7L, needStats)

  private def streamed(line: String, needStats: Boolean): Option[Option[FileAction.Action]] =
    try Some(ActionLine.decode(mapper.getFactory, line, 7L, needStats))
    catch { case ActionLine.Unusual => None }

  /** Each of `lines` decoded by [[ActionLine]] itself, as the tree decodes it. */
  def assertDecodedAsTree(lines: Seq[String]): Unit =
    for (line <- lines; needStats <- Seq(true, false)) {
      val got = streamed(line, needStats)
      assert(got.isDefined, s"left to the tree: $line")
      assert(got.get == tree(line, needStats), line)
    }
}
