"""The source options: raw option reading, the typed `SourceConfig`, connection strings,
declared columns and SQL Server identifiers."""
