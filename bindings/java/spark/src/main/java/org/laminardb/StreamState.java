package org.laminardb;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The state of one final-stage partition of a streaming query, in the layout the Python
 * engine uses (laminardb/spark/state.py, docs/SPARK.md "Streaming"), so either engine restarts
 * from the other's state: under the state location, {@code p<partition>/b<batch id>/}
 * holds the partition's engine ({@code db/}, a durable engine's checkpoint) after that
 * micro-batch and {@code meta.json} ({@code {"max_ts": <ms or null>}}: the largest event
 * time of every row through it); {@code maxts/b<batch id>/m<partition>.json} the largest
 * event time of each partial-stage partition of the micro-batch.
 *
 * <p>A task of batch {@code n} starts from the newest state below {@code n}, in a staging
 * directory {@code p<partition>/.b<n>-*} (a copy of that state's engine), and renames it
 * to {@code b<n>} when its rows are all out: a retried attempt or a restarted query redoes
 * batch {@code n} from the same state, and a state already published is kept.
 */
final class StreamState {
  private static final Pattern STATE_DIR = Pattern.compile("^b(\\d+)$");
  private static final Pattern STAGING_DIR = Pattern.compile("^\\.b(\\d+)-.*$");
  private static final Pattern MAX_TS =
      Pattern.compile("\"max_ts\"\\s*:\\s*(null|-?\\d+)");

  private final Path root;
  private final Path partDir;
  private final long batchId;
  private final Path staging;
  private final Long before;
  private final Long through;
  private boolean published;

  private StreamState(Path root, Path partDir, long batchId, Path staging, Long before,
      Long through) {
    this.root = root;
    this.partDir = partDir;
    this.batchId = batchId;
    this.staging = staging;
    this.before = before;
    this.through = through;
  }

  /**
   * The state of partition {@code partition} for micro-batch {@code batchId}: the newest
   * state below it copied into a new staging directory, and the event times.
   */
  static StreamState begin(Path root, long batchId, int partition) {
    Path partDir = root.resolve(String.format("p%05d", partition));
    try {
      Files.createDirectories(partDir);
      Path prev = latest(partDir, batchId);
      Long before = prev == null ? null : readMaxTs(prev.resolve("meta.json"));
      Long now = batchMaxTs(root, batchId);
      Long through = now == null ? before : before == null ? now : Math.max(before, now);
      Path staging = Files.createTempDirectory(partDir, ".b" + batchId + "-");
      try {
        if (prev != null) {
          copyTree(prev.resolve("db"), staging.resolve("db"));
        }
      } catch (IOException | RuntimeException e) {
        deleteTree(staging);
        throw e;
      }
      return new StreamState(root, partDir, batchId, staging, before, through);
    } catch (IOException e) {
      throw new UncheckedIOException("laminardb: state of " + partDir, e);
    }
  }

  /** The engine's data directory. */
  Path data() {
    return staging.resolve("db");
  }

  /** The largest event time before this micro-batch (null: none yet). */
  Long before() {
    return before;
  }

  /** The largest event time through this micro-batch (null: none yet). */
  Long through() {
    return through;
  }

  /**
   * Publish the staged state (the engine closed after its checkpoint) as {@code
   * b<batch id>} unless an earlier attempt did; prune the states, staging directories
   * and partial event times older than the one this batch started from.
   */
  void publish() {
    try {
      Files.write(staging.resolve("meta.json"),
          ("{\"max_ts\": " + (through == null ? "null" : through.toString()) + "}")
              .getBytes(StandardCharsets.UTF_8));
      Path target = partDir.resolve("b" + batchId);
      if (!Files.exists(target)) {
        try {
          Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (FileAlreadyExistsException e) {
          // another attempt of this batch won the race: its state is the same
        } catch (IOException e) {
          if (!Files.exists(target)) {
            throw e;
          }
        }
      }
      published = true;
      discard();
      Path keep = latest(partDir, batchId);
      for (Path entry : list(partDir)) {
        String name = entry.getFileName().toString();
        Matcher state = STATE_DIR.matcher(name);
        Matcher stale = STAGING_DIR.matcher(name);
        if ((state.matches() && Long.parseLong(state.group(1)) < batchId && !entry.equals(keep))
            || (stale.matches() && Long.parseLong(stale.group(1)) < batchId)) {
          deleteTree(entry);
        }
      }
      for (Path entry : list(root.resolve("maxts"))) {
        Matcher old = STATE_DIR.matcher(entry.getFileName().toString());
        if (old.matches() && Long.parseLong(old.group(1)) < batchId) {
          deleteTree(entry);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("laminardb: publishing the state of " + partDir, e);
    }
  }

  /** Remove the staging directory (left over when the state was not published). */
  void discard() {
    try {
      deleteTree(staging);
    } catch (IOException e) {
      if (!published) {
        throw new UncheckedIOException("laminardb: removing " + staging, e);
      }
    }
  }

  /** Record a partial-stage partition's largest event time of micro-batch {@code batchId}. */
  static void recordMaxTs(Path root, long batchId, int partition, long maxTs) {
    Path folder = root.resolve("maxts").resolve("b" + batchId);
    String name = String.format("m%05d.json", partition);
    try {
      Files.createDirectories(folder);
      Path tmp = Files.createTempFile(folder, String.format(".m%05d-", partition), ".tmp");
      Files.write(tmp, Long.toString(maxTs).getBytes(StandardCharsets.UTF_8));
      try {
        Files.move(tmp, folder.resolve(name), StandardCopyOption.ATOMIC_MOVE,
            StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, folder.resolve(name), StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("laminardb: recording " + folder.resolve(name), e);
    }
  }

  /** The newest state {@code b<id>} of a partition with {@code id < before}, or null. */
  static Path latest(Path partDir, long before) throws IOException {
    Path best = null;
    long bestId = -1;
    for (Path entry : list(partDir)) {
      Matcher m = STATE_DIR.matcher(entry.getFileName().toString());
      if (m.matches()) {
        long id = Long.parseLong(m.group(1));
        if (id < before && id > bestId) {
          best = entry;
          bestId = id;
        }
      }
    }
    return best;
  }

  /** The largest event time of micro-batch {@code batchId} over all its partial partitions. */
  private static Long batchMaxTs(Path root, long batchId) throws IOException {
    Long best = null;
    for (Path entry : list(root.resolve("maxts").resolve("b" + batchId))) {
      String name = entry.getFileName().toString();
      if (name.startsWith("m") && name.endsWith(".json")) {
        long value =
            Long.parseLong(new String(Files.readAllBytes(entry), StandardCharsets.UTF_8).trim());
        best = best == null ? value : Math.max(best, value);
      }
    }
    return best;
  }

  private static Long readMaxTs(Path meta) throws IOException {
    String text = new String(Files.readAllBytes(meta), StandardCharsets.UTF_8);
    Matcher m = MAX_TS.matcher(text);
    if (!m.find()) {
      throw new IOException(meta + " holds no max_ts");
    }
    return "null".equals(m.group(1)) ? null : Long.valueOf(m.group(1));
  }

  private static List<Path> list(Path dir) throws IOException {
    List<Path> out = new ArrayList<>();
    if (Files.isDirectory(dir)) {
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
        entries.forEach(out::add);
      }
    }
    return out;
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path path : (Iterable<Path>) paths::iterator) {
        Path target = to.resolve(from.relativize(path).toString());
        if (Files.isDirectory(path)) {
          Files.createDirectories(target);
        } else {
          Files.copy(path, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }

  /**
   * Remove {@code dir} and all it holds; entries another task removes meanwhile (two
   * partitions prune the same old event times) are no error.
   */
  private static void deleteTree(Path dir) throws IOException {
    if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
        for (Path entry : entries) {
          deleteTree(entry);
        }
      } catch (NoSuchFileException e) {
        return;
      }
    }
    Files.deleteIfExists(dir);
  }
}
