"""The Spark data sources `mssql_cdc` (streaming) and `mssql_cdc_snapshot` (batch): planning,
reading ranges, schema and type rules, and the data-loss guards."""
