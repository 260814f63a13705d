"""Automatic recovery after CDC data loss: the pre-flight, its dry run, the Spark steps and
what the recovery observes of the source."""
