"""The entry that composes the stages: `stream(spark, options) -> CdcStream` and the checked
arguments of `to_delta`."""
