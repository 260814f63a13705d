"""The T-SQL backends: statement builders, drivers, queries, Arrow conversion and retries."""
