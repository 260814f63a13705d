"""The emulator-backed implementations of the SQL Server seam's Protocols."""
