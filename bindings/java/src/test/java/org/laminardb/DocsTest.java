package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.Functions;
import example.QuickStart;
import example.Tables;
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
 * docs/JAVA.md is executable: its java blocks are example/QuickStart.java,
 * example/TypedQuickStart.java, example/Functions.java and example/Tables.java verbatim,
 * in that order (this test compares them); the quick starts print the VWAP rows of
 * their three trades, the others what the docs say they print.
 */
class DocsTest {
  private static Path root() {
    return Path.of(System.getProperty("laminardb.repo.root", "../.."));
  }

  @Test
  void javaMdExamplesAreTheTestedOnes() throws IOException {
    String doc = Files.readString(root().resolve("docs/JAVA.md"), StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(doc);
    for (String name : List.of("QuickStart", "TypedQuickStart", "Functions", "Tables")) {
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

  @Test
  void functionsPrintsTheWindowsAndLabels() {
    // By hand: AAPL (10.0 * 1.25) * 100 + (20.0 * 1.25) * 300 = 8750, 10^2 + 20^2 = 500;
    // MSFT 5.0 * 1.25 * 10 = 62.5, 5^2 = 25; volumes >= 100 are blocks.
    assertEquals(
        List.of(
            "AAPL 100: block",
            "AAPL 300: block",
            "AAPL window 1000: notional 8750.00 USD, sum of squares 500.00",
            "MSFT 10: odd lot",
            "MSFT window 1000: notional 62.50 USD, sum of squares 25.00"),
        printed(() -> Functions.main(new String[0])));
  }

  @Test
  void tablesPrintsTheCurrentRows() {
    assertEquals(
        List.of("EUR 1.09"),
        printed(
            () -> {
              try {
                Tables.main(new String[0]);
              } catch (IOException e) {
                throw new AssertionError(e);
              }
            }));
  }

  private static void assertPrintsTheWindows(Runnable example) {
    // Worked out by hand from the example's trades: window [1000, 2000) holds both
    // AAPL trades, (10.0 * 100 + 20.0 * 300) / 400 = 17.5, and MSFT's one, 5.0.
    assertEquals(
        List.of(
            "AAPL window 1000: vwap 17.50 over 2 trades",
            "MSFT window 1000: vwap 5.00 over 1 trades"),
        printed(example));
  }

  /** The lines {@code example} prints, sorted. */
  private static List<String> printed(Runnable example) {
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
    return lines;
  }
}
