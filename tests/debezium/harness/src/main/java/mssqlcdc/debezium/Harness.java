package mssqlcdc.debezium;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs Debezium's SQL Server connector in its embedded engine with default settings (only the
 * required ones) and prints each change event as one JSON line on stdout:
 * {"destination": topic, "key": key JSON or null, "value": value JSON or null}.
 *
 * <p>Arguments: host port user password database table stateDir maxEvents timeoutSeconds. The
 * offsets and the schema history live in stateDir, so a second run continues from the first.
 * It stops after maxEvents change events (records with a value on a table's topic: tombstones
 * and schema changes are printed but not counted; the records after the last counted one in
 * its batch are not marked processed, so their offsets are not stored) or after
 * timeoutSeconds, whichever comes first. Extra connector properties may be given as
 * HARNESS_EXTRA_PROPERTIES="key=value;key=value". It
 * exits 0; an engine that stops with an error exits 2 after printing the error on stderr.
 */
public final class Harness {
  private Harness() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 9) {
      System.err.println(
          "usage: Harness host port user password database table stateDir maxEvents timeoutSeconds");
      System.exit(64);
    }
    String stateDir = args[6];
    int maxEvents = Integer.parseInt(args[7]);
    long timeoutSeconds = Long.parseLong(args[8]);

    Properties props = new Properties();
    props.setProperty("name", "mssql-cdc-harness");
    props.setProperty("connector.class", "io.debezium.connector.sqlserver.SqlServerConnector");
    props.setProperty("database.hostname", args[0]);
    props.setProperty("database.port", args[1]);
    props.setProperty("database.user", args[2]);
    props.setProperty("database.password", args[3]);
    props.setProperty("database.names", args[4]);
    props.setProperty("topic.prefix", "emu");
    props.setProperty("table.include.list", args[5]);
    props.setProperty(
        "offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
    props.setProperty("offset.storage.file.filename", stateDir + "/offsets.dat");
    props.setProperty("offset.flush.interval.ms", "0");
    props.setProperty(
        "schema.history.internal", "io.debezium.storage.file.history.FileSchemaHistory");
    props.setProperty("schema.history.internal.file.filename", stateDir + "/schema-history.dat");
    props.setProperty("converter.schemas.enable", "false");
    String extra = System.getenv("HARNESS_EXTRA_PROPERTIES");
    if (extra != null) {
      for (String pair : extra.split(";")) {
        int eq = pair.indexOf('=');
        if (eq > 0) {
          props.setProperty(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
        }
      }
    }

    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    AtomicInteger seen = new AtomicInteger();
    CountDownLatch enough = new CountDownLatch(1);
    AtomicReference<Throwable> failure = new AtomicReference<>();

    DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> consumer =
        (List<ChangeEvent<String, String>> records,
            DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer) -> {
          for (ChangeEvent<String, String> record : records) {
            if (seen.get() >= maxEvents) {
              break;
            }
            out.println(
                "{\"destination\": "
                    + quote(record.destination())
                    + ", \"key\": "
                    + (record.key() == null ? "null" : record.key())
                    + ", \"value\": "
                    + (record.value() == null ? "null" : record.value())
                    + "}");
            committer.markProcessed(record);
            boolean counted =
                record.value() != null && !"emu".equals(record.destination());
            if (counted && seen.incrementAndGet() >= maxEvents) {
              enough.countDown();
            }
          }
          committer.markBatchFinished();
        };

    DebeziumEngine<ChangeEvent<String, String>> engine =
        DebeziumEngine.create(Json.class)
            .using(props)
            .notifying(consumer)
            .using(
                (boolean success, String message, Throwable error) -> {
                  if (!success) {
                    failure.set(error != null ? error : new RuntimeException(message));
                  }
                  enough.countDown();
                })
            .build();
    ExecutorService executor =
        Executors.newSingleThreadExecutor(
            runnable -> {
              Thread thread = new Thread(runnable, "harness-engine");
              thread.setDaemon(true);
              return thread;
            });
    executor.execute(engine);
    enough.await(timeoutSeconds, TimeUnit.SECONDS);
    try {
      engine.close();
    } catch (IllegalStateException alreadyStopped) {
      // The engine stopped on its own (an error, reported below).
    }
    executor.shutdown();
    executor.awaitTermination(30, TimeUnit.SECONDS);
    Throwable error = failure.get();
    if (error != null) {
      System.err.println("harness: the engine stopped with an error:");
      error.printStackTrace(System.err);
      System.exit(2);
    }
    System.exit(0);
  }

  private static String quote(String text) {
    if (text == null) {
      return "null";
    }
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
