"""The library's Delta tables: references, shapes, definitions, writes, the Delta log read
without Spark jobs, commit lookup, write retries and migrations."""
