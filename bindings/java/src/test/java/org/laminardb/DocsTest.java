package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.QuickStart;
import example.TypedQuickStart;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/JAVA.md is executable: its java blocks are example/QuickStart.java and
 * example/TypedQuickStart.java verbatim, in that order (this test compares them), and
 * running each prints the VWAP rows of its three trades.
 */
class DocsTest {
  private static Path root() {
    return Path.of(System.getProperty("laminardb.repo.root", "../.."));
  }

  @Test
  void javaMdExamplesAreTheTestedOnes() throws IOException {
    String doc = Files.readString(root().resolve("docs/JAVA.md"), StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
    for (String name : List.of("QuickStart", "TypedQuickStart")) {
      assertTrue(m.find(), "docs/JAVA.md has no java block for " + name);
      String example =
          Files.readString(
              root().resolve("bindings/java/src/test/java/example/" + name + ".java"),
              StandardCharsets.UTF_8);
      assertEquals(example, "package example;\n\n" + m.group(1));
    }
  }

  @Test
  void quickStartPrintsTheWindows() {
    assertPrintsTheWindows(() -> QuickStart.main(new String[0]));
  }

  @Test
  void typedQuickStartPrintsTheWindows() {
    assertPrintsTheWindows(() -> TypedQuickStart.main(new String[0]));
  }

  private static void assertPrintsTheWindows(Runnable example) {
    PrintStream saved = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try (PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
      System.setOut(out);
      example.run();
    } finally {
      System.setOut(saved);
    }
    List<String> lines = Arrays.asList(captured.toString(StandardCharsets.UTF_8).split("\n"));
    lines.sort(null);
    // Worked out by hand from the example's trades: window [1000, 2000) holds both
    // AAPL trades, (10.0 * 100 + 20.0 * 300) / 400 = 17.5, and MSFT's one, 5.0.
    assertEquals(
        List.of(
            "AAPL window 1000: vwap 17.50 over 2 trades",
            "MSFT window 1000: vwap 5.00 over 1 trades"),
        lines);
  }
}
