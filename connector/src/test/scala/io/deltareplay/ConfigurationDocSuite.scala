package io.deltareplay

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

/**
 * docs/configuration.md lists every setting of [[DeltaReplayOptions.Settings]] as the registry says
 * it: the table between its markers is rendered from the registry, and each setting has its
 * paragraph of details. Run with `DELTAREPLAY_TEST_WRITEDOCS=1` to write the table into the doc.
 */
class ConfigurationDocSuite extends AnyFunSuite {
  private val O = DeltaReplayOptions
  private val Begin = "<!-- settings: generated from DeltaReplayOptions.Settings -->"
  private val End = "<!-- end of settings -->"

  private def docPath =
    Paths.get(sys.props.getOrElse("deltareplay.test.root", "."), "docs", "configuration.md")

  /** The table of settings as the doc shows it. */
  private def rendered: String = {
    def where(s: O.Setting): String = s.scope match {
      case O.Scope.ReadAndSession => s"read option; session `${s.sessionKey}`"
      case O.Scope.Session => s"session `${s.sessionKey}` only"
      case O.Scope.Read => "read option"
      case O.Scope.Stream => "stream option"
    }
    val rows = O.Settings.map { s =>
      val default = s.default.fold("none")(d => s"`$d`")
      s"| `${s.name}` | ${where(s)} | ${s.kind.expected} | $default | ${s.doc} |"
    }
    (Seq(
      Begin,
      "| setting | given as | values | default | what it does |",
      "|---|---|---|---|---|"
    ) ++ rows :+ End).mkString("\n")
  }

  test("docs/configuration.md's settings table is the registry's") {
    val doc = new String(Files.readAllBytes(docPath), UTF_8)
    val (b, e) = (doc.indexOf(Begin), doc.indexOf(End))
    assert(b >= 0 && e > b, s"docs/configuration.md has no settings markers ($Begin ... $End)")
    val current = doc.substring(b, e + End.length)
    if (current != rendered && sys.props.get("deltareplay.test.writedocs").contains("1")) {
      Files.write(docPath, doc.replace(current, rendered).getBytes(UTF_8))
    } else {
      assert(
        current === rendered,
        "the doc's table differs from the registry; run with DELTAREPLAY_TEST_WRITEDOCS=1"
      )
    }
  }

  test("every setting has its details in docs/configuration.md") {
    val doc = new String(Files.readAllBytes(docPath), UTF_8)
    val details = doc.substring(doc.indexOf(End))
    val missing = O.Settings.map(_.name).filterNot(n => details.contains(s"`$n`"))
    assert(missing.isEmpty, s"settings without details after the table: $missing")
  }
}
